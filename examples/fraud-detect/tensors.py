"""A .safetensors writer and reader (https://github.com/huggingface/safetensors, format):

  8 bytes   little-endian u64 N, the header size
  N bytes   JSON: {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
                   "__metadata__": {str: str}}, padded with spaces to a multiple of 8
  rest      the tensors' bytes, little-endian, C order, offsets relative to this point

Written deterministically (sorted names, sorted JSON keys, no timestamps) so that the same
weights always give the same bytes and so the same fingerprint.
"""

import json
import struct

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
          "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}
NAME_OF = {np.dtype(v).str: k for k, v in DTYPES.items()}
ALIGN = 8


def save(path, tensors, metadata=None):
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name])
        dt = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
        key = NAME_OF.get(np.dtype(dt).str)
        if key is None:
            raise ValueError("safetensors: unsupported dtype %s for %s" % (arr.dtype, name))
        data = arr.astype(DTYPES[key], copy=False).tobytes()
        header[name] = {"dtype": key, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % ALIGN)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack_from("<Q", data, 0)
    if 8 + n > len(data):
        raise ValueError("%s: header size %d past the end of the file" % (path, n))
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(data) - base:
            raise ValueError("%s: tensor %s: offsets out of bounds" % (path, name))
        arr = np.frombuffer(data[base + begin:base + end], dtype=DTYPES[info["dtype"]])
        out[name] = arr.reshape(info["shape"])
    return out
