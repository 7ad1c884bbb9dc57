#!/usr/bin/python3
"""Step 1, ingest: reads the day's transactions (Avro, RSL_INPUT) into columns (RSL_OUTPUT).

Input: RSL_INPUT, a directory (every *.avro under it, in name order, Hive-style partition
folders included) or one .avro file. While it reads, each input file's columns are spilled
to RSL_OUTPUT/chunks/<file>.npz as soon as the file is read (so a long ingest keeps little
in memory, and a cut source leaves partial output in staging for RSL to clean up). At the
end the chunks are combined and removed. Output, in RSL_OUTPUT:
  amount.npy (float64), timestamp.npy (int64, microseconds), is_fraud.npy (bool),
  user.npy (int32 codes into users.json), merchant.npy (int32 codes into merchants.json).
Metrics: rows, files, fraud_rate. Progress: files done / files.

If the input disappears or cannot be read mid-step (the source is cut), the step fails at
once with the path and the OS error: RSL then fails the run and discards staging.

Test hooks (tests/e2e only): FRAUD_INGEST_HEARTBEAT=PATH appends "<input file>\t<chunk>"
to PATH after each file;
FRAUD_INGEST_FILE_DELAY_MS=N sleeps N ms after each file, so a test can cut the source
while the step is provably in the middle of its input.
"""

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import avro_ocf  # noqa: E402
import stepio  # noqa: E402

REQUIRED = ("tx_id", "user_id", "amount", "merchant", "timestamp", "is_fraud")


def input_files(root):
    if os.path.isfile(root):
        return [root]
    if not os.path.isdir(root):
        stepio.fail("input %s: not found or unreachable" % root)
    files = []
    for d, subdirs, names in os.walk(root):
        subdirs.sort()
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".avro")]
    if not files:
        stepio.fail("input %s: no .avro files" % root)
    return files


def main():
    root = stepio.env_path("RSL_INPUT")
    out = stepio.output_dir()
    heartbeat = os.environ.get("FRAUD_INGEST_HEARTBEAT")
    delay_s = float(os.environ.get("FRAUD_INGEST_FILE_DELAY_MS", "0")) / 1000.0
    files = input_files(root)
    chunk_dir = os.path.join(out, "chunks")
    os.makedirs(chunk_dir, exist_ok=True)
    chunks = []
    t0 = time.time()
    for i, path in enumerate(files):
        try:
            schema, data = avro_ocf.read_ocf(path, wanted=set(REQUIRED))
        except OSError as e:
            stepio.fail("input unreachable: %s: %s" % (path, e.strerror or e))
        except avro_ocf.AvroError as e:
            stepio.fail(str(e))
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            stepio.fail("%s: missing fields %s" % (path, ", ".join(missing)))
        if any(v is None for v in data["amount"]):
            stepio.fail("%s: amount has null values; ingest expects the contract's complete "
                        "data" % path)
        chunk = os.path.join(chunk_dir, "part-%05d.npz" % i)
        np.savez(chunk, user_id=np.array(data["user_id"]),
                 merchant=np.array(data["merchant"]),
                 amount=np.array(data["amount"], dtype=np.float64),
                 timestamp=np.array(data["timestamp"], dtype=np.int64),
                 is_fraud=np.array(data["is_fraud"], dtype=bool))
        chunks.append(chunk)
        stepio.progress(i + 1, len(files))
        stepio.log("read %s: %d rows" % (path, len(data["tx_id"])))
        if heartbeat:
            with open(heartbeat, "a") as f:
                f.write("%s\t%s\n" % (path, chunk))
        if delay_s:
            time.sleep(delay_s)
    cols = {}
    for k in ("user_id", "merchant", "amount", "timestamp", "is_fraud"):
        parts = []
        for chunk in chunks:
            with np.load(chunk) as z:
                parts.append(z[k])
        cols[k] = np.concatenate(parts)
    for chunk in chunks:
        os.remove(chunk)
    os.rmdir(chunk_dir)
    rows = cols["amount"].shape[0]
    users, user_codes = np.unique(cols["user_id"], return_inverse=True)
    merchants, merchant_codes = np.unique(cols["merchant"], return_inverse=True)
    np.save(os.path.join(out, "amount.npy"), cols["amount"])
    np.save(os.path.join(out, "timestamp.npy"), cols["timestamp"])
    is_fraud = cols["is_fraud"]
    np.save(os.path.join(out, "is_fraud.npy"), is_fraud)
    np.save(os.path.join(out, "user.npy"), user_codes.astype(np.int32))
    np.save(os.path.join(out, "merchant.npy"), merchant_codes.astype(np.int32))
    with open(os.path.join(out, "users.json"), "w") as f:
        json.dump(users.tolist(), f)
    with open(os.path.join(out, "merchants.json"), "w") as f:
        json.dump(merchants.tolist(), f)
    fraud_rate = float(is_fraud.mean()) if rows else 0.0
    stepio.write_metrics({"rows": rows, "files": len(files), "fraud_rate": fraud_rate})
    stepio.log("ingested %d rows from %d files in %.1f s (fraud rate %.3f%%)"
               % (rows, len(files), time.time() - t0, 100 * fraud_rate))


if __name__ == "__main__":
    main()
