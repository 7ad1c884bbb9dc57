#!/usr/bin/env bash
# Runs every benchmark script (bench/*.sh) in turn, all from `make build`'s tree (build/), and
# ends with one table: each script's last line (its figure or ratio), and a second figure
# where it has one, beside its target.
set -uo pipefail
cd "$(dirname "$0")/.."
# The target each script's last line is held to (issue figures; docs in bench/README.md).
declare -A target=(
  [bench/dag_vs_ninja.sh]="ratio <= 1.15 (real processes vs ninja -j)"
  [bench/quality_vs_duckdb.sh]="ratio < 0.6 on every format"
  [bench/api_load.sh]=">= 20,000 workloads/min"
  [bench/placement.sh]=">= 100,000 placements/s at 10,000 nodes"
  [bench/big_run.sh]="each < 100 ms (100,000-step run)"
  [bench/logs_serve.sh]="-"
  [bench/sla.sh]="-"
  [bench/serve_autoscale.sh]="failed requests 0; decision <= 2 s"
  [bench/soak_kill.sh]="lost 0 of n"
)
# Scripts with a second figure held to a target: the last line starting with this word.
declare -A second=(
  [bench/dag_vs_ninja.sh]="engine|<= 3x (the engine's own cost vs ninja -n)"
)
rc=0
results=()
log=$(mktemp)
for s in bench/*.sh; do
  [ "$s" = bench/run_all.sh ] && continue
  echo "== $s"
  if bash "$s" 2>&1 | tee "$log"; then
    results+=("$s|$(tail -1 "$log")|${target[$s]:--}")
    if [ -n "${second[$s]:-}" ]; then
      IFS='|' read -r word want <<< "${second[$s]}"
      results+=("$s|$(grep "^$word " "$log" | tail -1)|$want")
    fi
  else
    rc=1
    results+=("$s|FAILED|${target[$s]:--}")
  fi
done
for b in build/bin/*_bench; do
  [ -x "$b" ] || continue
  echo "== $b"
  "$b" || rc=1
done
rm -f "$log"
echo
echo "== summary"
width=9  # the widest figure, so that the targets line up
for r in "${results[@]}"; do
  IFS='|' read -r _ last _ <<< "$r"
  [ ${#last} -gt $width ] && width=${#last}
done
printf "%-28s  %-${width}s  %s\n" BENCHMARK FIGURE TARGET
for r in "${results[@]}"; do
  IFS='|' read -r name last want <<< "$r"
  printf "%-28s  %-${width}s  %s\n" "${name#bench/}" "$last" "$want"
done
exit $rc
