#!/usr/bin/env bash
# The same DAGs run by RSL and by ninja (Debian's ninja-build) in one go:
#   (a) end to end with real processes: 10,000 independent `true` steps, and a 10,000-step
#       build tree (step i needs 2i+1 and 2i+2), `seedctl run --no-hooks` vs `ninja`;
#   (b) the engine's own overhead: the same DAGs with an in-process backend that ends every
#       step at once (bin/rsl-engine-bench), vs `ninja -n`; also through the store's
#       transition log (rsl-engine-bench ... log, as rsl-controller --transition-log);
#   plus the p50/p99 gap between a step's end and its dependent's start (tree, real run);
#   (c) one workload of BIG steps (default 100000; BIG=0 skips it): `seedctl validate` of
#       the file, then both DAGs through rsl-engine-bench (run time, peak RSS, and the store
#       reads behind status, describe and list on the finished run).
# Every RSL transition is durable (SQLite WAL, synchronous=FULL: fsync per commit).
# (b) runs REPEAT times (default 5), alternated with `ninja -n`, and compares the medians.
# STEPS=N changes the size (default 10000); SETTLE=s the quiet wait before timing (default
# 31, see below; as root the clean caches are dropped after it, DROP_CACHES=0 to not);
# BUILD=dir picks the build (default build, `make build`'s RelWithDebInfo tree, configured
# here as make does when missing);
# RUNNER=driver runs the DAGs with tests/engine's rsl-engine-driver (the same engine, local
# backend and store, without the CLI) when building all of seedctl is too slow.
# Last lines: `engine cost rsl/ninja -n <x>x (<y>x through the transition log)` for the worse
# DAG of (b), then `ratio rsl/ninja <x>` for the worse DAG of (a).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-10000}
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
RUNNER=${RUNNER:-seedctl}
if [ "$RUNNER" = driver ]; then
  cmake --build "$BUILD" --target rsl-engine-driver rsl-shim rsl-engine-bench >/dev/null
else
  cmake --build "$BUILD" --target seedctl rsl-shim rsl-engine-bench >/dev/null
fi
BIN=$PWD/$BUILD/bin
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rsl-dag-bench.XXXXXX")
chmod 755 "$WORK"  # steps run as their namespace's uid and pass through it (docs/security.md)
trap 'rm -rf "$WORK"' EXIT
# Let the file system settle before timing (SETTLE=seconds, 0 = not at all). On ext4 without
# a journal (this machine's root) creating an inode skips, one by one, every inode deleted in
# the last 30 s (5.5 min while its block is still dirty): right after a build or a previous
# run's cleanup a mkdir costs 230-290 us instead of 25 us. ninja creates no inode per step,
# RSL creates one (the attempt's staging directory), so without this the figure measures the
# build that ran before. `sync` writes those blocks back, after which 30 s was enough on the
# kernel this was first measured on. On 6.18 it can last longer, depending on where ext4
# puts the new inodes: a mkdir probe cost 112 us a minute after this script's own cleanup,
# and 71-81 us 31-75 s after removing a 20,000-directory tree (31 us after 300 s, 26 us
# quiet), though a second such probe saw no penalty at all.
# The check only looks at inode-table blocks still in the buffer cache ("not cached: written
# out long ago"), so where it may (root), the script also drops the clean caches after the
# wait: the same probe then cost 47-51 us right after a 20,000-directory rm -rf, where it
# cost 400 us without. Then it runs what both sides run once, so neither pays the cold reads.
# DROP_CACHES=0 leaves the caches alone. Where they are not dropped, use SETTLE=300 after
# large deletions (a previous run of this script, a test suite).
source bench/settle.sh
settle_fs

now() { date +%s.%N; }
secs() { python3 -c "print('%.3f' % ($2 - $1))"; }
true && sh -c true && ninja --version >/dev/null && "$BIN/seedctl" --help >/dev/null &&
  "$BIN/rsl-shim" --help >/dev/null 2>&1 || true
# Right after a cache drop, the first 10,000-process run is slower for whoever goes first:
# ninja's 10,000 independent steps took 4.60-4.80 s there, 4.08-4.19 s in the next run or
# without the drop, also after a 2,000-process warm-up or a 10 s wait. So an untimed ninja
# build of the same size goes first.
if [ -n "${DROPPED:-}" ]; then
  python3 bench/engine/gen_dag.py "$STEPS" independent "$WORK/warmup"
  ninja -C "$WORK/warmup" >/dev/null
fi

med() { printf '%s\n' "$@" | python3 -c "import sys,statistics; print('%.3f' % statistics.median(float(x) for x in sys.stdin))"; }
span() { printf '%s\n' "$@" | python3 -c "import sys; v=[float(x) for x in sys.stdin]; print('%.3f-%.3f' % (min(v), max(v)))"; }
worst=0 worst_n=0 worst_log=0
for dag in independent tree; do
  python3 bench/engine/gen_dag.py "$STEPS" "$dag" "$WORK/$dag"
  t0=$(now); ninja -C "$WORK/$dag" >/dev/null; t1=$(now)
  ninja_s=$(secs "$t0" "$t1")
  t0=$(now)
  if [ "$RUNNER" = driver ]; then
    "$BIN/rsl-engine-driver" run "$WORK/$dag/workload.yaml" "$WORK/$dag/state" >"$WORK/$dag/result.txt"
  else
    "$BIN/seedctl" run -f "$WORK/$dag/workload.yaml" --state-dir "$WORK/$dag/state" --no-hooks \
      -o json >"$WORK/$dag/result.json"
  fi
  t1=$(now)
  rsl_s=$(secs "$t0" "$t1")
  ratio=$(python3 -c "print('%.2f' % ($rsl_s / $ninja_s))")
  echo "$dag $STEPS steps, real processes: rsl ${rsl_s}s, ninja ${ninja_s}s, ratio $ratio"
  # (b) REPEAT times each (default 5), alternated, and the medians compared: on a loaded
  # host one `ninja -n` took anywhere from 0.077 to 0.138 s in the same hour, enough to move
  # a single ratio by half. Through the store's transition log too (rsl-controller
  # --transition-log).
  ns=() fs=() ls=()
  for _ in $(seq "${REPEAT:-5}"); do
    t0=$(now); ninja -C "$WORK/$dag" -t clean >/dev/null; ninja -C "$WORK/$dag" -n >/dev/null; t1=$(now)
    ns+=("$(secs "$t0" "$t1")")
    fs+=("$("$BIN/rsl-engine-bench" "$STEPS" "$dag" full | head -1 | sed -E 's/.*: ([0-9.]+) s.*/\1/')")
    ls+=("$("$BIN/rsl-engine-bench" "$STEPS" "$dag" log | head -1 | sed -E 's/.*: ([0-9.]+) s.*/\1/')")
  done
  ninja_n=$(med "${ns[@]}") inproc_s=$(med "${fs[@]}") logged_s=$(med "${ls[@]}")
  echo "$dag $STEPS steps, engine overhead (in-process backend), medians of ${#ns[@]}: rsl ${inproc_s}s ($(span "${fs[@]}")), ninja -n ${ninja_n}s ($(span "${ns[@]}")), ratio $(python3 -c "print('%.2f' % ($inproc_s / $ninja_n))")"
  echo "$dag $STEPS steps, engine overhead with the transition log, medians of ${#ls[@]}: rsl ${logged_s}s ($(span "${ls[@]}")), ratio $(python3 -c "print('%.2f' % ($logged_s / $ninja_n))")"
  if [ "$dag" = tree ]; then
    python3 bench/engine/gap.py "$WORK/$dag/state" "$STEPS" tree
  fi
  worst=$(python3 -c "print(max($worst, $ratio))")
  worst_n=$(python3 -c "print(max($worst_n, round($inproc_s / $ninja_n, 2)))")
  worst_log=$(python3 -c "print(max($worst_log, round($logged_s / $ninja_n, 2)))")
done
BIG=${BIG:-100000}
if [ "$BIG" -gt 0 ]; then
  for dag in independent tree; do
    python3 bench/engine/gen_dag.py "$BIG" "$dag" "$WORK/big-$dag"
    if [ "$RUNNER" != driver ]; then  # the driver's build has no seedctl
      t0=$(now)
      "$BIN/seedctl" validate -f "$WORK/big-$dag/workload.yaml" >/dev/null
      t1=$(now)
      echo "$dag $BIG steps, seedctl validate: $(secs "$t0" "$t1")s"
    fi
    rm -rf "$WORK/big-$dag"
    "$BIN/rsl-engine-bench" "$BIG" "$dag" full | sed "s/^/$dag $BIG steps, engine (in-process backend): /"
  done
fi
echo "engine cost rsl/ninja -n ${worst_n}x (${worst_log}x through the transition log)"
echo "ratio rsl/ninja $worst"
