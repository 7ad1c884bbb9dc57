#!/usr/bin/python3
"""Step 2, preprocess: ingest's columns -> features in the signature's [1, 128] float32 layout.

Input: RSL_INPUT_INGEST (ingest's output). Output, in RSL_OUTPUT:
  features.npy  float32 [rows, 128] (one signature input row per transaction; features.py)
  labels.npy    bool [rows]
  holdout.npy   bool [rows]: the 20% hold-out rows that train does not learn from
Metrics: rows, features, holdout_rows.
"""

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import features  # noqa: E402
import stepio  # noqa: E402


def main():
    src = stepio.dependency_output("ingest")
    out = stepio.output_dir()
    t0 = time.time()
    try:
        amount = np.load(os.path.join(src, "amount.npy"))
        ts = np.load(os.path.join(src, "timestamp.npy"))
        labels = np.load(os.path.join(src, "is_fraud.npy"))
        user = np.load(os.path.join(src, "user.npy"))
        merchant = np.load(os.path.join(src, "merchant.npy"))
        with open(os.path.join(src, "merchants.json")) as f:
            merchant_names = json.load(f)
    except (OSError, ValueError) as e:
        stepio.fail("reading ingest's output in %s: %s" % (src, e))
    stepio.progress(0, 2)
    x = features.build(amount, ts, user, merchant, merchant_names)
    stepio.progress(1, 2)
    holdout = features.holdout_mask(x.shape[0])
    np.save(os.path.join(out, "features.npy"), x)
    np.save(os.path.join(out, "labels.npy"), labels)
    np.save(os.path.join(out, "holdout.npy"), holdout)
    stepio.progress(2, 2)
    stepio.write_metrics({"rows": int(x.shape[0]), "features": int(x.shape[1]),
                          "holdout_rows": int(holdout.sum())})
    stepio.log("built %d x %d features in %.1f s" % (x.shape[0], x.shape[1], time.time() - t0))


if __name__ == "__main__":
    main()
