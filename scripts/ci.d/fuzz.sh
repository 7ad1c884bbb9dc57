#!/usr/bin/env bash
# CI: the libFuzzer targets of spec/YAML, Avro schemas, `when`, API requests, Parquet files and
# transition log records,
# each for 60 s with ASan+UBSan, as many at a time as there are CPUs; fails on any crash. About
# 3 minutes on two CPUs, plus the clang build of the fuzz targets only.
set -euo pipefail
cd "$(dirname "$0")/../.."
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRSL_FUZZ=ON -DRSL_BENCH=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 > /dev/null
cmake --build build-fuzz --target spec_fuzzer avro_schema_fuzzer when_fuzzer api_request_fuzzer \
  data_parquet_fuzzer store_batch_fuzzer -j "$(nproc)"
bash fuzz/run_all.sh build-fuzz/bin "${FUZZ_SECONDS:-60}"
