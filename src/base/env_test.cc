// The Env: the real one on a temporary directory and real processes, the in-memory FakeEnv
// against the same expectations, and FaultEnv's counting and failing.
#include "base/env.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include "base/codes.h"
#include "base/fake_env.h"
#include "base/fault_env.h"

namespace rsl {
namespace {

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The same file-system contract, for the real Env (in a fresh directory) and the fake one.
class EnvFilesTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      env_ = Env::Default();
      root_ = ::testing::TempDir() + "env_test_" + std::to_string(getpid());
      std::filesystem::remove_all(root_);
    } else {
      fake_ = std::make_unique<FakeEnv>();
      env_ = fake_.get();
      root_ = "/tmp/env_test";
    }
    ASSERT_TRUE(env_->MakeDirs(root_ + "/a/b").ok());
  }
  void TearDown() override {
    if (GetParam()) std::filesystem::remove_all(root_);
  }
  Env* env_ = nullptr;
  std::unique_ptr<FakeEnv> fake_;
  std::string root_;
};

TEST_P(EnvFilesTest, WritesReadsListsAndRemoves) {
  ASSERT_TRUE(env_->WriteFile(root_ + "/a/f", "one", false).ok());
  ASSERT_TRUE(env_->WriteFileAtomic(root_ + "/a/g", "two").ok());
  EXPECT_EQ(*env_->ReadFile(root_ + "/a/f"), "one");
  EXPECT_EQ(*env_->ReadFile(root_ + "/a/g"), "two");
  EXPECT_EQ(Sorted(*env_->ListDir(root_ + "/a")), (std::vector<std::string>{"b", "f", "g"}));
  EXPECT_TRUE(env_->IsDirectory(root_ + "/a/b"));
  EXPECT_FALSE(env_->IsDirectory(root_ + "/a/f"));
  auto info = env_->Stat(root_ + "/a/g");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->type, FileInfo::Type::kRegular);
  EXPECT_EQ(info->size, 3);
  EXPECT_EQ(env_->Stat(root_ + "/none").status().code(), codes::kNotFound);
  EXPECT_TRUE(env_->SyncFile(root_ + "/a/f").ok());
  EXPECT_TRUE(env_->SyncDir(root_ + "/a").ok());
  ASSERT_TRUE(env_->WriteFile(root_ + "/a/b/deep", "x", true).ok());
  EXPECT_EQ(TreeBytes(env_, root_), 7);
  ASSERT_TRUE(env_->RemoveAll(root_ + "/a").ok());
  EXPECT_FALSE(env_->PathExists(root_ + "/a/b/deep"));
  EXPECT_FALSE(env_->PathExists(root_ + "/a"));
  EXPECT_TRUE(env_->RemoveAll(root_ + "/a").ok());  // missing: not an error
  Status read = env_->ReadFile(root_ + "/a/f").status();
  EXPECT_EQ(read.error().message,
            "cannot open " + root_ + "/a/f: " + std::string(strerror(ENOENT)));
  EXPECT_EQ(read.error().value, root_ + "/a/f");
}

TEST_P(EnvFilesTest, RenameKeepsPosixMeaningInItsCodes) {
  ASSERT_TRUE(env_->WriteFile(root_ + "/a/b/out", "1", false).ok());
  ASSERT_TRUE(env_->MakeDirs(root_ + "/empty").ok());
  // A directory replaces an empty one, moving what is inside it.
  ASSERT_TRUE(env_->Rename(root_ + "/a", root_ + "/empty").ok());
  EXPECT_EQ(*env_->ReadFile(root_ + "/empty/b/out"), "1");
  EXPECT_FALSE(env_->PathExists(root_ + "/a"));
  Status missing = env_->Rename(root_ + "/a", root_ + "/x");
  EXPECT_EQ(missing.code(), codes::kNotFound);
  EXPECT_EQ(missing.error().message,
            "cannot rename " + root_ + "/a to " + root_ + "/x: " + std::string(strerror(ENOENT)));
  ASSERT_TRUE(env_->MakeDirs(root_ + "/full/sub").ok());
  EXPECT_EQ(env_->Rename(root_ + "/empty", root_ + "/full").code(), codes::kConflict);
  // A sibling whose name sorts next to it is not part of the directory.
  ASSERT_TRUE(env_->MakeDirs(root_ + "/empty-b").ok());
  ASSERT_TRUE(env_->Rename(root_ + "/empty", root_ + "/moved").ok());
  EXPECT_TRUE(env_->IsDirectory(root_ + "/empty-b"));
  EXPECT_EQ(*env_->ReadFile(root_ + "/moved/b/out"), "1");
}

TEST_P(EnvFilesTest, OpenDirToAddsBitsToDirectoriesOnly) {
  ASSERT_TRUE(env_->Chmod(root_ + "/a", 0700).ok());
  EXPECT_EQ(env_->Stat(root_ + "/a")->mode, 0700u);
  ASSERT_TRUE(env_->OpenDirTo(root_ + "/a", 0755).ok());
  EXPECT_EQ(env_->Stat(root_ + "/a")->mode, 0755u);
  ASSERT_TRUE(env_->WriteFile(root_ + "/f", "", false).ok());
  ASSERT_TRUE(env_->Chmod(root_ + "/f", 0600).ok());
  ASSERT_TRUE(env_->OpenDirTo(root_ + "/f", 0755).ok());
  EXPECT_EQ(env_->Stat(root_ + "/f")->mode, 0600u);
  EXPECT_TRUE(env_->OpenDirTo(root_ + "/none", 0755).ok());
}

TEST_P(EnvFilesTest, OpenDirToAndMeasureOpensAnOutputAndCountsItsFiles) {
  ASSERT_TRUE(env_->WriteFile(root_ + "/a/x", "abc", false).ok());
  ASSERT_TRUE(env_->WriteFile(root_ + "/a/.y", "defg", false).ok());
  ASSERT_TRUE(env_->WriteFile(root_ + "/a/b/z", "hijkl", false).ok());
  ASSERT_TRUE(env_->Symlink("x", root_ + "/a/l").ok());  // a link counts nothing
  ASSERT_TRUE(env_->Chmod(root_ + "/a", 0700).ok());
  EXPECT_EQ(env_->OpenDirToAndMeasure(root_ + "/a", 0755), 12);
  EXPECT_EQ(env_->Stat(root_ + "/a")->mode, 0755u);
  EXPECT_EQ(env_->OpenDirToAndMeasure(root_ + "/a/b", 0755), 5);
  EXPECT_EQ(env_->OpenDirToAndMeasure(root_ + "/none", 0755), 0);
  ASSERT_TRUE(env_->Chmod(root_ + "/a/x", 0600).ok());
  EXPECT_EQ(env_->OpenDirToAndMeasure(root_ + "/a/x", 0755), 0);
  EXPECT_EQ(env_->Stat(root_ + "/a/x")->mode, 0600u);
}

TEST_P(EnvFilesTest, ALockExcludesEveryOtherHolderUntilReleased) {
  std::string path = root_ + "/a/lock";
  auto first = env_->LockFile(path, 0);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  // A second holder in this very process is refused too (one lock per open file).
  auto second = env_->LockFile(path, 0);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), codes::kConflict);
  EXPECT_EQ(second.error().message, "lock " + path + " is held by another process");
  first->reset();
  EXPECT_TRUE(env_->LockFile(path, 0).ok());
  EXPECT_EQ(env_->LockFile(root_ + "/none/lock", 0).status().code(), codes::kNotFound);
}

TEST_P(EnvFilesTest, ASymlinkIsALinkAndNeverReplacesAnything) {
  ASSERT_TRUE(env_->Symlink("b", root_ + "/a/l").ok());
  EXPECT_EQ(env_->Stat(root_ + "/a/l")->type, FileInfo::Type::kLink);
  EXPECT_EQ(env_->Symlink("c", root_ + "/a/l").code(), codes::kConflict);
  // Renamed over another link: the way a pointer moves in one step.
  ASSERT_TRUE(env_->Symlink("c", root_ + "/a/m").ok());
  ASSERT_TRUE(env_->Rename(root_ + "/a/m", root_ + "/a/l").ok());
  EXPECT_EQ(env_->Stat(root_ + "/a/l")->type, FileInfo::Type::kLink);
  EXPECT_FALSE(env_->PathExists(root_ + "/a/m"));
}

INSTANTIATE_TEST_SUITE_P(RealAndFake, EnvFilesTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Posix" : "Fake"; });

TEST(PosixEnvTest, OpenDirToNeverFollowsALink) {
  std::string root = ::testing::TempDir() + "env_link_" + std::to_string(getpid());
  std::filesystem::remove_all(root);
  Env* env = Env::Default();
  ASSERT_TRUE(env->MakeDirs(root + "/target").ok());
  ASSERT_TRUE(env->Chmod(root + "/target", 0700).ok());
  std::filesystem::create_directory_symlink(root + "/target", root + "/link");
  EXPECT_TRUE(env->OpenDirTo(root + "/link", 0755).ok());
  EXPECT_EQ(env->Stat(root + "/target")->mode, 0700u);
  EXPECT_EQ(env->Stat(root + "/link")->type, FileInfo::Type::kLink);
  std::filesystem::remove_all(root);
}

// The one-descriptor walk gives what OpenDirTo and TreeBytes give: over several getdents
// buffers, with subdirectories, links, a FIFO, and a link in the directory's own place.
TEST(PosixEnvTest, OpenDirToAndMeasureGivesWhatTheComposedCallsGive) {
  std::string root = ::testing::TempDir() + "env_measure_" + std::to_string(getpid());
  std::filesystem::remove_all(root);
  Env* env = Env::Default();
  std::string out = root + "/out";
  ASSERT_TRUE(env->MakeDirs(out + "/sub/deeper").ok());
  int64_t expected = 0;
  for (int i = 0; i < 600; ++i) {  // ~60 KB of names: several 8 KiB getdents buffers
    std::string body(size_t(i % 7), 'x');
    ASSERT_TRUE(
        env->WriteFile(out + "/file-with-a-long-name-" + std::to_string(i) + std::string(60, 'n'),
                       body, false)
            .ok());
    expected += int64_t(body.size());
  }
  ASSERT_TRUE(env->WriteFile(out + "/sub/deeper/f", "123456789", false).ok());
  expected += 9;
  ASSERT_EQ(mkfifo((out + "/fifo").c_str(), 0600), 0);
  ASSERT_TRUE(env->WriteFile(root + "/outside", "0123456789", false).ok());
  std::filesystem::create_symlink(root + "/outside", out + "/to-outside");
  ASSERT_EQ(TreeBytes(env, out), expected);
  ASSERT_TRUE(env->Chmod(out, 0700).ok());
  EXPECT_EQ(env->OpenDirToAndMeasure(out, 0755), expected);
  EXPECT_EQ(env->Stat(out)->mode, 0755u);
  // A link where the output should be: its target is measured, never opened to readers.
  ASSERT_TRUE(env->MakeDirs(root + "/target").ok());
  ASSERT_TRUE(env->WriteFile(root + "/target/t", "ab", false).ok());
  ASSERT_TRUE(env->Chmod(root + "/target", 0700).ok());
  std::filesystem::create_directory_symlink(root + "/target", root + "/link");
  EXPECT_EQ(env->OpenDirToAndMeasure(root + "/link", 0755), TreeBytes(env, root + "/link"));
  EXPECT_EQ(env->Stat(root + "/target")->mode, 0700u);
  std::filesystem::remove_all(root);
}

TEST(PosixEnvTest, ALockWaitsForItsHolderUpToTheTimeout) {
  std::string dir = ::testing::TempDir() + "env_lock_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  Env* env = Env::Default();
  auto held = env->LockFile(dir + "/lock", 0);
  ASSERT_TRUE(held.ok());
  int64_t start = env->MonotonicMs();
  EXPECT_EQ(env->LockFile(dir + "/lock", 100).status().code(), codes::kConflict);
  EXPECT_GE(env->MonotonicMs() - start, 100);
  std::thread release([&] {
    env->SleepMs(50);
    held->reset();
  });
  auto waited = env->LockFile(dir + "/lock", 60'000);  // generous: a loaded machine
  release.join();
  EXPECT_TRUE(waited.ok());
  std::filesystem::remove_all(dir);
}

TEST(PosixEnvTest, RunsAProcessWithItsEnvironmentAndDirectory) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo \"$GREETING\"; pwd; echo oops >&2; exit 3"};
  spec.env = std::map<std::string, std::string>{{"GREETING", "hello"}, {"PATH", "/usr/bin:/bin"}};
  spec.cwd = "/";
  auto r = Env::Default()->RunProcess(spec);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->out, "hello\n/\n");
  EXPECT_EQ(r->err, "oops\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->signal, 0);
  EXPECT_FALSE(r->timed_out);
  spec.stderr_to = ProcessSpec::Stderr::kMerge;
  r = Env::Default()->RunProcess(spec);
  EXPECT_EQ(r->out, "hello\n/\noops\n");
  spec.stderr_to = ProcessSpec::Stderr::kDiscard;
  r = Env::Default()->RunProcess(spec);
  EXPECT_EQ(r->out, "hello\n/\n");
  EXPECT_EQ(r->err, "");
}

TEST(PosixEnvTest, ReportsSignalsAndProgramsThatCannotStart) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "kill -TERM $$"};
  auto r = Env::Default()->RunProcess(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_EQ(r->signal, SIGTERM);
  spec.argv = {"/nonexistent/program"};
  auto missing = Env::Default()->RunProcess(spec);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, codes::kIoError);
  EXPECT_EQ(missing.error().message,
            "cannot run /nonexistent/program: " + std::string(strerror(ENOENT)));
}

TEST(PosixEnvTest, TimeoutKillsTheWholeProcessGroup) {
  std::string marker = ::testing::TempDir() + "env_orphan_" + std::to_string(getpid());
  std::filesystem::remove(marker);
  ProcessSpec spec;
  // The background child would write the marker after the timeout, were it not killed with
  // its parent's group.
  spec.argv = {"sh", "-c", "(sleep 1; touch " + marker + ") & sleep 30"};
  spec.timeout_ms = 200;
  Env* env = Env::Default();
  int64_t t0 = env->MonotonicMs();
  auto r = env->RunProcess(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_LT(env->MonotonicMs() - t0, 5000);
  env->SleepMs(1500);
  EXPECT_FALSE(env->PathExists(marker));
}

TEST(PosixEnvTest, TooMuchOutputStopsTheProcess) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "yes"};
  spec.max_output = 1000;
  spec.timeout_ms = 10'000;
  auto r = Env::Default()->RunProcess(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->output_exceeded);
  EXPECT_FALSE(r->timed_out);
}

TEST(FakeEnvTest, TimeMovesOnlyWhenTold) {
  FakeEnv env(1000);
  EXPECT_EQ(env.NowMs(), 1000);
  env.Advance(500);
  EXPECT_EQ(env.NowMs(), 1500);
  EXPECT_EQ(env.MonotonicMs(), 1500);
  env.SleepMs(100);  // sleeping is time passing
  EXPECT_EQ(env.NowMs(), 1600);
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  env.WaitUntil(cv, lock, 1600);  // due: returns at once
  EXPECT_EQ(env.NowMs(), 1600);
}

TEST(FakeEnvTest, ProcessesFollowTheScript) {
  FakeEnv env;
  ProcessSpec sinfo;
  sinfo.argv = {"sinfo"};
  EXPECT_FALSE(env.RunProcess(sinfo).ok());
  env.SetProcessScript([](const ProcessSpec& spec) -> Result<ProcessResult> {
    ProcessResult r;
    r.exit_code = 0;
    r.out = spec.argv[0] + " ran";
    return r;
  });
  ProcessSpec squeue;
  squeue.argv = {"squeue", "--json"};
  auto r = env.RunProcess(squeue);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "squeue ran");
  ASSERT_EQ(env.processes_run().size(), 2u);
  EXPECT_EQ(env.processes_run()[1].argv[1], "--json");
}

TEST(FakeEnvTest, TreeShowsWhatIsThere) {
  FakeEnv env;
  ASSERT_TRUE(env.MakeDirs("/r/x").ok());
  ASSERT_TRUE(env.WriteFile("/r/x/f", "1", false).ok());
  EXPECT_EQ(env.Tree(), (std::vector<std::string>{"/r/", "/r/x/", "/r/x/f"}));
  EXPECT_FALSE(env.WriteFile("/nowhere/f", "1", false).ok());
  EXPECT_FALSE(env.MakeDirs("/r/x/f/g").ok());
}

TEST(FaultEnvTest, FailsTheNthCallOfAKindOnce) {
  FakeEnv fake;
  FaultEnv env(&fake);
  ASSERT_TRUE(env.MakeDirs("/d").ok());
  env.FailNth(FaultEnv::Op::kRename, 2, EXDEV);
  ASSERT_TRUE(env.WriteFile("/d/a", "1", false).ok());
  EXPECT_TRUE(env.Rename("/d/a", "/d/b").ok());
  Status second = env.Rename("/d/b", "/d/c");
  EXPECT_EQ(second.code(), codes::kIoError);
  EXPECT_EQ(second.error().message, "cannot rename /d/b to /d/c: " + std::string(strerror(EXDEV)));
  EXPECT_TRUE(fake.PathExists("/d/b"));  // the failed call did nothing
  EXPECT_TRUE(env.Rename("/d/b", "/d/c").ok());
  EXPECT_EQ(env.count(FaultEnv::Op::kRename), 3);
  EXPECT_EQ(env.failures(), 1);
}

TEST(FaultEnvTest, PathFaultsFailEveryCallOnTheirPathsOnly) {
  FakeEnv fake;
  FaultEnv env(&fake);
  ASSERT_TRUE(env.MakeDirs("/good").ok());
  ASSERT_TRUE(env.MakeDirs("/bad").ok());
  env.FailPaths(FaultEnv::Op::kRename, "/bad/", EIO);
  ASSERT_TRUE(env.WriteFile("/good/a", "1", false).ok());
  EXPECT_TRUE(env.Rename("/good/a", "/good/b").ok());
  EXPECT_EQ(env.Rename("/good/b", "/bad/b").code(), codes::kIoError);  // either path
  ASSERT_TRUE(env.WriteFile("/bad/c", "1", false).ok());               // other kinds pass
  EXPECT_EQ(env.Rename("/bad/c", "/good/c").code(), codes::kIoError);
  EXPECT_EQ(env.Rename("/bad/c", "/good/c").code(), codes::kIoError);  // every time
  EXPECT_TRUE(fake.PathExists("/good/b"));
  EXPECT_EQ(env.failures(), 3);
  env.Heal();
  EXPECT_TRUE(env.Rename("/bad/c", "/good/c").ok());
}

TEST(FaultEnvTest, StickyFaultsLastAndWriteFileAtomicCleansUp) {
  FakeEnv fake;
  FaultEnv env(&fake);
  ASSERT_TRUE(env.MakeDirs("/d").ok());
  ASSERT_TRUE(env.WriteFileAtomic("/d/m", "old").ok());
  EXPECT_EQ(env.count(FaultEnv::Op::kSync), 2);  // the file, then its directory
  env.FailNth(FaultEnv::Op::kSync, 1, EIO, /*sticky=*/true);
  Status s = env.WriteFileAtomic("/d/m", "new");
  EXPECT_EQ(s.error().message, "cannot fsync /d/m.tmp." + std::to_string(getpid()) + ": " +
                                   std::string(strerror(EIO)));
  EXPECT_FALSE(env.SyncDir("/d").ok());
  EXPECT_EQ(*fake.ReadFile("/d/m"), "old");  // never half: the old contents, no temporary
  EXPECT_EQ(fake.Tree(), (std::vector<std::string>{"/d/", "/d/m"}));
  env.FailNth(FaultEnv::Op::kWrite, 1, ENOSPC);
  s = env.WriteFileAtomic("/d/m", "new");
  EXPECT_NE(s.error().message.find(strerror(ENOSPC)), std::string::npos);
  env.Heal();
  EXPECT_TRUE(env.WriteFileAtomic("/d/m", "new").ok());
  EXPECT_EQ(*fake.ReadFile("/d/m"), "new");
}

}  // namespace
}  // namespace rsl
