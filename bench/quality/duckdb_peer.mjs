// DuckDB (npm @duckdb/node-api, 2 threads) computing the metrics RSL's validation computes, in
// its fast SQL form: per-column non-null counts, exact COUNT(DISTINCT tx_id), enum violations
// with list_contains (not a 1000-literal NOT IN inside FILTER), range violations, newest
// timestamp. Also writes the benchmark's CSV and Parquet files (mode "gen").
//
// usage: node duckdb_peer.mjs gen ROWS OUT.csv OUT.parquet
//        node duckdb_peer.mjs check FILE csv|parquet
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, ...args] = process.argv.slice(2);
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run('SET threads = 2');
const merchants = Array.from({ length: 1000 }, (_, i) => `'merchant_${String(i).padStart(3, '0')}'`).join(',');

if (mode === 'gen') {
  const [rows, csv, parquet] = args;
  // The seed's transactions: tx_id unique, user_id ~1M distinct, amount with rare nulls (1 in
  // 10,000), merchant from 1,000 values, timestamp, is_fraud (1 %).
  await conn.run(`CREATE TABLE tx AS SELECT
      'tx' || lpad(i::VARCHAR, 12, '0') AS tx_id,
      'u' || lpad((hash(i) % 1000000)::VARCHAR, 7, '0') AS user_id,
      CASE WHEN hash(i * 7 + 1) % 10000 = 0 THEN NULL ELSE ((hash(i * 3 + 2) % 100000) / 100.0)::DOUBLE END AS amount,
      'merchant_' || lpad((hash(i * 11 + 3) % 1000)::VARCHAR, 3, '0') AS merchant,
      TIMESTAMP '2024-06-15 00:00:00' + to_microseconds(i * 8640) AS "timestamp",
      hash(i * 13 + 4) % 100 = 0 AS is_fraud
    FROM range(${Number(rows)}) t(i)`);
  await conn.run(`COPY tx TO '${csv}' (FORMAT csv, HEADER)`);
  await conn.run(`COPY tx TO '${parquet}' (FORMAT parquet, COMPRESSION snappy)`);
  console.log(JSON.stringify({ generated: Number(rows) }));
} else if (mode === 'check') {
  const [file, format] = args;
  const src = format === 'csv' ? `read_csv('${file}')` : `read_parquet('${file}')`;
  const sql = `SELECT count(*) AS rows, count(tx_id) AS tx_id, count(user_id) AS user_id,
      count(amount) AS amount, count(merchant) AS merchant, count("timestamp") AS ts,
      count(is_fraud) AS is_fraud, count(DISTINCT tx_id) AS distinct_tx,
      count(*) FILTER (WHERE NOT list_contains([${merchants}], merchant)) AS bad_merchant,
      count(*) FILTER (WHERE amount < 0 OR amount > 1000) AS bad_amount,
      max("timestamp") AS newest
    FROM ${src}`;
  const t0 = performance.now();
  const reader = await conn.runAndReadAll(sql);
  const secs = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({ seconds: secs, result: reader.getRowObjectsJson()[0] }));
} else {
  console.error('usage: duckdb_peer.mjs gen ROWS OUT.csv OUT.parquet | check FILE csv|parquet');
  process.exit(2);
}
