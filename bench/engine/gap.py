#!/usr/bin/env python3
"""p50/p99 gap between a step's end and its dependent's start, from the shims' exit records
(CLOCK_REALTIME microseconds: what a stopwatch on the machine would see).

usage: gap.py STATE_DIR STEPS tree|chain
"""
import glob
import os
import sys


def record(path):
    out = {}
    for line in open(path):
        if "=" in line:
            k, v = line.rstrip("\n").split("=", 1)
            out[k] = v
    return out


def main():
    state, n, dag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    runs = glob.glob(os.path.join(state, "runs", "*"))
    run = max(runs, key=os.path.getmtime)
    start, end = {}, {}
    for i in range(n):
        attempts = sorted(glob.glob(os.path.join(run, "attempts", "s%d.*.exit" % i)),
                          key=lambda p: int(p.rsplit(".", 2)[-2]))
        if not attempts:
            continue
        r = record(attempts[-1])
        start[i], end[i] = int(r["started_us"]), int(r["ended_us"])
    gaps = []
    for i in range(n):
        d = [c for c in (2 * i + 1, 2 * i + 2) if c < n] if dag == "tree" else ([i - 1] if i else [])
        if not d or i not in start or any(c not in end for c in d):
            continue
        gaps.append((start[i] - max(end[c] for c in d)) / 1000.0)
    gaps.sort()
    if not gaps:
        print("gap: no dependent steps measured")
        return
    p = lambda q: gaps[min(len(gaps) - 1, int(q * len(gaps)))]
    print("gap end->dependent start (%s, %d edges): p50 %.2f ms, p99 %.2f ms, max %.2f ms"
          % (dag, len(gaps), p(0.5), p(0.99), gaps[-1]))


if __name__ == "__main__":
    main()
