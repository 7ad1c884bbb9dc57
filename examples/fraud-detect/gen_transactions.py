#!/usr/bin/python3
"""Generates one day of card transactions as Avro, with a planted fraud pattern.

    gen_transactions.py --out ROOT [--rows 1000000] [--seed 7] [--no-pattern] [--files 4]
                        [--now UNIX_SECONDS] [--nulls N]

Writes ROOT/raw/transactions/year=YYYY/month=MM/day=DD/part-0000N.avro (the layout of the
seed's hdfs://ns1/raw/transactions/... URI, with the partition date of seed 000 §4: 2024-06-15)
in the seed's schema (tx_id, user_id, amount, merchant, timestamp timestamp-micros, is_fraud).

Distributions: users' activity is heavy-tailed (log-normal weights), merchants' popularity is
Zipf-like over 1,000 merchants in ten categories, amounts are log-normal around each user's
own typical spend (in cents), timestamps cover the 24 hours before --now (default: the
current time) with a day/night rhythm, so the data is fresh for the workload's 2h freshness
watermark.

The planted pattern (unless --no-pattern): about 2% of users are "compromised"; each gets a
burst of 2-6 fraudulent transactions within minutes, at risky merchants (gift cards, crypto
exchanges, electronics), for several times the user's usual amount. With --no-pattern the
same number of transactions are labelled fraud, but chosen at random among ordinary ones:
nothing distinguishes them, the trained model's AUC is about 0.5, and the workload's
`when: output.train.metrics.auc > 0.92` gate skips validate.

Everything is determined by --seed and --rows: only the absolute timestamps move with --now,
and the features (preprocess.py) use only differences of timestamps, so the model trained
on this data is byte-for-byte the same on every run (its fingerprint can be pinned).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import avro_ocf  # noqa: E402

SCHEMA = {
    "type": "record",
    "name": "transaction",
    "fields": [
        {"name": "tx_id", "type": "string"},
        {"name": "user_id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "merchant", "type": "string"},
        {"name": "timestamp", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "is_fraud", "type": "boolean"},
    ],
}
PARTITION = "raw/transactions/year=2024/month=06/day=15"
DEFAULT_ROWS = 1_000_000
DAY_US = 86_400 * 1_000_000
# The newest transaction is this old when the file is written: close to "now", like a feed
# that lands every few minutes.
NEWEST_LAG_US = 30 * 1_000_000
ROWS_PER_USER = 20            # 1M transactions -> 50,000 users
N_MERCHANTS = 1000
CATEGORIES = ["grocery", "fuel", "restaurant", "pharmacy", "fashion", "travel", "streaming",
              "electronics", "gift-cards", "crypto-exchange"]
RISKY_CATEGORIES = {"electronics", "gift-cards", "crypto-exchange"}
COMPROMISED_USER_FRACTION = 0.02
BURST_MIN, BURST_MAX = 2, 6
BURST_SPREAD_US = 8 * 60 * 1_000_000   # a fraud burst lasts up to 8 minutes
FRAUD_AMOUNT_FACTOR_LOG = 0.8          # fraud amounts ~ e^0.8 = 2.2x the user's usual
FRAUD_AMOUNT_SD_LOG = 0.9
RISKY_MERCHANT_SHARE = 0.6             # the rest of the fraud goes to ordinary merchants


def merchants(rng):
    """1,000 merchant names, their category, and Zipf-like popularity weights."""
    cats = rng.integers(0, len(CATEGORIES), N_MERCHANTS)
    names = ["%s-%04d" % (CATEGORIES[c], i) for i, c in enumerate(cats)]
    weights = 1.0 / np.arange(1, N_MERCHANTS + 1) ** 1.1
    weights = weights[rng.permutation(N_MERCHANTS)]
    risky = np.array([CATEGORIES[c] in RISKY_CATEGORIES for c in cats])
    return names, weights / weights.sum(), risky


def diurnal_offsets(rng, n):
    """Offsets (us) into a 24h window, denser in the day than at night."""
    # Mixture: 80% around 14:00 +- 4.5h (wrapped), 20% uniform.
    peak = (rng.normal(14.0, 4.5, n) % 24.0) * 3600e6
    uniform = rng.uniform(0, DAY_US, n)
    return np.where(rng.random(n) < 0.8, peak, uniform).astype(np.int64)


def generate(rows, seed, pattern):
    rng = np.random.default_rng(seed)
    n_users = max(100, rows // ROWS_PER_USER)
    user_weight = rng.lognormal(0.0, 1.0, n_users)
    user_weight /= user_weight.sum()
    user_mu = rng.normal(np.log(4500.0), 0.6, n_users)     # typical spend ~45.00 in cents
    m_names, m_weight, m_risky = merchants(rng)
    risky_idx = np.flatnonzero(m_risky)

    n_comp = int(n_users * COMPROMISED_USER_FRACTION) if rows >= 1000 else 1
    comp_users = rng.choice(n_users, n_comp, replace=False)
    burst_len = rng.integers(BURST_MIN, BURST_MAX + 1, n_comp)
    n_fraud = int(burst_len.sum())
    n_legit = rows - n_fraud

    # Ordinary transactions.
    user = rng.choice(n_users, n_legit, p=user_weight)
    merchant = rng.choice(N_MERCHANTS, n_legit, p=m_weight)
    cents = np.exp(user_mu[user] + rng.normal(0.0, 0.5, n_legit))
    offset = diurnal_offsets(rng, n_legit)
    fraud = np.zeros(n_legit, dtype=bool)

    # Fraud bursts: drawn in both modes so that both modes consume the same random numbers.
    f_user = np.repeat(comp_users, burst_len)
    f_start = np.repeat(rng.integers(0, DAY_US - BURST_SPREAD_US, n_comp), burst_len)
    f_offset = f_start + rng.integers(0, BURST_SPREAD_US, n_fraud)
    f_merchant = np.where(rng.random(n_fraud) < RISKY_MERCHANT_SHARE,
                          risky_idx[rng.integers(0, risky_idx.size, n_fraud)],
                          rng.choice(N_MERCHANTS, n_fraud, p=m_weight))
    f_cents = np.exp(user_mu[f_user] + FRAUD_AMOUNT_FACTOR_LOG +
                     rng.normal(0.0, FRAUD_AMOUNT_SD_LOG, n_fraud))
    plain_pick = rng.choice(n_legit, n_fraud, replace=False)
    if pattern:
        user = np.concatenate([user, f_user])
        merchant = np.concatenate([merchant, f_merchant])
        cents = np.concatenate([cents, f_cents])
        offset = np.concatenate([offset, f_offset])
        fraud = np.concatenate([fraud, np.ones(n_fraud, dtype=bool)])
    else:
        # Same fraud count, labels on ordinary-looking transactions: no signal to learn.
        fraud[plain_pick] = True
        user = np.concatenate([user, rng.choice(n_users, n_fraud, p=user_weight)])
        merchant = np.concatenate([merchant, rng.choice(N_MERCHANTS, n_fraud, p=m_weight)])
        cents = np.concatenate([cents, np.exp(user_mu[user[n_legit:]] +
                                              rng.normal(0.0, 0.5, n_fraud))])
        offset = np.concatenate([offset, diurnal_offsets(rng, n_fraud)])
        fraud = np.concatenate([fraud, np.zeros(n_fraud, dtype=bool)])

    order = np.argsort(offset, kind="stable")
    amount = np.maximum(np.round(cents[order]) / 100.0, 0.01)
    return {
        "user": user[order], "merchant": merchant[order], "amount": amount,
        "offset": offset[order], "is_fraud": fraud[order], "merchant_names": m_names,
        "n_users": n_users,
    }


def write(root, data, rows, seed, now_us, files, nulls):
    out_dir = os.path.join(root, PARTITION)
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):           # a fresh day: replace earlier files
        if name.endswith(".avro"):
            os.remove(os.path.join(out_dir, name))
    # Newest transaction = now - lag; every timestamp keeps its offset from the window start.
    window_start = now_us - NEWEST_LAG_US - int(data["offset"][-1]) if rows else now_us
    ts = window_start + data["offset"]
    user_vocab = ["u%07d" % i for i in range(data["n_users"])]
    tx_ids = ["tx-20240615-%08d" % i for i in range(rows)]
    schema = SCHEMA
    if nulls:
        # For data-quality demos: make `amount` nullable and null out the first N rows.
        schema = dict(SCHEMA, fields=[dict(f) for f in SCHEMA["fields"]])
        schema["fields"][2]["type"] = ["null", "double"]
    bounds = np.linspace(0, rows, files + 1).astype(np.int64)
    rng = np.random.default_rng(seed + 1)
    paths = []
    for i in range(files):
        a, b = int(bounds[i]), int(bounds[i + 1])
        path = os.path.join(out_dir, "part-%05d.avro" % i)
        cols = {
            "tx_id": (tx_ids[a:b], np.arange(b - a)),
            "user_id": (user_vocab, data["user"][a:b]),
            "amount": data["amount"][a:b],
            "merchant": (data["merchant_names"], data["merchant"][a:b]),
            "timestamp": ts[a:b],
            "is_fraud": data["is_fraud"][a:b],
        }
        if nulls:
            write_nullable(path, schema, cols, rng.bytes(16), a, nulls)
        else:
            avro_ocf.write_ocf(path + ".tmp", schema, cols, rng.bytes(16))
            os.replace(path + ".tmp", path)
        paths.append(path)
    return out_dir, paths


def write_nullable(path, schema, cols, sync, first_row, nulls):
    """Slow path (python3-avro) for the rare nullable variant."""
    import datetime
    import json
    import avro.datafile
    import avro.io
    import avro.schema
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    parsed = avro.schema.parse(json.dumps(schema))
    with open(path, "wb") as f:
        w = avro.datafile.DataFileWriter(f, avro.io.DatumWriter(), parsed, codec="deflate")
        for i in range(len(cols["amount"])):
            row = {k: (v[0][v[1][i]] if isinstance(v, tuple) else v[i].item())
                   for k, v in cols.items()}
            row["timestamp"] = epoch + datetime.timedelta(microseconds=row["timestamp"])
            if first_row + i < nulls:
                row["amount"] = None
            w.append(row)
        w.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="root directory (the local datasource's)")
    ap.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--files", type=int, default=4, help="Avro files to split the day into")
    ap.add_argument("--no-pattern", action="store_true",
                    help="label random ordinary transactions as fraud: AUC ~0.5")
    ap.add_argument("--now", type=float, default=None,
                    help="UNIX seconds the newest transaction is close to (default: now)")
    ap.add_argument("--nulls", type=int, default=0,
                    help="null out `amount` in this many rows (nullable schema; slow writer)")
    args = ap.parse_args(argv)
    if args.rows < 100:
        ap.error("--rows must be at least 100")
    if args.files < 1 or args.files > args.rows:
        ap.error("--files must be between 1 and --rows")
    t0 = time.time()
    now_us = int((args.now if args.now is not None else time.time()) * 1_000_000)
    data = generate(args.rows, args.seed, not args.no_pattern)
    out_dir, paths = write(args.out, data, args.rows, args.seed, now_us, args.files, args.nulls)
    size = sum(os.path.getsize(p) for p in paths)
    print("wrote %d transactions (%d fraud, pattern %s) in %d files, %.1f MiB, to %s in %.1f s"
          % (args.rows, int(data["is_fraud"].sum()), "off" if args.no_pattern else "on",
             len(paths), size / 2**20, out_dir, time.time() - t0))


if __name__ == "__main__":
    main()
