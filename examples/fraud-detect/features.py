"""The fraud model's features: 128 float32 values per transaction (the signature's layout).

Only differences of timestamps are used (never the hour of day), so the features, and the
model trained on them, do not change when the same data is generated at another time.

  0  log1p(amount)
  1  log(amount / the user's median amount that day)
  2  log1p(seconds since the user's previous transaction)   (first: a full day)
  3  log1p(seconds until the user's next transaction)       (last: a full day)
  4  log1p(the user's transactions that day)
  5  log1p(the user's transactions within +-10 minutes)
  6  log1p(the merchant's transactions that day)
  7  log1p(distinct merchants the user paid that day)
  8..127  merchant name hashed (CRC-32) into 120 one-hot buckets
Columns 0-7 are standardised (z-scores over the day); the buckets stay 0/1.
"""

import zlib

import numpy as np

N_FEATURES = 128
N_NUMERIC = 8
N_BUCKETS = N_FEATURES - N_NUMERIC
DAY_S = 86400.0
BURST_WINDOW_US = 10 * 60 * 1_000_000
# Key = user code * 2^40 + microseconds since the day's first transaction: 2^40 us is 12.7
# days, far more than one day; user codes stay below 2^23 so the key fits an int64.
KEY_SHIFT = 40


def group_stats(user, ts):
    """Per-row user statistics from a (user, time) sort."""
    n = user.shape[0]
    t_rel = ts - ts.min()
    key = user.astype(np.int64) << KEY_SHIFT | t_rel
    order = np.argsort(key, kind="stable")
    k_sorted = key[order]
    u_sorted = user[order]
    t_sorted = t_rel[order]
    same_prev = np.zeros(n, dtype=bool)
    same_prev[1:] = u_sorted[1:] == u_sorted[:-1]
    gap_prev = np.full(n, DAY_S)
    gap_prev[1:] = np.where(same_prev[1:], (t_sorted[1:] - t_sorted[:-1]) / 1e6, DAY_S)
    gap_next = np.full(n, DAY_S)
    gap_next[:-1] = np.where(same_prev[1:], (t_sorted[1:] - t_sorted[:-1]) / 1e6, DAY_S)
    lo = np.searchsorted(k_sorted, k_sorted - BURST_WINDOW_US, side="left")
    hi = np.searchsorted(k_sorted, k_sorted + BURST_WINDOW_US, side="right")
    burst = (hi - lo).astype(np.float64)
    out = {}
    for name, sorted_vals in (("gap_prev", gap_prev), ("gap_next", gap_next),
                              ("burst", burst)):
        v = np.empty(n)
        v[order] = sorted_vals
        out[name] = v
    return out


def user_median(user, amount, n_users):
    order = np.lexsort((amount, user))
    u = user[order]
    a = amount[order]
    counts = np.bincount(u, minlength=n_users)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    # Median of each group: mean of the two middle elements (equal for odd counts).
    has = counts > 0
    mid_lo = starts + (counts - 1) // 2
    mid_hi = starts + counts // 2
    med = np.ones(n_users)
    med[has] = (a[mid_lo[has]] + a[mid_hi[has]]) / 2.0
    return med, counts


def distinct_merchants(user, merchant, n_users):
    pairs = np.unique(user.astype(np.int64) << 32 | merchant.astype(np.int64))
    return np.bincount((pairs >> 32).astype(np.int64), minlength=n_users)


def build(amount, ts, user, merchant, merchant_names):
    """-> float32 [n, 128] feature matrix."""
    n = amount.shape[0]
    n_users = int(user.max()) + 1 if n else 0
    med, user_count = user_median(user, amount, n_users)
    stats = group_stats(user, ts)
    merchant_count = np.bincount(merchant, minlength=len(merchant_names))
    numeric = np.empty((n, N_NUMERIC))
    numeric[:, 0] = np.log1p(amount)
    numeric[:, 1] = np.log(np.maximum(amount, 0.01) / np.maximum(med[user], 0.01))
    numeric[:, 2] = np.log1p(stats["gap_prev"])
    numeric[:, 3] = np.log1p(stats["gap_next"])
    numeric[:, 4] = np.log1p(user_count[user])
    numeric[:, 5] = np.log1p(stats["burst"])
    numeric[:, 6] = np.log1p(merchant_count[merchant])
    numeric[:, 7] = np.log1p(distinct_merchants(user, merchant, n_users)[user])
    mean = numeric.mean(axis=0)
    std = numeric.std(axis=0)
    std[std == 0] = 1.0
    x = np.zeros((n, N_FEATURES), dtype=np.float32)
    x[:, :N_NUMERIC] = (numeric - mean) / std
    bucket_of = np.array([zlib.crc32(m.encode()) % N_BUCKETS for m in merchant_names],
                         dtype=np.int64)
    x[np.arange(n), N_NUMERIC + bucket_of[merchant]] = 1.0
    return x


def holdout_mask(n):
    """Every fifth row by a fixed multiplicative hash of its index: 20% hold-out."""
    idx = np.arange(n, dtype=np.uint64)
    return (idx * np.uint64(2654435761) % np.uint64(2**32)) % np.uint64(5) == 0
