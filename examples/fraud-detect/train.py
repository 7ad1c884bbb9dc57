#!/usr/bin/python3
"""Step 3, train: a deterministic, seeded logistic regression in numpy.

Input: RSL_INPUT_PREPROCESS (features.npy, labels.npy, holdout.npy). Output, in RSL_OUTPUT:
  model.safetensors: weight float32 [128, 1], bias float32 [1] (tensors.py; nothing else,
  so the artifact's fingerprint depends only on the learned weights).
Metrics (RSL_METRICS_FILE): auc (on the hold-out rows), loss (training log loss), epochs,
train_rows, holdout_rows. Progress (RSL_PROGRESS_FILE): epochs done / epochs.

Determinism: one BLAS thread (a fixed summation order), a fixed shuffling seed, float64
arithmetic, and weights rounded to 6 decimals before they are stored as float32, so that
last-bit differences between CPUs' vector units cannot change the stored bytes.

    train.py [--epochs 8] [--seed 17] [--batch 4096] [--lr 0.02] [--epoch-delay-ms 0]

--epoch-delay-ms sleeps after each epoch: a longer training for the node-loss fault test
(tests/e2e), which must kill the node while train is still running. It does not change the
model.
"""

import os

# Before numpy is imported: one BLAS thread keeps every sum in one fixed order.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model  # noqa: E402
import stepio  # noqa: E402
import tensors  # noqa: E402

WEIGHT_DECIMALS = 6
# Adam's usual constants (Kingma & Ba 2015).
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
L2 = 1e-5


def main():
    ap = argparse.ArgumentParser(description="train the fraud model")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--epoch-delay-ms", type=int, default=0)
    args = ap.parse_args()
    src = stepio.dependency_output("preprocess")
    out = stepio.output_dir()
    t0 = time.time()
    try:
        x_all = np.load(os.path.join(src, "features.npy"))
        y_all = np.load(os.path.join(src, "labels.npy"))
        holdout = np.load(os.path.join(src, "holdout.npy"))
    except (OSError, ValueError) as e:
        stepio.fail("reading preprocess's output in %s: %s" % (src, e))
    x = x_all[~holdout].astype(np.float64)
    y = y_all[~holdout].astype(np.float64)
    n, d = x.shape
    rng = np.random.default_rng(args.seed)
    w = np.zeros(d)
    b = 0.0
    m_w, v_w = np.zeros(d), np.zeros(d)
    m_b = v_b = 0.0
    step = 0
    loss = float("nan")
    stepio.progress(0, args.epochs)
    for epoch in range(args.epochs):
        order = rng.permutation(n)
        for start in range(0, n, args.batch):
            idx = np.sort(order[start:start + args.batch])
            xb, yb = x[idx], y[idx]
            z = np.clip(xb @ w + b, -60.0, 60.0)
            p = 1.0 / (1.0 + np.exp(-z))
            r = (p - yb) / idx.size
            g_w = xb.T @ r + L2 * w
            g_b = r.sum()
            step += 1
            m_w = BETA1 * m_w + (1 - BETA1) * g_w
            v_w = BETA2 * v_w + (1 - BETA2) * g_w * g_w
            m_b = BETA1 * m_b + (1 - BETA1) * g_b
            v_b = BETA2 * v_b + (1 - BETA2) * g_b * g_b
            c1, c2 = 1 - BETA1 ** step, 1 - BETA2 ** step
            w -= args.lr * (m_w / c1) / (np.sqrt(v_w / c2) + EPS)
            b -= args.lr * (m_b / c1) / (np.sqrt(v_b / c2) + EPS)
        p_train = 1.0 / (1.0 + np.exp(-np.clip(x @ w + b, -60.0, 60.0)))
        loss = model.log_loss(p_train, y)
        stepio.progress(epoch + 1, args.epochs)
        stepio.log("epoch %d/%d loss %.6f" % (epoch + 1, args.epochs, loss))
        if args.epoch_delay_ms:
            time.sleep(args.epoch_delay_ms / 1000.0)
    weight = np.round(w, WEIGHT_DECIMALS).astype(np.float32).reshape(d, 1)
    bias = np.array([round(b, WEIGHT_DECIMALS)], dtype=np.float32)
    tensors.save(os.path.join(out, "model.safetensors"), {"weight": weight, "bias": bias},
                 metadata={"format": "logistic-regression", "features": str(d)})
    x_hold = x_all[holdout]
    auc = model.auc(model.predict(x_hold, weight, bias), y_all[holdout])
    stepio.write_metrics({"auc": round(auc, 6), "loss": round(loss, 6),
                          "epochs": args.epochs, "train_rows": int(n),
                          "holdout_rows": int(holdout.sum())})
    stepio.log("trained on %d rows in %.1f s: hold-out AUC %.4f, loss %.5f"
               % (n, time.time() - t0, auc, loss))


if __name__ == "__main__":
    main()
