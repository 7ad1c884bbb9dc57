"""Checks a serving request's tensors against the model's signature.inputs.

RSL hands every serving replica its workload's model signature as JSON in the environment
variable RSL_MODEL_SIGNATURE:
    {"inputs": [{"name": "user_features", "dtype": "float32", "shape": [1, 128]}, ...],
     "outputs": [{"name": "prediction", "dtype": "float32", "shape": [-1, 1], "range": [0, 1]}]}
This module is the same check as RSL's C++ one (src/model/request_check.h), word for word:
both run the table tests/model/request_cases.json. Standard library only (Debian's python3);
numpy arrays are accepted where numpy is installed.

A request carries its tensors as nested lists, either under "inputs"
({"inputs": {"user_features": [[...]]}}) or as the body's own members. Mismatches:
    user_features missing from the request (expected float32 [1, 128])
    user_features.shape expected [1, 128], got [1, 127]
    user_features.shape expected [1, 128], got ragged nested lists at index [0, 5]
    user_features.dtype expected float32, got string at index [0, 3]
    user_feature is not an input of the signature
Shapes: same rank, equal dims, -1 (or None) matches any size; an empty signature shape is not
checked. Dtypes by family: float* takes numbers, int*/uint* integers, bool true/false,
string strings. Values (ranges, NaN) are not checked. The code is INPUT_SCHEMA_MISMATCH.

In a server:
    import rsl_signature
    SIGNATURE = rsl_signature.from_env()          # None when RSL gave no signature
    ...
    status, answer = rsl_signature.check_body(SIGNATURE, raw_body_bytes)
    if status != 200: send `answer` (a dict, JSON) with that status (400)
    else: `answer` is the parsed body
"""
import json
import os

CODE = "INPUT_SCHEMA_MISMATCH"
ENV = "RSL_MODEL_SIGNATURE"

_FLOATS = {"float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"}
_INTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def from_env(environ=None):
    """The signature RSL gave this replica (a dict), or None when the workload declares none."""
    text = (environ if environ is not None else os.environ).get(ENV)
    return json.loads(text) if text else None


def _shape_str(shape):
    return "[" + ", ".join(str(-1 if d is None else d) for d in shape) + "]"


def _describe(spec):
    shape = spec.get("shape") or []
    return spec["dtype"] + (" " + _shape_str(shape) if shape else "")


def _is_array(v):
    return isinstance(v, (list, tuple))


def _is_numpy(v):
    return hasattr(v, "dtype") and hasattr(v, "shape") and hasattr(v, "tolist")


def _family(v):
    """How a value that is not a list reads in messages: its dtype family."""
    if _is_numpy(v):  # a numpy scalar or array
        kind = v.dtype.kind
        return {"b": "bool", "i": "int", "u": "int", "f": "float", "U": "string", "S": "string"}.get(
            kind, str(v.dtype))
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    if v is None:
        return "null"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _fits(dtype, family):
    if dtype in _FLOATS:
        return family in ("float", "int")
    if dtype in _INTS:
        return family == "int"
    if dtype == "bool":
        return family == "bool"
    if dtype == "string":
        return family == "string"
    return True  # a dtype RSL's validation does not know: not checked


def _first_shape(v):
    shape = []
    while _is_array(v):
        shape.append(len(v))
        if not v:
            break
        v = v[0]
    return shape


def _find_ragged(v, shape, depth, index):
    list_here = depth < len(shape)
    if _is_array(v) != list_here:
        return True
    if not list_here:
        return False
    if len(v) != shape[depth]:
        return True
    for i, child in enumerate(v):
        index.append(i)
        if _find_ragged(child, shape, depth + 1, index):
            return True
        index.pop()
    return False


def _find_bad_leaf(v, dtype, index):
    """(leaf,) for the first leaf (depth first, C order) whose family dtype does not take, or
    None; iterative, so any nesting depth is fine."""
    if not _is_array(v):
        return None if _fits(dtype, _family(v)) else (v,)
    stack = [[v, 0]]
    while stack:
        top = stack[-1]
        if top[1] == len(top[0]):
            stack.pop()
            if index:
                index.pop()
            continue
        child = top[0][top[1]]
        index.append(top[1])
        top[1] += 1
        if _is_array(child):
            stack.append([child, 0])
            continue
        if not _fits(dtype, _family(child)):
            return (child,)
        index.pop()
    return None


def _mismatch(spec, i, field, expected, actual, message):
    return {"code": CODE, "tensor": spec["name"], "field": field, "expected": expected,
            "actual": actual, "message": message, "hint": "send %s as %s" % (spec["name"], _describe(spec)),
            "path": "spec.model.signature.inputs[%d]" % i}


def _shape_ok(want, got):
    return len(want) == len(got) and all(w is None or w == -1 or w == g for w, g in zip(want, got))


def _check_numpy(spec, i, value, out):
    want = spec.get("shape") or []
    got_shape = list(value.shape)
    if want and not _shape_ok(want, got_shape):
        got = _shape_str(got_shape)
        out.append(_mismatch(spec, i, "shape", _shape_str(want), got,
                             "%s.shape expected %s, got %s" % (spec["name"], _shape_str(want), got)))
    if not _fits(spec["dtype"], _family(value)):
        got = str(value.dtype)
        out.append(_mismatch(spec, i, "dtype", spec["dtype"], got,
                             "%s.dtype expected %s, got %s" % (spec["name"], spec["dtype"], got)))


def _check_tensor(spec, i, value, out):
    if _is_numpy(value) and getattr(value, "ndim", 0) > 0:
        return _check_numpy(spec, i, value, out)
    name, dtype = spec["name"], spec["dtype"]
    want = spec.get("shape") or []
    if want:
        shape = _first_shape(value)
        at = []
        got = None
        if not _shape_ok(want, shape):
            got = _shape_str(shape)
        elif _find_ragged(value, shape, 0, at):
            got = "ragged nested lists at index " + _shape_str(at)
        if got is not None:
            out.append(_mismatch(spec, i, "shape", _shape_str(want), got,
                                 "%s.shape expected %s, got %s" % (name, _shape_str(want), got)))
    at = []
    bad = _find_bad_leaf(value, dtype, at)
    if bad is not None:
        got = _family(bad[0])
        if _is_array(value):
            got += " at index " + _shape_str(at)
        out.append(_mismatch(spec, i, "dtype", dtype, got,
                             "%s.dtype expected %s, got %s" % (name, dtype, got)))


def _edit_distance(a, b, limit):
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
        if min(cur) > limit:
            return limit + 1
        prev = cur
    return prev[len(b)]


def _closest(word, candidates):
    """RSL's did-you-mean (base/strings.h ClosestMatch): distance <= max(1, len/3)."""
    limit = max(1, len(word) // 3)
    best, best_d = "", limit + 1
    for c in candidates:
        d = _edit_distance(word.lower(), c.lower(), limit)
        if d < best_d:
            best, best_d = c, d
    return best


def check(signature, body):
    """Every mismatch of `body` (a parsed request) against signature["inputs"], as dicts
    {code, tensor, field, expected, actual, message, hint, path}: in the signature's order,
    then unknown names sorted. [] when the request fits."""
    inputs = signature.get("inputs", []) if signature else []
    names = [s["name"] for s in inputs]
    if not isinstance(body, dict):
        actual = "list" if _is_array(body) else _family(body)
        return [{"code": CODE, "tensor": "", "field": "body",
                 "expected": "a JSON object of input tensors", "actual": actual,
                 "message": "the request body expected a JSON object of input tensors, got " + actual,
                 "hint": "send {\"inputs\": {" + ", ".join('"%s": [...]' % n for n in names) + "}}",
                 "path": ""}]
    nested = isinstance(body.get("inputs"), dict) and "inputs" not in names
    tensors = body["inputs"] if nested else body
    out = []
    for i, spec in enumerate(inputs):
        if spec["name"] not in tensors:
            d = _describe(spec)
            out.append(_mismatch(spec, i, "name", d, "missing",
                                 "%s missing from the request (expected %s)" % (spec["name"], d)))
            continue
        _check_tensor(spec, i, tensors[spec["name"]], out)
    for name in sorted(k for k in tensors if k not in names):
        close = _closest(name, names)
        out.append({"code": CODE, "tensor": name, "field": "name", "expected": "a signature input",
                    "actual": "unknown", "message": name + " is not an input of the signature",
                    "hint": 'did you mean "%s"?' % close if close
                    else "the signature's inputs: " + ", ".join(names),
                    "path": ""})
    return out


def error_answer(mismatches):
    """The JSON a replica answers 400 with: {"error": first, "errors": all}."""
    return {"error": mismatches[0], "errors": mismatches}


def check_body(signature, raw):
    """(200, parsed body) when `raw` (bytes or str) is JSON whose tensors fit the signature,
    else (400, error answer). Without a signature every JSON body passes."""
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        first = {"code": CODE, "tensor": "", "field": "body", "expected": "JSON",
                 "actual": "not JSON", "message": "the request body is not JSON: %s" % e,
                 "hint": "send {\"inputs\": {<name>: <nested lists>}} with Content-Type: application/json",
                 "path": ""}
        return 400, error_answer([first])
    mismatches = check(signature, body) if signature else []
    if mismatches:
        return 400, error_answer(mismatches)
    return 200, body


def tensors_of(signature, body):
    """The request's tensors: body["inputs"] in the nested form, else the body itself."""
    names = [s["name"] for s in (signature or {}).get("inputs", [])]
    if isinstance(body.get("inputs"), dict) and "inputs" not in names:
        return body["inputs"]
    return body
