#!/usr/bin/env bash
# How many of the Apache Parquet project's conformance files (apache/parquet-testing: data/*.parquet,
# data/geospatial/*.parquet, bad_data/*.parquet; 83 files at commit 1a2a751) RSL reads, against
# DuckDB (npm @duckdb/node-api in tests/node_modules, the independent reader).
#
# usage: bench/parquet_conformance.sh <seedctl> <parquet-testing checkout>
# Prints one line per file ("rsl ok|refused  duckdb ok|refused  file  first line of RSL's
# error") and the totals. A file counts as read when `seedctl data profile` exits 0.
set -euo pipefail
seedctl=${1:?usage: $0 <seedctl> <parquet-testing checkout>}
root=${2:?usage: $0 <seedctl> <parquet-testing checkout>}
here=$(cd "$(dirname "$0")/.." && pwd)
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
rsl=0 duck=0 total=0
shopt -s nullglob
for f in "$root"/data/*.parquet "$root"/bad_data/*.parquet "$root"/data/geospatial/*.parquet; do
  total=$((total + 1))
  if out=$(timeout 120 "$seedctl" data profile --state-dir "$state" --uri "$f" 2>&1); then
    r=ok; rsl=$((rsl + 1)); why=""
  else
    r=refused; why=$(printf '%s\n' "$out" | head -1 | cut -c1-140)
  fi
  if timeout 120 node "$here/tests/data/write_parquet.mjs" sql "SELECT count(*) AS n FROM '$f'" \
      > /dev/null 2>&1; then
    d=ok; duck=$((duck + 1))
  else
    d=refused
  fi
  printf 'rsl %-7s duckdb %-7s %s  %s\n' "$r" "$d" "${f#"$root"/}" "$why"
done
echo "RSL reads $rsl of $total; DuckDB reads $duck of $total"
