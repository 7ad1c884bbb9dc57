#!/usr/bin/python3
"""Train step: writes a small two-tower recommendation model as numpy arrays.

$RSL_OUTPUT/model.npz holds user_tower float32 [128, 16], item_tower float32 [64, 16] and
bias float32 [1]: prediction = sigmoid((user @ user_tower) . (item @ item_tower) / 4 + bias).
Deterministic (seeded) so that two runs serve the same answers.
"""
import json
import os

import numpy as np

EMBED = 16


def main():
    out = os.environ["RSL_OUTPUT"]
    rng = np.random.default_rng(20260615)
    user_tower = (rng.standard_normal((128, EMBED)) / np.sqrt(128)).astype(np.float32)
    item_tower = (rng.standard_normal((64, EMBED)) / np.sqrt(64)).astype(np.float32)
    bias = np.array([0.1], dtype=np.float32)
    np.savez(os.path.join(out, "model.npz"), user_tower=user_tower, item_tower=item_tower,
             bias=bias)
    metrics = os.environ.get("RSL_METRICS_FILE")
    if metrics:
        with open(metrics, "w") as f:
            json.dump({"embedding_dim": EMBED}, f)
    print("wrote", os.path.join(out, "model.npz"), flush=True)


if __name__ == "__main__":
    main()
