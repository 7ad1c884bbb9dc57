#!/usr/bin/env bash
# Placement at scale: placements/s of the engine's ledger (sched/ledger.h) at 1,000, 10,000 and
# 100,000 nodes of 8 GPUs with a mixed request stream, beside the linear scan it replaced
# (sched::Place) in the same run, and the ratio to kube-scheduler's published CI floor of 810
# pods/s at 5,000 nodes. Last line: `placements/s <x>` (the ledger, 10,000 nodes).
#
#   bench/placement.sh [BUILD_DIR]     (default build; builds rsl-placement-bench into it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target rsl-placement-bench >/dev/null
bin=$build/bin/rsl-placement-bench
at10k=""
for n in 1000 10000 100000; do
  out=$("$bin" "$n" 200000 --scan)
  ledger=$(echo "$out" | awk '/^ledger/ {print $3}')
  scan=$(echo "$out" | awk '/^scan/ {print $3}')
  awk -v n="$n" -v l="$ledger" -v s="$scan" 'BEGIN {
    printf "%6d nodes: ledger %9.0f placements/s, linear scan %7.0f/s (%.0fx), %.0fx kube-scheduler 810/s\n",
           n, l, s, l / s, l / 810 }'
  [ "$n" = 10000 ] && at10k=$ledger
done
echo "placements/s $at10k"
