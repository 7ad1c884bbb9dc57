#!/usr/bin/env python3
"""File-local names that a unity build (CMAKE_UNITY_BUILD, `make package`) would mix.

A unity build compiles several .cc files of one target as one translation unit, so what each
file keeps to itself meets its neighbours' and:
  * the same name defined twice is a redefinition error (the easy case: the build fails);
  * two functions of the same name with different parameters become overloads of each other,
    and a call may silently pick the other file's one;
  * a file-local name hides, or makes ambiguous, a name of the same spelling that a
    neighbour's code means from an enclosing namespace (a `Status()` function hides the
    `rsl::Status` class);
  * a `using namespace` or a `#define` leaks into every file after it.
This lists the names defined with internal linkage (in an anonymous namespace, `static` at
namespace scope, or a namespace-scope `const`/`constexpr` variable) in more than one .cc file
of one library (a folder of src/; backend's shim_*.cc are rsl-shim's), in one namespace:
merge them into a header of the layer when they mean the same, else give them names of their
own. Two identical type aliases are a legal redeclaration and pass. It reads the sources
(comments, strings and preprocessor lines stripped), it does not compile them: a heuristic
that knows C++ declarations at namespace scope, not macros that make them. Exit status 1 when
a library (or, with --build, any target) has such a name.

  python3 scripts/check_unity_names.py             the libraries' names (CI's checks)
  python3 scripts/check_unity_names.py --all       also tests' names by folder (a folder may
                                                   hold several test targets), the names that
                                                   meet a header's, using-directives, macros
  python3 scripts/check_unity_names.py --build DIR every target of a configured unity build
                                                   tree (CMAKE_UNITY_BUILD=ON), tests too
"""
import collections
import glob
import os
import re
import sys
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")
IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {
    "const", "constexpr", "static", "inline", "int", "bool", "void", "char", "auto", "double",
    "float", "long", "short", "unsigned", "signed", "size_t", "struct", "class", "enum",
    "union", "typename", "template", "operator", "return", "if", "while", "for", "switch",
    "sizeof", "decltype", "noexcept", "override", "final", "volatile", "thread_local",
    "extern", "mutable", "explicit", "virtual", "friend", "typedef", "using", "namespace",
    "std", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int8_t", "int16_t", "int32_t",
    "int64_t", "consteval", "constinit", "requires",
}


def literal(text):
    """A string or character literal as a token that keeps it apart from other literals but
    holds no quote, brace or newline of its own."""
    return '"%08x"' % (zlib.crc32(text.encode()) & 0xFFFFFFFF)


def strip(text):
    """Comments, string and character literals (raw strings too) and preprocessor lines out;
    newlines kept so that positions stay on their lines. Returns (code, defines)."""
    out = []
    defines = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            line = text[i:j]
            m = re.match(r"#\s*define\s+(\w+)", line)
            if m:
                defines.append((m.group(1), text.count("\n", 0, i) + 1,
                                re.sub(r"\s+", " ", line.replace("\\\n", " "))))
            out.append("\n" * line.count("\n"))
            i = j
            continue
        at_line_start = False
        if c == "\n":
            at_line_start = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i + 2)
            delim = ")" + text[i + 2:k] + '"'
            j = text.find(delim, k)
            j = n if j < 0 else j + len(delim)
            out.append(literal(text[i:j]) + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(literal(text[i:j + 1]))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out), defines


def line_of(code, start):
    """The line of the first character of a declaration that starts at or after `start`."""
    k = start
    while k < len(code) and code[k].isspace():
        k += 1
    return code.count("\n", 0, k) + 1


def split_top(code):
    """Yields (scope, header, body, line) for each declaration at namespace scope. scope is the
    namespace path as a tuple, "" for an anonymous namespace; header is the text before the
    declaration's body (or the whole declaration when it has none); body is the text of a
    function's braces."""
    stack = []  # namespace path; None entries for extern "C" blocks
    i, n = 0, len(code)
    start = 0
    skipped = []  # (from, to) of the braces of a type or an initializer in this statement
    while i < n:
        c = code[i]
        if c == ";":
            stmt, at = "", start
            for a, b in skipped:
                stmt += code[at:a] + "{}"
                at = b
            stmt = (stmt + code[at:i]).strip()
            skipped = []
            if stmt:
                yield tuple(s for s in stack if s is not None), stmt, None, line_of(code, start)
            start = i + 1
        elif c == "}":
            if stack:
                stack.pop()
            start = i + 1
            skipped = []
        elif c == "{":
            header = code[start:i].strip()
            m = re.match(r"^(inline\s+)?namespace\s*([\w:]*)\s*$", header)
            if m:
                stack.extend(m.group(2).split("::") if m.group(2) else [""])
                # `namespace a::b {` closes with one brace: keep the path as one entry.
                if m.group(2) and "::" in m.group(2):
                    parts = m.group(2).split("::")
                    del stack[-len(parts):]
                    stack.append(m.group(2))
                i += 1
                start = i
                continue
            if re.match(r'^extern\s*""\s*$', header):
                stack.append(None)
                i += 1
                start = i
                continue
            # Skip to the matching brace.
            depth, j = 0, i
            while j < n:
                if code[j] == "{":
                    depth += 1
                elif code[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if header.count("(") > header.count(")"):
                i = j + 1  # braces inside parentheses: a default argument `= {}`
                continue
            body = code[i + 1:j]
            line = line_of(code, start)
            if is_function_header(header) and not skipped:
                yield tuple(s for s in stack if s is not None), header, body, line
                i = j + 1
                start = i
                continue
            # A type or a braced initializer: the declaration ends at the next `;`.
            skipped.append((i, j + 1))
            i = j + 1
            continue
        i += 1


def depth0(text, chars):
    """Positions of chars at parenthesis, bracket and angle depth 0 (a rough angle count)."""
    depth, angle, out = 0, 0, []
    for k, ch in enumerate(text):
        if ch in "([":
            if depth == 0 and angle == 0 and ch in chars:
                out.append(k)
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "<" and depth == 0 and not text[:k].rstrip().endswith("operator"):
            angle += 1
        elif ch == ">" and depth == 0 and angle > 0:
            angle -= 1
        elif depth == 0 and angle == 0 and ch in chars:
            out.append(k)
    return out


def drop_template(header):
    header = header.strip()
    while header.startswith("template"):
        k = header.find("<")
        depth = 0
        for j in range(k, len(header)):
            if header[j] == "<":
                depth += 1
            elif header[j] == ">":
                depth -= 1
                if depth == 0:
                    header = header[j + 1:].strip()
                    break
        else:
            break
    return header


def is_function_header(header):
    h = drop_template(header)
    if re.match(r"^(struct|class|union|enum)\b", h) or "=" in [h[k] for k in depth0(h, "=")]:
        return False
    return bool(depth0(h, "("))


def name_of(header, body):
    """(kind, name, params) of one namespace-scope declaration, or None."""
    h = drop_template(header)
    h = re.sub(r"\[\[[^\]]*\]\]", " ", h).strip()
    if re.match(r"^(using\s+namespace|namespace\s+\w+\s*=|static_assert|extern\s)", h):
        return None
    m = re.match(r"^using\s+(\w+)\s*=", h)
    if m:
        return "alias", m.group(1), None
    if re.match(r"^using\s", h):
        return None
    m = re.match(r"^typedef\b.*?(\w+)\s*(\[[^\]]*\])?$", h, re.S)
    if m:
        return "alias", m.group(1), None
    m = re.match(r"^(?:struct|class|union|enum(?:\s+class|\s+struct)?)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+)", h)
    if m and not depth0(h, "("):
        return "type", m.group(1), None
    eq = depth0(h, "={")
    paren = depth0(h, "(")
    if body is not None or (paren and (not eq or paren[0] < eq[0])):
        k = paren[0]
        before = h[:k].rstrip()
        m = re.search(r"(operator\s*\S+|~?\w+)$", before)
        if not m:
            return None
        name = m.group(1)
        if name in KEYWORDS:
            return None
        # A variable initialised by a constructor call (`const Foo kBar(1);`) looks the
        # same; that is still a file-local name.
        params = re.sub(r"\s+", " ", h[k:]).strip()
        return "function", name, params
    end = eq[0] if eq else len(h)
    m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", h[:end])
    if not m or m.group(1) in KEYWORDS:
        return None
    return "variable", m.group(1), None


def internal(scope, header, kind):
    """Whether a declaration has internal linkage (or, for types, is file-local)."""
    if "" in scope:
        return True
    h = drop_template(header)
    if re.match(r"^(static)\b", h):
        return True
    if kind == "variable" and re.match(r"^(const|constexpr)\b", h) and not re.search(r"\b(inline|extern)\b", h):
        return True
    return False


def named(scope):
    """The namespace path without anonymous namespaces, one component each."""
    return tuple(p for s in scope for p in s.split("::") if p)


def scan(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    code, defines = strip(text)
    decls = []
    usings = []
    for scope, header, body, line in split_top(code):
        if re.match(r"^using\s+namespace\b", header):
            usings.append((line, re.sub(r"\s+", " ", header)))
            continue
        if re.match(r"^[A-Z][A-Z0-9_]*\s*\(", header):
            continue  # a macro's use: TEST(...), TEST_F(...), INSTANTIATE_TEST_SUITE_P(...)
        got = name_of(header, body)
        if not got:
            continue
        kind, name, params = got
        decls.append(dict(scope=scope, kind=kind, name=name, params=params, line=line,
                          internal=internal(scope, header, kind),
                          text=re.sub(r"\s+", "", header + (body or ""))))
    return decls, usings, defines


def param_types(params):
    """`(const std::string& path, int n = 0)` as its types alone: `const std::string&,int`."""
    inner = params[1:params.rfind(")")] if params.startswith("(") else params
    out, depth, cur = [], 0, ""
    for ch in inner + ",":
        if ch == "," and depth == 0:
            p = cur.split("=")[0].strip()
            m = re.match(r"^(.*?[\w>&*\]])\s+\w+$", p)
            out.append(re.sub(r"\s+", " ", m.group(1) if m else p))
            cur = ""
            continue
        depth += ch in "(<[{"
        depth -= ch in ")>]}"
        cur += ch
    return ",".join(out)


def is_test(rel):
    """Tests, fuzzers, benchmarks: anything outside the libraries the packages ship."""
    return (rel.endswith("_test.cc") or "/fuzz_" in rel or
            not rel.startswith("src/") or rel.startswith("src/tools/"))


def groups_by_folder(files):
    """Without a build tree: a folder's library sources are one group (a layer's library;
    backend's shim_*.cc are rsl-shim's), its tests another (several test targets share a
    folder, so that group is wider than any one target)."""
    groups = collections.defaultdict(list)
    for rel in files:
        d = os.path.dirname(rel)
        base = os.path.basename(rel)
        if base.endswith("_main.cc"):
            continue
        if is_test(rel):
            groups[(f"{d} (tests)", True)].append(rel)
        elif d == "src/backend" and base.startswith("shim_"):
            groups[("src/backend (rsl_shim)", False)].append(rel)
        else:
            groups[(d, False)].append(rel)
    return groups


def groups_by_target(build, files):
    """With a unity build tree: the .cc files each target compiles."""
    groups = collections.defaultdict(list)
    wanted = set(files)
    for unity in sorted(glob.glob(os.path.join(build, "**", "Unity", "unity_*_cxx.cxx"),
                                  recursive=True)):
        target = re.search(r"CMakeFiles/([^/]+)\.dir/", unity).group(1)
        with open(unity, encoding="utf-8") as f:
            for m in re.finditer(r'#include "([^"]+)"', f.read()):
                path = os.path.realpath(m.group(1))
                rel = os.path.relpath(path, os.path.realpath(ROOT))
                if rel in wanted:
                    groups[(target, False)].append(rel)
    return groups


def main():
    args = sys.argv[1:]
    show_all = "--all" in args
    build = args[args.index("--build") + 1] if "--build" in args else None
    header_names = collections.defaultdict(set)  # name -> {(header, namespace)}
    scans = {}  # .cc path under src/ -> scan
    for top in ("src", "tests", "bench", "fuzz", "examples"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "node_modules"]
            for fn in sorted(filenames):
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, ROOT)
                if fn.endswith(".h") and top == "src":
                    decls, _, _ = scan(path)
                    for d in decls:
                        if "" not in d["scope"] and not d["internal"]:
                            header_names[d["name"]].add((rel[4:], named(d["scope"])))
                elif fn.endswith(".cc"):
                    scans[rel] = scan(path)
    groups = groups_by_target(build, scans) if build else groups_by_folder(scans)

    failed = False
    for (group, tests) in sorted(groups):
        by_name = collections.defaultdict(list)
        for rel in sorted(set(groups[(group, tests)])):
            seen = set()
            for x in scans[rel][0]:
                key = (named(x["scope"]), x["name"])
                if x["internal"] and (key, x["params"]) not in seen:
                    seen.add((key, x["params"]))
                    by_name[key].append((rel, x))
        lines = []
        for (scope, name), entries in sorted(by_name.items(), key=lambda kv: kv[0][1]):
            if len({r for r, _ in entries}) < 2:
                continue
            same_text = len({x["text"] for _, x in entries}) == 1
            kinds = {x["kind"] for _, x in entries}
            if kinds == {"alias"} and same_text:
                continue  # `using json = nlohmann::json;` twice: a legal redeclaration
            if kinds == {"function"}:
                params = {param_types(x["params"]) for _, x in entries}
                what = ("same definition" if same_text else
                        "same parameters, different bodies" if len(params) == 1 else "OVERLOADS")
            else:
                what = "same definition" if same_text else "different definitions"
            lines.append(f"  {'::'.join(scope)}::{name} ({what})")
            for rel, x in entries:
                lines.append(f"    {rel}:{x['line']} {x['kind']} {x['params'] or ''}".rstrip())
        if lines and tests and not show_all:
            continue
        if lines:
            note = " (not failing: tests, grouped by folder; --build DIR groups them by target)" \
                if tests else ""
            print(f"{group}: file-local names in more than one file{note}")
            print("\n".join(lines))
            failed |= not tests
    # A file-local function or variable named as a header's name that its namespace sees (a
    # `Status()` beside rsl::Status, a `Quote()` beside rsl::Quote) hides that name from the
    # files after it in a batch, or makes their calls ambiguous. Aliases of one type pass.
    hiding = []
    for rel, (decls, _, _) in sorted(scans.items()):
        for x in decls:
            scope = named(x["scope"])
            hs = sorted(h for h, hscope in header_names.get(x["name"], ())
                        if scope[:len(hscope)] == hscope)
            if x["internal"] and hs:
                library = not is_test(rel)
                hiding.append((library and x["kind"] != "alias",
                               f"  {rel}:{x['line']} {x['name']}: {', '.join(hs)}"))
    if any(fails for fails, _ in hiding):
        print("file-local names of a library that a header of src/ declares too (in their "
              "namespace or an enclosing one):")
        print("\n".join(line for fails, line in hiding if fails))
        failed = True
    if show_all:
        print("\nfile-local names that hide or meet a name of a header (in their namespace or an "
              "enclosing one), tests and aliases included:")
        print("\n".join(line for _, line in hiding))
        print("\nusing-directives in .cc files (they reach the files after them in a batch):")
        for rel, (_, usings, _) in sorted(scans.items()):
            for line, u in usings:
                print(f"  {rel}:{line} {u}")
        print("\nmacros defined in .cc files:")
        for rel, (_, _, defines) in sorted(scans.items()):
            for name, line, text in defines:
                print(f"  {rel}:{line} {text}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
