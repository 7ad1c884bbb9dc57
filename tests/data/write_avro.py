#!/usr/bin/python3
"""Writes an Avro object container file with Python's reference implementation (python3-avro),
as an independent writer for RSL's Avro reader tests.

usage: write_avro.py OUT CODEC ROWS
Rows i = 0..ROWS-1: tx_id "tx-<i>" (row 10 repeats tx-3), user_id i % 1000 (long),
amount i * 0.5 (null every 1000th row, from row 7), merchant enum m0..m4, ts (timestamp-micros)
1718445600000000 + i, is_fraud i % 97 == 0, tags [] or ["a", "b"].
"""
import datetime
import json
import sys

import avro.datafile
import avro.io
import avro.schema

SCHEMA = {
    "type": "record", "name": "transaction", "namespace": "rsl.test",
    "fields": [
        {"name": "tx_id", "type": "string"},
        {"name": "user_id", "type": "long"},
        {"name": "amount", "type": ["null", "double"]},
        {"name": "merchant", "type": {"type": "enum", "name": "merchant", "symbols": ["m0", "m1", "m2", "m3", "m4"]}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "is_fraud", "type": "boolean"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}

BASE = datetime.datetime(2024, 6, 15, 10, 0, 0, tzinfo=datetime.timezone.utc)


def main():
    out, codec, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    schema = avro.schema.parse(json.dumps(SCHEMA))
    with open(out, "wb") as f:
        writer = avro.datafile.DataFileWriter(f, avro.io.DatumWriter(), schema, codec=codec)
        for i in range(rows):
            writer.append({
                "tx_id": "tx-%d" % (3 if i == 10 else i),
                "user_id": i % 1000,
                "amount": None if i % 1000 == 7 else i * 0.5,
                "merchant": "m%d" % (i % 5),
                "ts": BASE + datetime.timedelta(microseconds=i),
                "is_fraud": i % 97 == 0,
                "tags": [] if i % 2 else ["a", "b"],
            })
            if i % 700 == 699:
                writer.sync()  # several blocks
        writer.close()


if __name__ == "__main__":
    main()
