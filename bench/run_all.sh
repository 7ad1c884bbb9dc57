#!/usr/bin/env bash
# Runs every benchmark script (bench/*/*.sh named in bench/*/run.list or bench/*.sh) in turn.
set -uo pipefail
cd "$(dirname "$0")/.."
rc=0
for s in bench/*.sh; do
  [ "$s" = bench/run_all.sh ] && continue
  echo "== $s"
  bash "$s" || rc=1
done
for b in build/bin/*_bench; do
  [ -x "$b" ] || continue
  echo "== $b"
  "$b" || rc=1
done
exit $rc
