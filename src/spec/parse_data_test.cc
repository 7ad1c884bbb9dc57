// The data input block read in its two forms: a workload's spec.data.input and the bare
// `input:` block of `seedctl data validate`. One parser: the same codes, messages and
// positions (the bare form's lines are those of its own file).
#include "spec/parse_data.h"

#include <gtest/gtest.h>

#include "spec/parse.h"

namespace rsl::spec {
namespace {

// `block` is the input mapping's body, indented by 2 under `input:`.
std::string Bare(const std::string& block) { return "input:\n" + block; }

// The same body inside a workload, where `input:` sits on line 7 (indented by 4).
std::string InWorkload(const std::string& block) {
  std::string indented;
  size_t pos = 0;
  while (pos < block.size()) {
    size_t nl = block.find('\n', pos);
    indented += "    " + block.substr(pos, nl - pos + 1);
    pos = nl + 1;
  }
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: w\nspec:\n"
         "  data:\n    input:\n" +
         indented + "  pipeline:\n    - name: a\n      image: busybox\n      command: [\"true\"]\n";
}

Result<DataInput> ParseBare(const std::string& block) {
  std::string text = Bare(block);
  YAML::Node root = YAML::Load(text);
  return ParseDataInputBlock(text, "bare.yaml", root["input"], "input");
}

struct Case {
  std::string block;
  std::string message;  // the error's message in both forms
  int line;             // in the bare file (the workload's is 6 more)
  int column;           // in the bare file (the workload's is 4 more)
};

TEST(ParseDataInput, BareAndWorkloadFormsGiveTheSameErrors) {
  const Case cases[] = {
      {"  uri: /d\n  quality: {uniqueKey: [a, b]}\n", "must be a string, got a list", 3, 24},
      {"  uri: /d\n  quality: {freshness: [1h]}\n", "", 3, 24},
      {"  uri: /d\n  schema:\n    tx_id: string\n", "", 4, 5},
      {"  uri: /d\n  format: [csv]\n", "", 3, 11},
      {"  uri: /d\n  quality: hello\n", "", 3, 12},
      {"  uri: /d\n  quality: {completeness: .nan}\n", "must be a number", 3, 27},
      {"  uri: /d\n  schema: \"a:int32,b:nope\"\n", "", 3, 0},
      {"  uri: /d\n  schema: |\n    {\"type\": \"record\", \"name\": \"r\",\n     \"fields\": "
       "[{\"name\": \"a\", \"type\": \"nope\"}]}\n",
       "", 5, 0},
  };
  for (const Case& c : cases) {
    auto bare = ParseBare(c.block);
    ASSERT_FALSE(bare.ok()) << c.block;
    ParseResult full = ParseWorkload(InWorkload(c.block), "w.yaml");
    ASSERT_FALSE(full.ok()) << InWorkload(c.block);
    const Error& b = bare.error();
    const Error& w = full.errors.front();
    EXPECT_EQ(b.code, "SPEC_INVALID") << b.ToString();
    EXPECT_EQ(b.code, w.code) << c.block;
    EXPECT_EQ(b.message, w.message) << c.block;
    EXPECT_EQ("spec.data." + b.path, w.path) << c.block;
    if (!c.message.empty()) {
      EXPECT_NE(b.message.find(c.message), std::string::npos) << b.message;
    }
    EXPECT_EQ(b.pos.line, c.line) << b.ToString();
    EXPECT_EQ(w.pos.line, c.line + 6) << w.ToString();
    if (c.column > 0) {
      EXPECT_EQ(b.pos.column, c.column) << b.ToString();
    }
    EXPECT_EQ(w.pos.column, b.pos.column + 4) << b.ToString() << " / " << w.ToString();
  }
}

TEST(ParseDataInput, BareFormReadsEveryField) {
  auto in = ParseBare(
      "  uri: /data/in\n  format: csv\n  schema: \"a:int32\"\n"
      "  quality: {completeness: 99.5, uniqueness: 100, uniqueKey: a, freshness: 2h}\n");
  ASSERT_TRUE(in.ok()) << in.error().ToString();
  EXPECT_EQ(in->uri, "/data/in");
  EXPECT_EQ(in->format, "csv");
  EXPECT_TRUE(in->schema.has_value());
  EXPECT_EQ(*in->quality.completeness, 99.5);
  EXPECT_EQ(*in->quality.unique_key, "a");
  EXPECT_EQ(*in->quality.freshness_ms, 7200000);
}

}  // namespace
}  // namespace rsl::spec

namespace rsl::spec {
namespace {

Result<Workload> WithOutput(const std::string& output) {
  auto r = ParseWorkload(
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: w\nspec:\n"
      "  data:\n    output: " +
          output + "\n  pipeline:\n    - {name: a, command: [\"true\"]}\n",
      "w.yaml");
  if (!r.ok()) return r.errors[0];
  return r.workload;
}

TEST(ParseDataOutput, PolicyIsReplaceUnlessSaid) {
  EXPECT_EQ(WithOutput("{uri: /data/out}")->data.output->policy, OutputPolicy::kReplace);
  for (auto [text, policy] :
       {std::pair{"replace", OutputPolicy::kReplace}, std::pair{"refuse", OutputPolicy::kRefuse},
        std::pair{"versioned", OutputPolicy::kVersioned}}) {
    auto w = WithOutput(std::string("{uri: /data/out, policy: ") + text + "}");
    ASSERT_TRUE(w.ok()) << w.error().ToString();
    EXPECT_EQ(w->data.output->policy, policy) << text;
    EXPECT_STREQ(OutputPolicyName(policy), text);
  }
  auto bad = WithOutput("{uri: /data/out, policy: versionned}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().ToString(),
            "w.yaml:7:38: SPEC_INVALID spec.data.output.policy: unknown output policy "
            "\"versionned\" (did you mean 'versioned'?)");
}

}  // namespace
}  // namespace rsl::spec
