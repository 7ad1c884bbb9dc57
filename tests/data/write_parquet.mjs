// Writes test and benchmark data with DuckDB (npm @duckdb/node-api), the independent Parquet
// writer for RSL's Parquet reader, and runs the benchmark's SQL peer.
//
// usage: node write_parquet.mjs sql "<SQL>"...   run statements, print the last result as JSON
// Module resolution: NODE_PATH or a node_modules folder above this file (tests/node_modules,
// installed by scripts/ci.d/data.sh).
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, ...rest] = process.argv.slice(2);
if (mode !== 'sql' || rest.length === 0) {
  console.error('usage: node write_parquet.mjs sql "<SQL>"...');
  process.exit(2);
}
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
let last = null;
for (const sql of rest) {
  const reader = await conn.runAndReadAll(sql);
  last = reader.getRowObjectsJson();
}
console.log(JSON.stringify(last));
