"""A small Avro object container file (OCF) writer and reader for flat records.

Why our own: Debian's python3-avro encodes roughly 20,000 records per second, so the default
day of 1,000,000 transactions would take close to a minute to write and longer to read. This
module writes with numpy (every column encoded at once, then interleaved into records) and
reads with a tight per-record loop. It follows the Avro 1.11 specification
(https://avro.apache.org/docs/1.11.1/specification/#object-container-files):

  file   = magic "Obj\\x01", metadata map (avro.schema, avro.codec), 16-byte sync marker,
           then blocks;
  block  = record count (long), byte size (long), records (deflate: raw RFC 1951), sync;
  long   = zigzag varint; string = long length + UTF-8 bytes; double = 8 bytes little-endian;
  boolean = one byte.

Supported field types: string, bytes, long, int, double, float, boolean, and unions of "null"
with one of those. tests/e2e checks files written here against python3-avro.
"""

import json
import struct
import zlib

import numpy as np

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
# Records per block: big enough that block overhead is negligible, small enough that a
# reader holds little memory at once (about 3 MB of raw records for the fraud schema).
DEFAULT_BLOCK_RECORDS = 65536
# zlib level 6 is zlib's default: a good size/speed balance for deflate blocks.
DEFLATE_LEVEL = 6
MAX_VARINT_BYTES = 10


# ---------------------------------------------------------------------------------------------
# Encoding (vectorised)
# ---------------------------------------------------------------------------------------------

def _zigzag(values):
    v = np.asarray(values, dtype=np.int64)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def encode_varints(values):
    """Zigzag varints of an int64 array -> (lengths uint8[n], bytes uint8[sum(lengths)])."""
    z = _zigzag(values)
    n = z.shape[0]
    groups = np.empty((n, MAX_VARINT_BYTES), dtype=np.uint8)
    lengths = np.ones(n, dtype=np.int64)
    rest = z.copy()
    for k in range(MAX_VARINT_BYTES):
        groups[:, k] = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest = rest >> np.uint64(7)
        more = rest != 0
        lengths += more
        groups[:, k] |= (more.astype(np.uint8) << 7)
    mask = np.arange(MAX_VARINT_BYTES)[None, :] < lengths[:, None]
    return lengths, groups[mask]


def _encode_strings(vocab_bytes, codes):
    """Strings given as a vocabulary (list of bytes) and per-row codes into it."""
    vocab_len = np.array([len(b) for b in vocab_bytes], dtype=np.int64)
    vocab_flat = np.frombuffer(b"".join(vocab_bytes), dtype=np.uint8)
    vocab_off = np.concatenate(([0], np.cumsum(vocab_len)[:-1]))
    codes = np.asarray(codes, dtype=np.int64)
    str_len = vocab_len[codes]
    prefix_len, prefix = encode_varints(str_len)
    # Gather each row's string bytes: position j of row i is vocab_off[code_i] + j.
    starts = np.repeat(vocab_off[codes], str_len)
    within = np.arange(str_len.sum()) - np.repeat(np.cumsum(str_len) - str_len, str_len)
    body = vocab_flat[starts + within] if within.size else np.empty(0, np.uint8)
    return _concat_columns([(prefix_len, prefix), (str_len, body)])


def _concat_columns(columns):
    """Interleaves per-row encoded columns: row i = col0[i] col1[i] ... (all vectorised)."""
    n = columns[0][0].shape[0]
    lens = [np.asarray(l, dtype=np.int64) for l, _ in columns]
    row_len = np.zeros(n, dtype=np.int64)
    for l in lens:
        row_len += l
    row_start = np.concatenate(([0], np.cumsum(row_len)[:-1])) if n else np.zeros(0, np.int64)
    out = np.empty(int(row_len.sum()), dtype=np.uint8)
    offset_in_row = np.zeros(n, dtype=np.int64)
    for l, data in columns:
        if data.size:
            dest_start = np.repeat(row_start + offset_in_row, l)
            within = np.arange(data.size) - np.repeat(np.cumsum(l) - l, l)
            out[dest_start + within] = data
        offset_in_row += l
    return row_len, out


def _encode_column(avro_type, column):
    """One field of every row -> (lengths, bytes). `column` is described in write_ocf."""
    n = len(column) if not isinstance(column, tuple) else len(column[1])
    if avro_type in ("string", "bytes"):
        vocab, codes = column
        return _encode_strings([v if isinstance(v, bytes) else v.encode() for v in vocab],
                               codes)
    if avro_type in ("long", "int"):
        return encode_varints(column)
    if avro_type == "double":
        data = np.asarray(column, dtype="<f8").view(np.uint8)
        return np.full(n, 8, dtype=np.int64), data
    if avro_type == "float":
        data = np.asarray(column, dtype="<f4").view(np.uint8)
        return np.full(n, 4, dtype=np.int64), data
    if avro_type == "boolean":
        return np.ones(n, dtype=np.int64), np.asarray(column, dtype=bool).astype(np.uint8)
    raise ValueError("avro_ocf: unsupported field type %r" % (avro_type,))


def _field_type(field):
    t = field["type"]
    if isinstance(t, dict):
        t = t["type"]
    if isinstance(t, list):
        raise ValueError("avro_ocf writer: field %r: unions are not supported by the writer"
                         % field["name"])
    return t


def write_ocf(path, schema, columns, sync, block_records=DEFAULT_BLOCK_RECORDS,
              codec="deflate", metadata=None):
    """Writes a flat record schema's rows to `path`.

    columns: field name -> numpy array (long/int/double/float/boolean), or for string/bytes a
    pair (vocabulary list, int codes per row). `sync` is the 16-byte marker (pass a
    deterministic one for reproducible files). Returns the number of records written.
    """
    if len(sync) != SYNC_SIZE:
        raise ValueError("avro_ocf: sync marker must be 16 bytes")
    if codec not in ("null", "deflate"):
        raise ValueError("avro_ocf: codec must be null or deflate")
    fields = schema["fields"]
    first = columns[fields[0]["name"]]
    n = len(first[1]) if isinstance(first, tuple) else len(first)
    with open(path, "wb") as out:
        out.write(_header(schema, codec, sync, metadata or {}))
        for start in range(0, n, block_records):
            stop = min(n, start + block_records)
            encoded = []
            for field in fields:
                col = columns[field["name"]]
                if isinstance(col, tuple):
                    col = (col[0], col[1][start:stop])
                else:
                    col = col[start:stop]
                encoded.append(_encode_column(_field_type(field), col))
            _, raw = _concat_columns(encoded)
            payload = raw.tobytes()
            if codec == "deflate":
                c = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, -15)
                payload = c.compress(payload) + c.flush()
            out.write(_long_bytes(stop - start))
            out.write(_long_bytes(len(payload)))
            out.write(payload)
            out.write(sync)
    return n


def _long_bytes(value):
    _, data = encode_varints(np.array([value], dtype=np.int64))
    return data.tobytes()


def _string_bytes(text):
    data = text if isinstance(text, bytes) else text.encode()
    return _long_bytes(len(data)) + data


def _header(schema, codec, sync, metadata):
    meta = {"avro.schema": json.dumps(schema, separators=(",", ":")).encode(),
            "avro.codec": codec.encode()}
    for k, v in metadata.items():
        meta[k] = v if isinstance(v, bytes) else str(v).encode()
    parts = [MAGIC, _long_bytes(len(meta))]
    for k in sorted(meta):
        parts.append(_string_bytes(k))
        parts.append(_string_bytes(meta[k]))
    parts.append(_long_bytes(0))
    parts.append(sync)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------

class AvroError(Exception):
    """A malformed or unsupported file; the message names the file and byte offset."""


def _read_long(buf, pos):
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    result = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")
    return (result >> 1) ^ -(result & 1), pos


def read_header(data, path="<bytes>"):
    """-> (schema dict, codec, sync, offset of the first block)."""
    if data[:4] != MAGIC:
        raise AvroError("%s: offset 0: not an Avro object container file (bad magic)" % path)
    pos = 4
    meta = {}
    try:
        while True:
            count, pos = _read_long(data, pos)
            if count == 0:
                break
            if count < 0:
                _, pos = _read_long(data, pos)
                count = -count
            for _ in range(count):
                klen, pos = _read_long(data, pos)
                key = bytes(data[pos:pos + klen]).decode()
                pos += klen
                vlen, pos = _read_long(data, pos)
                meta[key] = bytes(data[pos:pos + vlen])
                pos += vlen
    except (IndexError, UnicodeDecodeError) as e:
        raise AvroError("%s: offset %d: truncated or corrupt header (%s)" % (path, pos, e))
    if "avro.schema" not in meta:
        raise AvroError("%s: header has no avro.schema" % path)
    schema = json.loads(meta["avro.schema"])
    codec = meta.get("avro.codec", b"null").decode()
    sync = bytes(data[pos:pos + SYNC_SIZE])
    if len(sync) != SYNC_SIZE:
        raise AvroError("%s: offset %d: truncated sync marker" % (path, pos))
    return schema, codec, sync, pos + SYNC_SIZE


_PRIMITIVES = ("string", "bytes", "long", "int", "double", "float", "boolean", "null")


def _field_kind(field, path):
    t = field["type"]
    if isinstance(t, dict):
        t = t.get("type")
    nullable_branch = None
    if isinstance(t, list):
        branches = [b["type"] if isinstance(b, dict) else b for b in t]
        if len(branches) != 2 or "null" not in branches:
            raise AvroError("%s: field %s: only unions of null and one type are supported"
                            % (path, field["name"]))
        nullable_branch = branches.index("null")
        t = branches[1 - nullable_branch]
    if t not in _PRIMITIVES:
        raise AvroError("%s: field %s: unsupported type %r" % (path, field["name"], t))
    return t, nullable_branch


def read_ocf(path, wanted=None):
    """Reads a flat-record OCF file. Returns (schema, {field: list of values}).

    `wanted`: field names to keep (others are decoded and dropped). Strings come back as str,
    bytes as bytes, null as None. Raises AvroError with the file and offset on corrupt input.
    """
    with open(path, "rb") as f:
        data = f.read()
    schema, codec, sync, pos = read_header(data, path)
    if schema.get("type") != "record":
        raise AvroError("%s: top-level schema must be a record" % path)
    fields = schema["fields"]
    kinds = [_field_kind(f, path) for f in fields]
    names = [f["name"] for f in fields]
    keep = [wanted is None or n in wanted for n in names]
    out = {n: [] for n, k in zip(names, keep) if k}
    unpack_d = struct.Struct("<d").unpack_from
    unpack_f = struct.Struct("<f").unpack_from
    appenders = [out[n].append if k else None for n, k in zip(names, keep)]
    plan = list(zip(kinds, appenders))
    while pos < len(data):
        block_start = pos
        try:
            count, pos = _read_long(data, pos)
            size, pos = _read_long(data, pos)
        except IndexError:
            raise AvroError("%s: offset %d: truncated block header" % (path, block_start))
        if count < 0 or size < 0 or pos + size + SYNC_SIZE > len(data):
            raise AvroError("%s: offset %d: truncated block (%d bytes declared)"
                            % (path, block_start, size))
        payload = data[pos:pos + size]
        pos += size
        if data[pos:pos + SYNC_SIZE] != sync:
            raise AvroError("%s: offset %d: sync marker mismatch" % (path, pos))
        pos += SYNC_SIZE
        if codec == "deflate":
            try:
                payload = zlib.decompress(payload, -15)
            except zlib.error as e:
                raise AvroError("%s: offset %d: corrupt deflate block (%s)"
                                % (path, block_start, e))
        elif codec != "null":
            raise AvroError("%s: codec %r is not supported by this reader" % (path, codec))
        try:
            _decode_records(payload, count, plan, unpack_d, unpack_f)
        except (IndexError, struct.error, UnicodeDecodeError) as e:
            raise AvroError("%s: offset %d: corrupt records in block (%s)"
                            % (path, block_start, e))
    return schema, out


def _decode_records(buf, count, plan, unpack_d, unpack_f):
    p = 0
    for _ in range(count):
        for (kind, nullable), append in plan:
            if nullable is not None:
                branch = buf[p] >> 1  # branch index 0/1 as a one-byte zigzag long
                p += 1
                if branch == nullable:
                    if append:
                        append(None)
                    continue
            if kind == "string" or kind == "bytes":
                n = buf[p]
                if n < 0x80:
                    p += 1
                    n >>= 1
                else:
                    n, p = _read_long(buf, p)
                if p + n > len(buf):
                    raise IndexError("string past end of block")
                if append:
                    v = buf[p:p + n]
                    append(v.decode() if kind == "string" else v)
                p += n
            elif kind == "long" or kind == "int":
                v, p = _read_long(buf, p)
                if append:
                    append(v)
            elif kind == "double":
                if append:
                    append(unpack_d(buf, p)[0])
                p += 8
            elif kind == "float":
                if append:
                    append(unpack_f(buf, p)[0])
                p += 4
            elif kind == "boolean":
                if append:
                    append(buf[p] != 0)
                p += 1
            # "null" takes no bytes
