// Helpers for the data layer's tests: the shared temporary directory (base/test_util.h),
// DataInput builders and DuckDB (npm, tests/node_modules) as the independent peer.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "base/fake_env.h"
#include "base/file.h"
#include "base/test_util.h"
#include "schema/schema.h"
#include "spec/workload.h"

namespace rsl::data::testing {

using rsl::testing::TempDir;

inline spec::DataInput Input(const std::string& uri, const std::string& schema_text) {
  spec::DataInput in;
  in.uri = uri;
  in.schema_text = schema_text;
  if (!schema_text.empty()) {
    auto s = schema::ParseSchema(schema_text);
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    if (s.ok()) in.schema = *s;
  }
  return in;
}

//! A clock for ValidateOptions::env pinned at `now_ms` (each Validate reads it once, at its
//! start): real files and processes, one Env for the whole test binary.
inline Env* ClockAt(int64_t now_ms) {
  static FakeClockEnv env;
  env.SetNowMs(now_ms);
  return &env;
}

#ifdef RSL_SOURCE_DIR
//! The rows DuckDB answers to `sql` (tests/data/write_parquet.mjs), as JSON objects; null when
//! DuckDB fails. Integers wider than 32 bits come back as strings: cast them in the query.
inline nlohmann::json DuckRows(const std::string& sql) {
  std::string cmd = "node " RSL_SOURCE_DIR "/tests/data/write_parquet.mjs sql \"" + sql + "\"";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return nullptr;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) return nullptr;
  auto j = nlohmann::json::parse(out, nullptr, false);
  return j.is_array() ? j : nlohmann::json();
}
#endif

}  // namespace rsl::data::testing
