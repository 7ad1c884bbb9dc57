#!/usr/bin/env bash
# RSL's input validation vs the tools users would otherwise reach for:
#   CSV, Parquet: DuckDB (npm @duckdb/node-api, 2 threads) computing the same metrics in SQL;
#   Avro: the Avro C library (libavro) merely decoding every record (DuckDB's Avro extension
#   would be downloaded at run time, which this machine cannot).
# Data: the seed's transactions (tx_id unique, user_id ~1M distinct, amount with rare nulls,
# merchant from 1,000 values, timestamp, is_fraud), ROWS rows (default 10,000,000), written by
# DuckDB (CSV, Parquet snappy) and by libavro (Avro, snappy blocks of 64 KiB).
# Prints seconds, rows/s, `cat > /dev/null` speed, and per format `ratio rsl/<peer> <fmt> <x>`.
# usage: ROWS=1000000 bench/quality_vs_duckdb.sh     (THREADS=2, DATA=bench/data, BUILD=build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-10000000}
THREADS=${THREADS:-2}
DATA=${DATA:-bench/data}
BUILD=${BUILD:-build}
mkdir -p "$DATA"

# DuckDB from npm (ships libduckdb.so, no install script), shared with the tests if present.
if [ ! -d bench/node_modules/@duckdb/node-api ]; then
  if [ -d tests/node_modules/@duckdb/node-api ]; then ln -sfn ../tests/node_modules bench/node_modules
  else npm install --no-save --no-audit --no-fund --prefix bench @duckdb/node-api >/dev/null; fi
fi
# RSL's validator and the libavro writer/decoder, from `make build`'s tree (configured here as
# make does when missing).
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" --target rsl_quality_bench avro_c_writer -j "$(nproc)" >/dev/null

csv=$DATA/tx-$ROWS.csv; pq=$DATA/tx-$ROWS.parquet; avro=$DATA/tx-$ROWS.avro
if [ ! -s "$csv" ] || [ ! -s "$pq" ]; then
  echo "generating $ROWS rows (DuckDB: CSV, Parquet)..."
  node bench/quality/duckdb_peer.mjs gen "$ROWS" "$csv" "$pq" >/dev/null
fi
if [ ! -s "$avro" ]; then
  echo "generating $ROWS rows (libavro: Avro)..."
  "$BUILD/bin/avro_c_writer" --bench "$avro" snappy "$ROWS"
fi

merchants=$(for i in $(seq 0 999); do printf '"merchant_%03d",' "$i"; done); merchants=${merchants%,}
schema='{"type":"record","name":"transaction","fields":[
  {"name":"tx_id","type":"string"},{"name":"user_id","type":"string"},
  {"name":"amount","type":["null","double"],"constraints":{"min":0,"max":1000}},
  {"name":"merchant","type":"string","constraints":{"enum":['"$merchants"']}},
  {"name":"timestamp","type":"long","logicalType":"timestamp-micros"},
  {"name":"is_fraud","type":"boolean"}]}'
quality='{"completeness":99.9,"uniqueness":99.99,"uniqueKey":"tx_id"}'

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b-a}'; }
field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }

printf '%-8s %-9s %10s %12s %12s   %s\n' format tool seconds rows/s "MiB/s" notes
declare -A ratio
for fmt in csv parquet avro; do
  file=$DATA/tx-$ROWS.$fmt
  mib=$(awk -v b="$(stat -c %s "$file")" 'BEGIN{printf "%.1f", b/1048576}')
  cat "$file" > /dev/null   # warm the page cache for every tool alike
  t0=$(now); cat "$file" > /dev/null; t1=$(now)
  cat_s=$(secs "$t0" "$t1")
  printf '%-8s %-9s %10s %12s %12s   %s MiB\n' "$fmt" cat "$cat_s" - "$(awk -v m="$mib" -v s="$cat_s" 'BEGIN{printf "%.0f", m/s}')" "$mib"
  out=$("$BUILD/bin/rsl_quality_bench" "$file" "$schema" "$quality" "$THREADS" || true)
  rsl_s=$(echo "$out" | field seconds)
  rows=$(echo "$out" | field rows)
  printf '%-8s %-9s %10.3f %12.0f %12.0f   %s\n' "$fmt" rsl "$rsl_s" "$(awk -v r="$rows" -v s="$rsl_s" 'BEGIN{print r/s}')" \
    "$(awk -v m="$mib" -v s="$rsl_s" 'BEGIN{print m/s}')" "$(echo "$out" | sed 's/"seconds":[0-9.e+-]*,//')"
  if [ "$fmt" = avro ]; then
    peer=libavro
    t0=$(now); "$BUILD/bin/avro_c_writer" --decode "$file" >/dev/null; t1=$(now)
    peer_s=$(secs "$t0" "$t1"); peer_note="decode loop only"
  else
    peer=duckdb
    pout=$(node bench/quality/duckdb_peer.mjs check "$file" "$fmt")
    peer_s=$(echo "$pout" | field seconds); peer_note=$(echo "$pout" | sed 's/.*"result"://')
  fi
  printf '%-8s %-9s %10.3f %12.0f %12.0f   %s\n' "$fmt" "$peer" "$peer_s" "$(awk -v r="$rows" -v s="$peer_s" 'BEGIN{print r/s}')" \
    "$(awk -v m="$mib" -v s="$peer_s" 'BEGIN{print m/s}')" "$peer_note"
  ratio[$fmt]="ratio rsl/$peer $fmt $(awk -v a="$rsl_s" -v b="$peer_s" 'BEGIN{printf "%.2f", a/b}')"
done
for fmt in csv parquet avro; do echo "${ratio[$fmt]}"; done
