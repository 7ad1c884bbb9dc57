#include "govern/precision.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/file.h"

namespace rsl::govern {
namespace {

TEST(Precision, FindingIds) {
  struct Case {
    const char* yaml;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"precision_policy:\n  default: fp16\n  overrides:\n  - {module: embedding, dtype: bf16}\n"
       "  - {module: lm_head, dtype: bf16}\n",
       {}},
      {"precision_policy: {default: fp16}\n", {"PREC003", "PREC004"}},
      {"precision_policy:\n  default: fp16\n  overrides:\n  - {module: lm_head, dtype: bf16}\n",
       {"PREC003"}},
      {"precision_policy: {default: bf16, overrides: [{module: lm_head, dtype: fp16}]}\n",
       {"PREC004"}},
      {"precision_policy: {default: bf61}\n", {"PREC001"}},
      {"precision_policy: {overrides: []}\n", {"PREC002"}},
      {"trainer: {lr: 1}\n", {"PREC002"}},
      {"model:\n  precision_policy:\n    default: bf16\n    overrides:\n    - {module: "
       "embed_tokens, dtype: fp16}\n"
       "    - {module: embed_tokens, dtype: bf16}\n    - {dtype: bf16}\n",
       {"PREC005", "PREC002"}},
  };
  for (const auto& c : cases) {
    Report r("advise precision", PrecisionRules());
    auto plan = CheckPrecision(c.yaml, "config.yaml", &r);
    ASSERT_TRUE(plan.ok()) << c.yaml;
    std::vector<std::string> ids = r.Ids();
    std::sort(ids.begin(), ids.end());
    std::vector<std::string> want = c.want;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(ids, want) << c.yaml << r.RenderTable();
  }
  Report r("advise precision", PrecisionRules());
  EXPECT_FALSE(CheckPrecision("a: [", "config.yaml", &r).ok());
}

TEST(Precision, SeedConfig) {
  auto text = ReadFile(std::string(RSL_SOURCE_DIR) + "/tests/govern/testdata/precision.yaml");
  ASSERT_TRUE(text.ok());
  Report r("advise precision", PrecisionRules());
  auto plan = CheckPrecision(*text, "precision.yaml", &r);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(r.findings().empty()) << r.RenderTable();
  EXPECT_EQ(plan->default_dtype, "fp16");
  EXPECT_EQ(plan->embedding_dtype, "bf16");
  EXPECT_EQ(plan->lm_head_dtype, "bf16");
}

}  // namespace
}  // namespace rsl::govern
