// rsl-shim's directory and program-lookup helpers: what a launch does to the file system
// before its step starts (shim_dirs.h, shim_identity.h, shim_spawn.h's ProgramCache).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "backend/shim_dirs.h"
#include "backend/shim_identity.h"
#include "backend/shim_spawn.h"

namespace rsl::shim {
namespace {

namespace fs = std::filesystem;

class ShimDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rsl-shim-dirs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    old_umask_ = umask(022);
  }
  void TearDown() override {
    umask(old_umask_);
    SetKnownUmask(0777);  // back to "not known"
    fs::remove_all(dir_);
  }
  static mode_t Mode(const std::string& p) {
    struct stat st {};
    EXPECT_EQ(lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }
  static void Executable(const std::string& p) {
    std::ofstream(p) << "#!/bin/sh\nexit 0\n";
    ASSERT_EQ(chmod(p.c_str(), 0755), 0);
  }
  std::string dir_;
  mode_t old_umask_ = 022;
};

TEST_F(ShimDirsTest, MakeDirsSaysWhetherItMadeTheDirectoryAndSetsExactModes) {
  std::string leaf = dir_ + "/a/b/leaf";
  bool made = false;
  ASSERT_TRUE(MakeDirs(leaf, 0711, 0700, &made));
  EXPECT_TRUE(made);
  EXPECT_EQ(Mode(leaf), 0700u);
  EXPECT_EQ(Mode(dir_ + "/a/b"), 0711u);
  ASSERT_TRUE(MakeDirs(leaf, 0711, 0700, &made));
  EXPECT_FALSE(made);  // it was there

  // A umask that takes bits of the mode: known or not, the mode is exact.
  umask(077);
  ASSERT_TRUE(MakeDirs(dir_ + "/u1/leaf", 0711, 0700, &made));
  EXPECT_EQ(Mode(dir_ + "/u1"), 0711u);
  SetKnownUmask(077);
  ASSERT_TRUE(MakeDirs(dir_ + "/u2/leaf", 0711, 0700, &made));
  EXPECT_TRUE(made);
  EXPECT_EQ(Mode(dir_ + "/u2"), 0711u);
  EXPECT_EQ(Mode(dir_ + "/u2/leaf"), 0700u);
  // Known 022: 0711 and 0700 need no chmod, and are what mkdir makes.
  umask(022);
  SetKnownUmask(022);
  ASSERT_TRUE(MakeDirs(dir_ + "/u3/leaf", 0711, 0700, &made));
  EXPECT_EQ(Mode(dir_ + "/u3"), 0711u);
  EXPECT_EQ(Mode(dir_ + "/u3/leaf"), 0700u);

  // A file in the way: refused, with errno.
  std::ofstream(dir_ + "/file") << "x";
  errno = 0;
  EXPECT_FALSE(MakeDirs(dir_ + "/file/sub", 0711, 0700, &made));
  EXPECT_EQ(errno, ENOTDIR);
  EXPECT_FALSE(made);
}

TEST_F(ShimDirsTest, ASpareTakenIsNotReportedAsMade) {
  SpareDirs spares;
  std::string pool = dir_ + "/work";
  bool made = false;
  ASSERT_TRUE(spares.Make(pool, pool + "/s1.1", true, &made));
  EXPECT_TRUE(made);
  ASSERT_TRUE(spares.Recycle(pool + "/s1.1"));
  ASSERT_TRUE(spares.Make(pool, pool + "/s2.1", true, &made));
  EXPECT_FALSE(made);  // the spare, renamed
  EXPECT_FALSE(fs::exists(pool + "/s1.1"));
  EXPECT_TRUE(fs::is_directory(pool + "/s2.1"));
}

TEST_F(ShimDirsTest, GiveDirSetsOwnerAndModeAndRefusesALink) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  std::string d = dir_ + "/d";
  ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
  ASSERT_TRUE(GiveDir(d, uid, gid));
  EXPECT_EQ(Mode(d), 0700u);
  ASSERT_TRUE(GiveDir(d, uid, gid));  // already so
  EXPECT_EQ(Mode(d), 0700u);
  // Looks right, but for its mode: fixed.
  ASSERT_EQ(chmod(d.c_str(), 0777), 0);
  ASSERT_TRUE(GiveDir(d, uid, gid));
  EXPECT_EQ(Mode(d), 0700u);
  // A link in a directory's place, even to a directory that is already right: refused.
  std::string link = dir_ + "/link";
  ASSERT_EQ(symlink(d.c_str(), link.c_str()), 0);
  EXPECT_FALSE(GiveDir(link, uid, gid));
  // A new directory: given with one chown.
  std::string fresh = dir_ + "/fresh";
  ASSERT_EQ(mkdir(fresh.c_str(), 0700), 0);
  ASSERT_TRUE(GiveNewDir(fresh, uid, gid));
  struct stat st {};
  ASSERT_EQ(stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid);
  EXPECT_EQ(st.st_gid, gid);
  EXPECT_FALSE(GiveNewDir(dir_ + "/missing", uid, gid));
}

TEST_F(ShimDirsTest, ProgramCacheAnswersAsResolveProgramAndForgetsAfterItsTtl) {
  std::string a = dir_ + "/a", b = dir_ + "/b";
  fs::create_directories(a);
  fs::create_directories(b);
  Executable(b + "/tool");
  std::vector<std::string> env = {"PATH=" + a + ":" + b};
  ProgramCache cache;
  int64_t t = 1'000'000;
  EXPECT_EQ(cache.Resolve("tool", env, "/", t), b + "/tool");
  EXPECT_EQ(cache.Resolve("tool", env, "/", t), ResolveProgram("tool", env, "/"));
  // Installed in an earlier directory: the remembered answer holds for the TTL, not after.
  Executable(a + "/tool");
  EXPECT_EQ(cache.Resolve("tool", env, "/", t + ProgramCache::kTtlMs - 1), b + "/tool");
  EXPECT_EQ(cache.Resolve("tool", env, "/", t + ProgramCache::kTtlMs), a + "/tool");
  // Another PATH is another question.
  EXPECT_EQ(cache.Resolve("tool", {"PATH=" + b}, "/", t + ProgramCache::kTtlMs), b + "/tool");
  // Not found is never remembered.
  EXPECT_EQ(cache.Resolve("other", env, "/", t), "");
  Executable(b + "/other");
  EXPECT_EQ(cache.Resolve("other", env, "/", t), b + "/other");
  // A name with a slash is not looked up.
  EXPECT_EQ(cache.Resolve("./tool", env, "/", t), "");
}

TEST_F(ShimDirsTest, ProgramCacheLooksUpARelativePathEveryTime) {
  // "bin" and an empty entry depend on the working directory: never remembered.
  fs::create_directories(dir_ + "/w1/bin");
  fs::create_directories(dir_ + "/w2/bin");
  Executable(dir_ + "/w1/bin/tool");
  Executable(dir_ + "/w2/bin/tool");
  ProgramCache cache;
  for (const std::string path : {"PATH=bin", "PATH=/usr/bin:bin", "PATH=bin:/usr/bin"}) {
    std::vector<std::string> env = {path};
    EXPECT_EQ(cache.Resolve("tool", env, dir_ + "/w1", 0), "bin/tool") << path;
    fs::remove(dir_ + "/w2/bin/tool");
    EXPECT_EQ(cache.Resolve("tool", env, dir_ + "/w2", 0), "") << path;
    Executable(dir_ + "/w2/bin/tool");
  }
  Executable(dir_ + "/w1/tool");
  for (const std::string path : {"PATH=", "PATH=:/usr/bin", "PATH=/usr/bin:", "PATH=/nope::/x"}) {
    std::vector<std::string> env = {path};
    EXPECT_EQ(cache.Resolve("tool", env, dir_ + "/w1", 0),
              ResolveProgram("tool", env, dir_ + "/w1"))
        << path;
    EXPECT_EQ(cache.Resolve("tool", env, dir_ + "/w2", 0),
              ResolveProgram("tool", env, dir_ + "/w2"))
        << path;
  }
}

}  // namespace
}  // namespace rsl::shim
