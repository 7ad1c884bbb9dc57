#!/usr/bin/env bash
# CI preparation for the data contracts: DuckDB from npm, the independent Parquet
# writer of tests/data and the SQL peer of bench/quality_vs_duckdb.sh, into the gitignored
# tests/node_modules (its package ships libduckdb.so; no install script runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -d tests/node_modules/@duckdb/node-api ]; then
  echo "data: @duckdb/node-api present"
else
  start=$(date +%s)
  npm install --no-save --no-audit --no-fund --prefix tests @duckdb/node-api >/dev/null
  echo "data: installed @duckdb/node-api in $(( $(date +%s) - start )) s"
fi
node -e "require.resolve('@duckdb/node-api', {paths: ['tests']})" >/dev/null
