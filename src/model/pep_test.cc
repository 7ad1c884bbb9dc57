#include "model/pep.h"

#include <gtest/gtest.h>

namespace rsl::model {
namespace {

TEST(PepTest, NormalizesNamesAsPep503) {
  EXPECT_EQ(NormalizeName("Scikit_Learn"), "scikit-learn");
  EXPECT_EQ(NormalizeName("zope.interface"), "zope-interface");
  EXPECT_EQ(NormalizeName("A-_.B"), "a-b");
  EXPECT_EQ(NormalizeName("PyYAML"), "pyyaml");
  EXPECT_EQ(NormalizeName("lazr.restfulclient"), "lazr-restfulclient");
}

TEST(PepTest, ParsesAndNormalizesVersions) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"2.1.2+cu118", "2.1.2+cu118"},
      {"v1.0", "1.0"},
      {"1.0-alpha_1", "1.0a1"},
      {"1.0.BETA", "1.0b0"},
      {"1.0c3", "1.0rc3"},
      {"1.0-1", "1.0.post1"},
      {"1.0.rev2", "1.0.post2"},
      {"1.0-dev", "1.0.dev0"},
      {"1!2.0rc1.post2.dev3+Ubuntu-01", "1!2.0rc1.post2.dev3+ubuntu.1"},
      {"2024.06.15", "2024.6.15"},
  };
  for (const auto& [text, normal] : cases) {
    auto v = ParsePep440(text);
    ASSERT_TRUE(v.has_value()) << text;
    EXPECT_EQ(v->ToString(), normal) << text;
  }
  EXPECT_FALSE(ParsePep440("2.0-foo-bar").has_value());
  EXPECT_FALSE(ParsePep440("").has_value());
  EXPECT_FALSE(ParsePep440("1.0+").has_value());
}

TEST(PepTest, MatchesLikePipEquality) {
  EXPECT_TRUE(VersionMatches("2.1.2+cu118", "2.1.2+cu118"));
  EXPECT_TRUE(VersionMatches("2.1.2", "2.1.2+cu118"));   // public pin ignores the local part
  EXPECT_FALSE(VersionMatches("2.1.2+cu118", "2.1.2"));  // a local pin needs the local part
  EXPECT_FALSE(VersionMatches("2.1.2+cu118", "2.1.2+cu121"));
  EXPECT_FALSE(VersionMatches("2.1.2+cu118", "1.13.1"));
  EXPECT_TRUE(VersionMatches("1.0", "1.0.0"));
  EXPECT_TRUE(VersionMatches("1.0a1", "1.0-alpha.1"));
  EXPECT_FALSE(VersionMatches("1.0", "1.0.post1"));
  EXPECT_FALSE(VersionMatches("1.0", "1.0rc1"));
  EXPECT_TRUE(VersionMatches("1.0+abc.7", "1.0+ABC-07"));
  EXPECT_TRUE(VersionMatches("2.1.*", "2.1.7"));
  EXPECT_FALSE(VersionMatches("2.1.*", "2.2.0"));
  EXPECT_TRUE(VersionMatches("weird-1", "WEIRD-1"));  // legacy versions: string equality
  EXPECT_FALSE(VersionMatches("weird-1", "weird-2"));
}

}  // namespace
}  // namespace rsl::model
