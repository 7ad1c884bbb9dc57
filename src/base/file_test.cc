// Reading files someone else controls (a step's reports and outputs, read by a controller
// that may be root): links, FIFOs and hard links are refused, never followed or blocked on.
#include "base/file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/test_util.h"

namespace rsl {
namespace {

TEST(FileTest, UntrustedReadsTakeRegularFilesWithOneLinkOnly) {
  testing::TempDir tmp("file_test_untrusted");
  std::string d = tmp.path();
  ASSERT_TRUE(WriteFileAtomic(d + "/metrics.json", "{\"auc\": 1}").ok());
  ASSERT_TRUE(WriteFileAtomic(d + "/secret", "root only").ok());
  auto ok = ReadUntrustedFileIfExists(d + "/metrics.json", 1024);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(**ok, "{\"auc\": 1}");
  auto missing = ReadUntrustedFileIfExists(d + "/none", 1024);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());

  ASSERT_EQ(symlink((d + "/secret").c_str(), (d + "/link").c_str()), 0);
  auto link = ReadUntrustedFileIfExists(d + "/link", 1024);
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.error().code, "INVALID_ARGUMENT");
  EXPECT_NE(link.error().message.find("symbolic link"), std::string::npos);

  ASSERT_EQ(link.error().value, d + "/link");
  ASSERT_EQ(::link((d + "/secret").c_str(), (d + "/hard").c_str()), 0);
  EXPECT_EQ(ReadUntrustedFileIfExists(d + "/hard", 1024).error().code, "INVALID_ARGUMENT");

  // A FIFO with no writer would block an ordinary open for ever.
  ASSERT_EQ(mkfifo((d + "/fifo").c_str(), 0644), 0);
  EXPECT_EQ(ReadUntrustedFileIfExists(d + "/fifo", 1024).error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(ReadUntrustedFileIfExists(d + "/metrics.json", 4).error().code, "INVALID_ARGUMENT");
}

TEST(FileTest, ReadsBeneathARootRefuseEveryLinkOnTheWay) {
  testing::TempDir tmp("file_test_beneath");
  std::string d = tmp.path();
  std::string out = d + "/out";
  ASSERT_TRUE(MakeDirs(out + "/sub").ok());
  ASSERT_TRUE(WriteFileAtomic(out + "/sub/model.bin", "weights").ok());
  ASSERT_TRUE(WriteFileAtomic(d + "/outside", "not yours").ok());
  EXPECT_EQ(*ReadFileBeneath(out, "sub/model.bin"), "weights");

  ASSERT_EQ(symlink((d + "/outside").c_str(), (out + "/leak").c_str()), 0);
  ASSERT_EQ(symlink(d.c_str(), (out + "/up").c_str()), 0);
  ASSERT_EQ(symlink("model.bin", (out + "/sub/alias").c_str()), 0);  // even inside
  for (const char* rel : {"leak", "up/outside", "sub/alias", "../outside"}) {
    auto r = ReadFileBeneath(out, rel);
    ASSERT_FALSE(r.ok()) << rel;
    EXPECT_EQ(r.error().code, "INVALID_ARGUMENT") << rel << ": " << r.error().ToString();
  }
  EXPECT_EQ(ReadFileBeneath(out, "sub").error().code, "INVALID_ARGUMENT");  // a directory
  EXPECT_EQ(ReadFileBeneath(out, "none").error().code, "IO_ERROR");
}

TEST(FileTest, APrivateDirectoryIsTheOwnersAlone) {
  testing::TempDir tmp("file_test_private");
  std::string d = tmp.path() + "/state";
  ASSERT_TRUE(MakeDirs(d).ok());
  chmod(d.c_str(), 0755);
  ASSERT_TRUE(MakePrivateDir(d).ok());
  struct stat st {};
  ASSERT_EQ(stat(d.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST(FileTest, DirnameAsDirnameOne) {
  EXPECT_EQ(Dirname("/usr/libexec/rsl/rsl-shim"), "/usr/libexec/rsl");
  EXPECT_EQ(Dirname("runs/a/log"), "runs/a");
  EXPECT_EQ(Dirname("/rsl-shim"), "/");
  EXPECT_EQ(Dirname("rsl-shim"), ".");
}

}  // namespace
}  // namespace rsl
