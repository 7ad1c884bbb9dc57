// Every input a fuzzer once crashed on (fuzz/regressions/<fuzzer>/) must now give a clean
// result: errors with a code and message, or a workload that round-trips through the
// canonical form.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/file.h"
#include "expr/expr.h"
#include "schema/schema.h"
#include "spec/canonical.h"
#include "spec/parse.h"
#include "spec/parse_data.h"

namespace rsl::spec {
namespace {

namespace fs = std::filesystem;
const std::string kRegressionsDir = std::string(RSL_SOURCE_DIR) + "/fuzz/regressions/";

std::vector<std::string> Inputs(const std::string& fuzzer) {
  std::vector<std::string> out;
  if (!fs::exists(kRegressionsDir + fuzzer)) return out;
  for (const auto& e : fs::directory_iterator(kRegressionsDir + fuzzer)) {
    auto text = ReadFile(e.path().string());
    if (text.ok()) out.push_back(*text);
  }
  return out;
}

TEST(FuzzRegressionsTest, SpecInputs) {
  auto inputs = Inputs("spec_fuzzer");
  EXPECT_FALSE(inputs.empty());
  for (const auto& text : inputs) {
    ParseResult r = ParseWorkload(text, "regression.yaml");
    for (const auto& e : r.errors) {
      EXPECT_FALSE(e.code.empty());
      EXPECT_FALSE(e.message.empty());
    }
    if (r.ok()) {
      auto back = FromCanonicalJson(CanonicalJson(r.workload));
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(CanonicalJson(*back), CanonicalJson(r.workload));
    }
  }
}

TEST(FuzzRegressionsTest, InvalidUtf8IsAParseError) {
  ParseResult r = ParseWorkload("apiVersion: aiengine.volc.com/v1\nkind: \xff\n", "u.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(),
            "u.yaml:2:7: SPEC_PARSE_ERROR: invalid UTF-8 byte 0xff in the file (save the file as "
            "UTF-8)");
  EXPECT_TRUE(
      ParseWorkload("# caf\xc3\xa9 \xe2\x82\xac\n", "ok.yaml").errors[0].message.find("UTF-8") ==
      std::string::npos);
}

TEST(FuzzRegressionsTest, SchemaAndWhenInputs) {
  EXPECT_FALSE(Inputs("avro_schema_fuzzer").empty());
  for (const auto& text : Inputs("avro_schema_fuzzer")) {
    auto s = schema::ParseSchema(text);
    if (s.ok()) {  // as the fuzzer checks: the JSON form parses again to itself
      std::string json = s->ToJson();
      auto again = schema::ParseAvroSchema(json);
      ASSERT_TRUE(again.ok()) << json;
      EXPECT_EQ(again->ToJson(), json) << text;
    } else {
      EXPECT_FALSE(s.error().code.empty());
    }
  }
  for (const auto& text : Inputs("when_fuzzer")) {
    auto e = expr::Expr::Parse(text);
    if (!e.ok()) {
      EXPECT_GE(e.error().pos.column, 1);
    }
  }
}

// The bare `input:` blocks of `seedctl data validate` that once aborted it with an uncaught
// yaml-cpp exception: each is now a SPEC_INVALID error at a position.
TEST(FuzzRegressionsTest, DataInputBlocks) {
  auto inputs = Inputs("data_input");
  EXPECT_GE(inputs.size(), 8u);
  for (const auto& text : inputs) {
    YAML::Node root = YAML::Load(text);
    auto in = ParseDataInputBlock(text, "bare.yaml", root["input"], "input");
    ASSERT_FALSE(in.ok()) << text;
    EXPECT_EQ(in.error().code, "SPEC_INVALID") << text << in.error().ToString();
    EXPECT_GT(in.error().pos.line, 0) << in.error().ToString();
    EXPECT_EQ(in.error().path.rfind("input", 0), 0u) << in.error().ToString();
  }
}

}  // namespace
}  // namespace rsl::spec
