#include "spec/yaml_merge.h"

#include <gtest/gtest.h>

#include <chrono>

#include "base/codes.h"
#include "spec/canonical.h"
#include "spec/parse.h"
#include "spec/yaml_load.h"

namespace rsl::spec {
namespace {

Errors Resolve(YAML::Node* root, const std::string& text) {
  *root = YAML::Load(text);
  return ResolveYaml(*root, "f.yaml");
}

TEST(ResolveYaml, DuplicateKeyIsAnErrorAtTheDuplicate) {
  YAML::Node root;
  Errors errors = Resolve(&root, "a:\n  b: 1\n  c: 2\n  b: 3\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].ToString(),
            "f.yaml:4:3: SPEC_PARSE_ERROR a.b: duplicate key \"b\" (first at line 2:3) (keep one "
            "of the two; YAML would silently drop one)");
}

TEST(ResolveYaml, DuplicatesAreFoundInFlowMappingsListsAndQuotedKeys) {
  YAML::Node root;
  Errors errors = Resolve(&root, "l:\n  - {x: 1, \"x\": 2}\n  - y: 1\n    'y': 2\n");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].path, "l[0].x");
  EXPECT_EQ(errors[0].pos.line, 2);
  EXPECT_EQ(errors[0].pos.column, 12);
  EXPECT_EQ(errors[1].path, "l[1].y");
  EXPECT_EQ(errors[1].pos.line, 4);
}

TEST(ResolveYaml, MergeKeyCopiesFieldsAndExplicitKeysWin) {
  YAML::Node root;
  Errors errors = Resolve(&root,
                          "base: &b {image: i, command: [x], timeout: 1m}\n"
                          "step:\n  timeout: 5m\n  <<: *b\n  name: s\n");
  ASSERT_TRUE(errors.empty()) << errors[0].ToString();
  YAML::Node step = root["step"];
  EXPECT_FALSE(step["<<"]);
  EXPECT_EQ(step.size(), 4u);
  EXPECT_EQ(step["timeout"].Scalar(), "5m");  // written before the merge, still wins
  EXPECT_EQ(step["image"].Scalar(), "i");
  EXPECT_EQ(step["command"][0].Scalar(), "x");
  EXPECT_EQ(step["name"].Scalar(), "s");
  EXPECT_EQ(root["base"].size(), 3u);  // the anchored mapping itself is unchanged
}

TEST(ResolveYaml, MergeListEarlierMappingsWinAndMergesNest) {
  YAML::Node root;
  Errors errors = Resolve(&root,
                          "a: &a {x: a, y: a}\n"
                          "b: &b {<<: *a, x: b, z: b}\n"
                          "c: {<<: [*b, *a], w: c}\n");
  ASSERT_TRUE(errors.empty()) << errors[0].ToString();
  YAML::Node c = root["c"];
  EXPECT_EQ(c["x"].Scalar(), "b");  // b's own x, over a's through b and a's directly
  EXPECT_EQ(c["y"].Scalar(), "a");
  EXPECT_EQ(c["z"].Scalar(), "b");
  EXPECT_EQ(c["w"].Scalar(), "c");
  EXPECT_EQ(c.size(), 4u);
}

TEST(ResolveYaml, QuotedMergeKeyIsAnOrdinaryKey) {
  YAML::Node root;
  Errors errors = Resolve(&root, "a: &a {x: 1}\nb: {\"<<\": *a}\n");
  ASSERT_TRUE(errors.empty());
  EXPECT_TRUE(root["b"]["<<"]);
  EXPECT_FALSE(root["b"]["x"]);
}

TEST(ResolveYaml, BadMergesAreErrorsAtTheMergeKey) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"s: &s text\nm:\n  <<: *s\n",
       "f.yaml:3:3: SPEC_PARSE_ERROR m.<<: a merge key (<<) needs a mapping or a list of "
       "mappings, not the value \"text\" (write <<: *anchor or <<: [*a, *b], each naming a "
       "mapping)"},
      {"m:\n  <<: [{a: 1}, 2]\n",
       "f.yaml:2:3: SPEC_PARSE_ERROR m.<<: a merge key (<<) lists the value \"2\", not a mapping "
       "(write <<: *anchor or <<: [*a, *b], each naming a mapping)"},
      {"m: &m\n  a: 1\n  n:\n    <<: *m\n",
       "f.yaml:4:5: SPEC_PARSE_ERROR m.n.<<: a merge key (<<) names a mapping that contains it "
       "(merge a mapping defined outside this one)"},
      {"a: &a {x: 1}\nm:\n  <<: *a\n  <<: *a\n",
       "f.yaml:4:3: SPEC_PARSE_ERROR m.<<: duplicate key \"<<\" (first at line 3:3) (merge "
       "several mappings with one key: <<: [*a, *b])"},
  };
  for (const auto& c : cases) {
    YAML::Node root;
    Errors errors = Resolve(&root, c.text);
    ASSERT_EQ(errors.size(), 1u) << c.text;
    EXPECT_EQ(errors[0].ToString(), c.error);
  }
}

TEST(ResolveYaml, SharedNodesAreVisitedOnceSoBillionLaughsIsFast) {
  std::string text = "l0: &l0 {a: 1, b: 2}\n";
  for (int i = 1; i <= 40; ++i) {
    std::string p = "*l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + p + ", " + p + ", " + p +
            ", " + p + "]\n";
  }
  text += "m: {<<: [*l0], c: 3}\n";  // 4^40 expanded nodes, ~100 distinct ones
  auto start = std::chrono::steady_clock::now();
  YAML::Node root;
  Errors errors = Resolve(&root, text);
  EXPECT_TRUE(errors.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // A merge of one large mapping into many others is capped.
  std::string big = "big: &big {";
  for (int i = 0; i < 1000; ++i) big += "k" + std::to_string(i) + ": 0, ";
  big += "}\nl:\n";
  for (int i = 0; i < 600; ++i) big += "  - {<<: *big}\n";
  errors = Resolve(&root, big);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("more than 500000 fields"), std::string::npos);
}

TEST(ResolveYaml, CyclicAliasesEndTheWalk) {
  YAML::Node root;
  EXPECT_TRUE(Resolve(&root, "&a [*a, {b: *a}]\n").empty());
}

TEST(LoadYaml, AppliesMergesAndRefusesDuplicates) {
  auto ok = LoadYaml("a: &a {x: 1}\nb: {<<: *a, y: 2}\n", "f.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ((*ok)["b"]["x"].as<int>(), 1);
  auto dup = LoadYaml("a: 1\na: 2\n", "f.yaml");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, codes::kSpecParseError);
  EXPECT_EQ(dup.error().pos.line, 2);
}

const char kHead[] = "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: w}\n";

TEST(ParseWorkloadYaml, TwoCommandKeysAreAnErrorNotASilentDrop) {
  ParseResult r = ParseWorkload(std::string(kHead) +
                                    "spec:\n  pipeline:\n    - name: a\n      command: [one]\n"
                                    "      image: i\n      command: [two]\n",
                                "w.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(
      r.errors[0].ToString(),
      "w.yaml:9:7: SPEC_PARSE_ERROR spec.pipeline.steps[0].command: duplicate key \"command\" "
      "(first at line 7:7) (keep one of the two; YAML would silently drop one)");
}

TEST(ParseWorkloadYaml, StepsShareSettingsThroughMergeKeys) {
  ParseResult r = ParseWorkload(std::string(kHead) +
                                    "spec:\n  pipeline:\n"
                                    "    - &defaults\n      name: prep\n      image: volc/x:1\n"
                                    "      command: [python, prep.py]\n"
                                    "      retryPolicy: {maxRetries: 2}\n"
                                    "    - <<: *defaults\n      name: train\n"
                                    "      command: [python, train.py]\n      dependsOn: [prep]\n",
                                "w.yaml");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  ASSERT_EQ(r.workload.pipeline.steps.size(), 2u);
  const auto& train = r.workload.pipeline.steps[1];
  EXPECT_EQ(train.name, "train");
  EXPECT_EQ(train.image, "volc/x:1");
  EXPECT_EQ(train.command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(train.retry.max_retries, 2);
  // The canonical form holds the merged fields, not the merge.
  EXPECT_EQ(CanonicalJson(r.workload).find("<<"), std::string::npos);
}

}  // namespace
}  // namespace rsl::spec
