#include "spec/names.h"

#include <gtest/gtest.h>

#include "base/strings.h"

namespace rsl::spec {
namespace {

TEST(NamesTest, Dns1123) {
  EXPECT_EQ(CheckDns1123Label("fraud-detect-daily"), "");
  EXPECT_EQ(CheckDns1123Label("a1"), "");
  EXPECT_NE(CheckDns1123Label("Fraud"), "");
  EXPECT_NE(CheckDns1123Label("-a"), "");
  EXPECT_NE(CheckDns1123Label("a_b"), "");
  EXPECT_NE(CheckDns1123Label(std::string(64, 'a')), "");
  EXPECT_EQ(CheckDns1123Label(std::string(63, 'a')), "");
  EXPECT_EQ(CheckDns1123Subdomain("common.config"), "");
  EXPECT_NE(CheckDns1123Subdomain("common..config"), "");
}

// Configmap and secret keys: environment names that RSL does not set itself.
TEST(NamesTest, EnvFromKeys) {
  std::string hint;
  EXPECT_EQ(CheckEnvFromKey("DB_PASSWORD", true, &hint), "");
  EXPECT_EQ(CheckEnvFromKey("_x1", true, &hint), "");
  EXPECT_EQ(CheckEnvFromKey("", false, &hint),
            "key \"\" is not an environment variable name: it must not be empty");
  EXPECT_EQ(hint, "keys become environment variables: [A-Za-z_][A-Za-z0-9_]*, e.g. DB_PASSWORD");
  EXPECT_EQ(CheckEnvFromKey("A-B", false, &hint),
            "key \"A-B\" is not an environment variable name: it may contain only letters, "
            "digits and '_'");
  EXPECT_EQ(CheckEnvFromKey("RSL_OUTPUT", false, &hint),
            "key \"RSL_OUTPUT\" is reserved: RSL sets RSL_* itself");
  EXPECT_EQ(hint, "choose a name without the RSL_ prefix");
  EXPECT_EQ(
      CheckEnvFromKey("CUDA_VISIBLE_DEVICES", false, &hint),
      "key \"CUDA_VISIBLE_DEVICES\" is reserved: RSL sets it to the GPUs a step is placed on");
  // The engine's basic variables: a configmap may set them, a secret may not.
  for (const auto& name : EngineBasicEnvNames()) {
    EXPECT_EQ(CheckEnvFromKey(name, false, &hint), "") << name;
    EXPECT_EQ(CheckEnvFromKey(name, true, &hint),
              "key " + Quote(name) + " is reserved for secrets: the engine sets it for every step")
        << name;
  }
  EXPECT_FALSE(MaskedInLogs("abc"));
  EXPECT_TRUE(MaskedInLogs("abcd"));
}

TEST(NamesTest, DigestsEnvSemverLabels) {
  EXPECT_EQ(CheckSha256Digest("sha256:" + std::string(64, 'a')), "");
  EXPECT_NE(CheckSha256Digest("sha256:" + std::string(63, 'a')), "");
  EXPECT_NE(CheckSha256Digest("sha256:" + std::string(64, 'A')), "");
  EXPECT_NE(CheckSha256Digest("md5:" + std::string(64, 'a')), "");
  EXPECT_EQ(CheckEnvName("RUN_MODE"), "");
  EXPECT_NE(CheckEnvName("1X"), "");
  EXPECT_NE(CheckEnvName("A-B"), "");
  EXPECT_EQ(CheckSemver("2.1.7"), "");
  EXPECT_EQ(CheckSemver("1.0.0-rc.1+build.5"), "");
  EXPECT_NE(CheckSemver("2.1"), "");
  EXPECT_NE(CheckSemver("v2.1.7"), "");
  EXPECT_NE(CheckSemver("01.1.1"), "");
  EXPECT_EQ(CheckLabelKey("example.com/team"), "");
  EXPECT_NE(CheckLabelKey("Bad Key"), "");
  EXPECT_EQ(CheckLabelValue(""), "");
  EXPECT_NE(CheckLabelValue("a b"), "");
  EXPECT_TRUE(IsDtype("bfloat16"));
  EXPECT_FALSE(IsDtype("float"));
}

TEST(NamesTest, DidYouMean) {
  EXPECT_EQ(DidYouMean("trian", {"ingest", "train"}), "train");
  EXPECT_EQ(DidYouMean("dependOn", {"dependsOn", "when"}), "dependsOn");
  EXPECT_EQ(DidYouMean("zzz", {"train"}), "");
}

}  // namespace
}  // namespace rsl::spec
