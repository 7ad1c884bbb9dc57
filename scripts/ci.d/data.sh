#!/usr/bin/env bash
# CI preparation for the data contracts: DuckDB from npm, the independent Parquet
# writer of tests/data and the SQL peer of bench/quality_vs_duckdb.sh, into the gitignored
# tests/node_modules (its package ships libduckdb.so; no install script runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/npm-tests.sh  # with the other parts' npm packages, in one npm call
node -e "require.resolve('@duckdb/node-api', {paths: ['tests']})" >/dev/null
