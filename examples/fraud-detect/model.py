"""The fraud model: logistic regression over features.py's 128 inputs, and the AUC."""

import numpy as np


def predict(x, weight, bias):
    """fraud probability per row, float32 [n, 1] within [0, 1]."""
    z = x.astype(np.float64) @ weight.astype(np.float64).reshape(-1) + float(bias.reshape(-1)[0])
    p = 1.0 / (1.0 + np.exp(-np.clip(z, -60.0, 60.0)))
    return p.astype(np.float32).reshape(-1, 1)


def auc(scores, labels):
    """Area under the ROC curve: the Mann-Whitney U statistic, ties counted as one half."""
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels, dtype=bool).reshape(-1)
    n_pos = int(labels.sum())
    n_neg = labels.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    ranks = np.empty(s.size)
    # Average rank over each run of equal scores.
    boundaries = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [s.size]))
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    rank_sum = ranks[labels].sum()
    return float((rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def log_loss(p, labels):
    p = np.clip(np.asarray(p, dtype=np.float64).reshape(-1), 1e-12, 1 - 1e-12)
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
