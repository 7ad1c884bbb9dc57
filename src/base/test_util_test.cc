#include "base/test_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "base/file.h"

namespace rsl::testing {
namespace {

TEST(TempDirTest, MakesAPassableDirectoryAndRemovesTheTree) {
  std::string path;
  {
    TempDir dir("temp-dir-test");
    path = dir.path();
    ASSERT_FALSE(path.empty());
    EXPECT_EQ(std::filesystem::path(path).filename().string().rfind("temp-dir-test-", 0), 0u);
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0755u);
    std::string file = dir.Write("a/b/c.txt", "hello");
    EXPECT_EQ(file, dir / "a/b/c.txt");
    EXPECT_EQ(file, dir.Sub("a/b/c.txt"));
    auto text = ReadFile(file);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, "hello");
    // A read-only part does not stop the removal.
    chmod((dir / "a/b").c_str(), 0500);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TempDirTest, GoesUnderTheParentGiven) {
  TempDir parent("temp-dir-parent");
  TempDir child("child", parent.path());
  EXPECT_EQ(child.path().rfind(parent.path() + "/child-", 0), 0u);
}

}  // namespace
}  // namespace rsl::testing
