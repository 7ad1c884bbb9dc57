#include "spec/capabilities.h"

#include <gtest/gtest.h>

#include "spec/parse.h"

namespace rsl::spec {
namespace {

TEST(CapabilitiesTest, BuiltInScores) {
  const auto& c = CapabilityCatalog::BuiltIn();
  EXPECT_EQ(c.Score("tensor_core", "A100"), 100);
  EXPECT_EQ(c.Score("tensor_core", "a10"), 80);
  EXPECT_EQ(c.Score("bf16_support", "V100"), 0);
  EXPECT_EQ(c.Score("fp8_support", "H100"), 100);
  EXPECT_EQ(c.Score("nope", "A100"), 0);
  EXPECT_TRUE(c.Has("low_latency"));
  EXPECT_TRUE(c.Has("mig"));
  auto t4 = c.CapabilitiesOf("T4");
  EXPECT_NE(std::find(t4.begin(), t4.end(), "int8_support"), t4.end());
  EXPECT_EQ(std::find(t4.begin(), t4.end(), "bf16_support"), t4.end());
  auto models = c.Models();
  for (const char* m : {"A100", "A800", "H100", "A10", "L4", "V100", "T4"}) {
    EXPECT_NE(std::find(models.begin(), models.end(), m), models.end()) << m;
  }
}

TEST(CapabilitiesTest, ExtendedByFile) {
  auto c = CapabilityCatalog::Parse(
      "capabilities:\n"
      "  - name: tensor_core\n"
      "    scores: {MyGPU: 90}\n"
      "  - name: fast_interconnect\n"
      "    description: 400G fabric\n"
      "    scores: {H100: 100}\n",
      "caps.yaml");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->Score("tensor_core", "MyGPU"), 90);
  EXPECT_EQ(c->Score("tensor_core", "A100"), 100);  // built-in kept
  EXPECT_EQ(c->Score("fast_interconnect", "H100"), 100);
  auto bad =
      CapabilityCatalog::Parse("capabilities:\n  - name: x\n    scores: {A: 300}\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().ToString(),
            "c.yaml:3:17: SPEC_INVALID: score for \"A\" must be 0..100 (0 means the model lacks "
            "the capability)");
  EXPECT_FALSE(CapabilityCatalog::Parse("[1, 2]", "c.yaml").ok());
  EXPECT_FALSE(CapabilityCatalog::Parse("capabilities:\n  - name: Bad-Name\n", "c.yaml").ok());

  // Validation accepts names from an extended catalog or from extra_capabilities.
  const std::string spec =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: x}\n"
      "spec:\n  resources: {gpu: {count: 1, capability: [fast_interconnect]}}\n"
      "  pipeline: [{name: a, command: [x]}]\n";
  EXPECT_FALSE(ParseWorkload(spec, "s.yaml").ok());
  ParseOptions with_catalog;
  with_catalog.catalog = &c.value();
  EXPECT_TRUE(ParseWorkload(spec, "s.yaml", with_catalog).ok());
  ParseOptions with_extra;
  with_extra.extra_capabilities = {"fast_interconnect"};
  EXPECT_TRUE(ParseWorkload(spec, "s.yaml", with_extra).ok());
}

}  // namespace
}  // namespace rsl::spec
