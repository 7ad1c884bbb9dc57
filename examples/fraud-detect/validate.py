#!/usr/bin/python3
"""Step 4, validate: scores the hold-out set with the trained model.

Input: RSL_INPUT_TRAIN (model.safetensors) and RSL_INPUT_PREPROCESS (features.npy,
labels.npy, holdout.npy). Output, in RSL_OUTPUT:
  fraud_prob.npy  float32 [holdout rows, 1], every value within [0, 1] (the signature's
                  output: RSL checks its dtype, shape and range after the step).
Metrics: auc, holdout_rows, flagged (rows with fraud_prob >= 0.5).
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model  # noqa: E402
import stepio  # noqa: E402
import tensors  # noqa: E402

FLAG_THRESHOLD = 0.5


def main():
    model_dir = stepio.dependency_output("train")
    data_dir = stepio.dependency_output("preprocess")
    out = stepio.output_dir()
    t0 = time.time()
    try:
        t = tensors.load(os.path.join(model_dir, "model.safetensors"))
        x = np.load(os.path.join(data_dir, "features.npy"), mmap_mode="r")
        labels = np.load(os.path.join(data_dir, "labels.npy"))
        holdout = np.load(os.path.join(data_dir, "holdout.npy"))
    except (OSError, ValueError, KeyError) as e:
        stepio.fail("reading the model or the features: %s" % e)
    prob = model.predict(np.asarray(x[holdout]), t["weight"], t["bias"])
    np.save(os.path.join(out, "fraud_prob.npy"), prob)
    auc = model.auc(prob, labels[holdout])
    stepio.write_metrics({"auc": round(auc, 6), "holdout_rows": int(prob.shape[0]),
                          "flagged": int((prob >= FLAG_THRESHOLD).sum())})
    stepio.log("scored %d hold-out rows in %.1f s: AUC %.4f"
               % (prob.shape[0], time.time() - t0, auc))


if __name__ == "__main__":
    main()
