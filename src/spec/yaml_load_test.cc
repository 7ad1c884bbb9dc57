#include "spec/yaml_load.h"

#include <gtest/gtest.h>

#include "base/codes.h"

namespace rsl::spec {
namespace {

TEST(LoadYaml, ParsesAMapping) {
  auto root = LoadYaml("a: 1\nb: [x, y]\n", "f.yaml");
  ASSERT_TRUE(root.ok()) << root.error().ToString();
  EXPECT_EQ((*root)["a"].as<int>(), 1);
  EXPECT_EQ((*root)["b"].size(), 2u);
}

TEST(LoadYaml, BadYamlIsAParseErrorAtItsPlace) {
  auto root = LoadYaml("a: 1\nb: [x, y\n", "f.yaml");
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.error().code, codes::kSpecParseError);
  EXPECT_EQ(root.error().pos.file, "f.yaml");
  EXPECT_GE(root.error().pos.line, 2);
}

}  // namespace
}  // namespace rsl::spec
