#!/usr/bin/python3
"""Independent looks at what the fraud example writes, for the e2e tests (prints JSON).

  look.py avro DIR   every *.avro under DIR decoded by python3-avro (Apache's reference
                     implementation, Debian's python3-avro) and compared record by record
                     with the example's own reader; counts and ranges
  look.py npy FILE   dtype, shape, min, max, NaN count of a .npy file (numpy)
"""

import datetime
import json
import os
import sys

import avro.datafile
import avro.io
import numpy as np

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def to_micros(ts):
    return (ts - EPOCH) // datetime.timedelta(microseconds=1)


def avro_summary(root):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "examples", "fraud-detect"))
    import avro_ocf
    files = []
    for d, subdirs, names in os.walk(root):
        subdirs.sort()
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".avro")]
    rows = fraud = mismatches = 0
    tx_ids = set()
    users = set()
    ts_min = ts_max = None
    amount_min = None
    fields = None
    codecs = set()
    for path in files:
        with open(path, "rb") as f:
            reader = avro.datafile.DataFileReader(f, avro.io.DatumReader())
            codecs.add(reader.meta["avro.codec"].decode())
            schema = json.loads(reader.meta["avro.schema"])
            fields = [[x["name"], x["type"] if isinstance(x["type"], str) else x["type"]]
                      for x in schema["fields"]]
            ref = list(reader)
        _, ours = avro_ocf.read_ocf(path)
        for i, rec in enumerate(ref):
            rec = dict(rec, timestamp=to_micros(rec["timestamp"]))
            mine = {k: ours[k][i] for k in ours}
            if rec != mine:
                mismatches += 1
            rows += 1
            fraud += rec["is_fraud"]
            tx_ids.add(rec["tx_id"])
            users.add(rec["user_id"])
            ts = rec["timestamp"]
            ts_min = ts if ts_min is None else min(ts_min, ts)
            ts_max = ts if ts_max is None else max(ts_max, ts)
            if rec["amount"] is not None:
                amount_min = rec["amount"] if amount_min is None else min(amount_min,
                                                                          rec["amount"])
        if len(ref) != len(ours["tx_id"]):
            mismatches += abs(len(ref) - len(ours["tx_id"]))
    return {"files": len(files), "rows": rows, "fraud": fraud, "distinct_tx": len(tx_ids),
            "distinct_users": len(users), "ts_min": ts_min, "ts_max": ts_max,
            "amount_min": amount_min, "fields": fields, "codecs": sorted(codecs),
            "mismatches": mismatches}


def npy_summary(path):
    a = np.load(path)
    finite = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "min": float(finite.min()) if finite.size else None,
            "max": float(finite.max()) if finite.size else None,
            "nan": int(np.isnan(a).sum()) if a.dtype.kind == "f" else 0}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("avro", "npy"):
        sys.exit(__doc__)
    out = avro_summary(sys.argv[2]) if sys.argv[1] == "avro" else npy_summary(sys.argv[2])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
