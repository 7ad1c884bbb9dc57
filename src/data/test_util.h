// Helpers for the data layer's tests: a temporary directory and DataInput builders.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/file.h"
#include "schema/schema.h"
#include "spec/workload.h"

namespace rsl::data::testing {

class TempDir {
 public:
  TempDir() {
    std::string templ = "/tmp/rsl-data-test-XXXXXX";
    path_ = mkdtemp(templ.data());
  }
  ~TempDir() { (void)RemoveAll(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::string p = path_ + "/" + name;
    EXPECT_TRUE(MakeDirs(p.substr(0, p.find_last_of('/'))).ok());
    EXPECT_TRUE(WriteFileAtomic(p, contents).ok());
    return p;
  }

 private:
  std::string path_;
};

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
