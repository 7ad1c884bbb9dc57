// Runs RSL's full input validation (existence, schema, constraints, completeness, exact
// uniqueness, freshness, DataDescriptor checksum) on one data set and prints the wall time
// and the measured numbers as one JSON line, for bench/quality_vs_duckdb.sh.
//
// usage: rsl_quality_bench URI SCHEMA_JSON QUALITY_JSON [THREADS]
//   QUALITY_JSON: {"completeness": 99.9, "uniqueness": 99.99, "uniqueKey": "tx_id"}
#include <chrono>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "data/quality.h"
#include "schema/schema.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: rsl_quality_bench URI SCHEMA_JSON QUALITY_JSON [THREADS]\n";
    return 2;
  }
  rsl::spec::DataInput in;
  in.uri = argv[1];
  auto schema = rsl::schema::ParseSchema(argv[2]);
  if (!schema.ok()) {
    std::cerr << schema.error().ToString() << "\n";
    return 2;
  }
  in.schema = *schema;
  auto q = nlohmann::json::parse(argv[3]);
  if (q.contains("completeness")) in.quality.completeness = q["completeness"].get<double>();
  if (q.contains("uniqueness")) in.quality.uniqueness = q["uniqueness"].get<double>();
  if (q.contains("uniqueKey")) in.quality.unique_key = q["uniqueKey"].get<std::string>();
  rsl::data::ValidateOptions opt;
  opt.threads = argc > 4 ? std::atoi(argv[4]) : 0;
  auto t0 = std::chrono::steady_clock::now();
  auto r = rsl::data::Validate(in, nullptr, opt);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json out = {{"seconds", secs}, {"rows", r.rows}, {"status", r.status.code()}};
  if (r.distinct_keys) out["distinct"] = *r.distinct_keys;
  for (const auto& f : r.fields) out["nulls"][f.name] = f.nulls;
  for (const auto& f : r.fields) {
    if (f.violations) out["violations"][f.name] = f.violations;
  }
  if (!r.status.ok()) out["error"] = r.status.error().ToString();
  std::cout << out.dump() << "\n";
  return r.status.ok() ? 0 : 1;
}
