// Helpers for the data layer's tests: the shared temporary directory (base/test_util.h) and
// DataInput builders.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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

}  // namespace rsl::data::testing
