#!/usr/bin/env bash
# Runs every libFuzzer target in BINDIR (*_fuzzer) for SECONDS each, starting from
# fuzz/corpus/<target>/ (read-only: new inputs go to a scratch copy), FUZZ_JOBS targets at a
# time (default: the number of CPUs; each target is one process). Exits non-zero if any target
# crashes; the crashing input is saved under fuzz/findings/<target>/ so it can become a
# regression test.
#   bash fuzz/run_all.sh build-fuzz/bin 60
set -uo pipefail
cd "$(dirname "$0")/.."
bindir=${1:?usage: run_all.sh BINDIR SECONDS}
seconds=${2:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# One target; its report goes to $scratch/<name>.report, printed whole when it ends.
fuzz_one() {
  local fuzzer=$1 name work seeds
  name=$(basename "$fuzzer")
  work="$scratch/$name"
  mkdir -p "$work" "fuzz/findings/$name"
  seeds="fuzz/corpus/$name"
  [ -d "$seeds" ] || seeds=""
  {
    echo "== $name for ${seconds}s"
    if ! "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
         -artifact_prefix="fuzz/findings/$name/" -print_final_stats=1 "$work" $seeds \
         > "$work.log" 2>&1; then
      echo "!! $name failed; input saved under fuzz/findings/$name/"
      tail -40 "$work.log"
      return 1
    fi
    grep -E "stat::number_of_executed_units|cov:" "$work.log" | tail -2
  } > "$work.report" 2>&1
}

rc=0
found=0
running=0
for fuzzer in "$bindir"/*_fuzzer; do
  [ -x "$fuzzer" ] || continue
  found=1
  if [ "$running" -ge "$jobs" ]; then
    wait -n || rc=1
    running=$((running - 1))
  fi
  fuzz_one "$fuzzer" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || rc=1
  running=$((running - 1))
done
cat "$scratch"/*.report 2>/dev/null
[ "$found" = 1 ] || { echo "no *_fuzzer in $bindir (build with RSL_FUZZ=ON)"; exit 1; }
exit $rc
