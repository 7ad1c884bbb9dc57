#!/usr/bin/env python3
"""p50/p99 gap between a step's end and its dependent's start, from the supervisor's exit records
(CLOCK_REALTIME microseconds: what a stopwatch on the machine would see).

usage: gap.py STATE_DIR STEPS tree|chain
"""
import glob
import os
import sys


def record(lines):
    out = {}
    for line in lines:
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def exit_records(attempts_dir):
    """{exit file name: record}: the supervisor's journal `exits` (records
    "\nattempt=<name>\n...end=1", the last complete one counts), then the exit files
    that exist (older supervisors), which take precedence as in ReadExitFile."""
    out = {}
    journal = os.path.join(attempts_dir, "exits")
    if os.path.exists(journal):
        key, lines = None, []
        for line in open(journal, errors="replace").read().split("\n"):
            if line.startswith("attempt="):
                key, lines = line[len("attempt="):], []
            elif key is not None and line == "end=1":
                out[key] = record(lines)
                key = None
            elif key is not None:
                lines.append(line)
    for path in glob.glob(os.path.join(attempts_dir, "*.exit")):
        out[os.path.basename(path)] = record(open(path).read().split("\n"))
    return out


def main():
    state, n, dag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    # Run directories live in <state>-runs (docs/engine.md), <state>/runs before that.
    runs = glob.glob(state.rstrip("/") + "-runs/*") or glob.glob(os.path.join(state, "runs", "*"))
    run = max(runs, key=os.path.getmtime)
    records = exit_records(os.path.join(run, "attempts"))
    last = {}  # step index -> (attempt number, record)
    for name, r in records.items():
        parts = name.rsplit(".", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        step, attempt = parts[0], parts[1]
        if not step.startswith("s") or not step[1:].isdigit():
            continue
        i = int(step[1:])
        if i not in last or int(attempt) > last[i][0]:
            last[i] = (int(attempt), r)
    start, end = {}, {}
    for i, (_, r) in last.items():
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
