// The runtime builds a working stack: a small workload runs to completion on the local
// backend; paths come out normalised; bad options fail with the backend's errors.
#include "runtime/runtime.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "base/codes.h"
#include "base/file.h"
#include "spec/parse.h"

namespace rsl::runtime {
namespace {

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/rsl-runtime-test-" + std::to_string(getpid());
    RemoveAll(dir_);
    ASSERT_TRUE(MakeDirs(dir_).ok());
    ::chmod(dir_.c_str(), 0755);  // steps run as other users: their directories are below
    setenv("RSL_SHIM", (std::string(RSL_BINARY_DIR) + "/bin/rsl-shim").c_str(), 1);
  }
  void TearDown() override { RemoveAll(dir_); }

  // The error of opening a runtime on a fresh state directory with `o`'s backend options.
  Error OpenFails(RuntimeOptions o) {
    o.state_dir = dir_ + "/state";
    auto rt = Runtime::Open(o);
    EXPECT_FALSE(rt.ok());
    return rt.ok() ? Error(codes::kInternal, "opened") : rt.error();
  }

  std::string dir_;
};

TEST_F(RuntimeTest, NormalizesPaths) {
  RuntimeOptions o;
  o.state_dir = "relative/./state//";
  ASSERT_TRUE(NormalizePaths(&o).ok());
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(o.state_dir, std::string(cwd) + "/relative/state");
  EXPECT_EQ(o.runs_dir, std::string(cwd) + "/relative/state-runs");

  o.state_dir = "/a/b/../c/";
  o.runs_dir = "/runs/here/";
  ASSERT_TRUE(NormalizePaths(&o).ok());
  EXPECT_EQ(o.state_dir, "/a/c");
  EXPECT_EQ(o.runs_dir, "/runs/here");

  RuntimeOptions none;
  Status st = NormalizePaths(&none);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), codes::kInvalidArgument);
}

TEST_F(RuntimeTest, RunsAWorkloadToCompletionWithTheLocalBackend) {
  RuntimeOptions o;
  o.state_dir = dir_ + "/state/";
  o.lock = true;
  auto rt = Runtime::Open(o);
  ASSERT_TRUE(rt.ok()) << rt.error().ToString();
  EXPECT_EQ((*rt)->state_dir(), dir_ + "/state");
  EXPECT_EQ((*rt)->runs_dir(), dir_ + "/state-runs");
  EXPECT_EQ((*rt)->backend()->name(), "local");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // A second runtime on the same state directory, asking for the lock, is refused.
  auto second = Runtime::Open(o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, codes::kConflict);

  std::string out = dir_ + "/published";
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: hello\n"
      "spec:\n  resources: {cpu: 100m, memory: 64Mi}\n"
      "  data:\n    output:\n      uri: file://" +
      out +
      "\n"
      "  pipeline:\n    - name: greet\n"
      "      command: [sh, -c, 'echo hello > \"$RSL_OUTPUT/greeting.txt\"']\n";
  auto parsed = spec::ParseWorkload(yaml, "hello.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0].ToString();
  engine::Engine* eng = (*rt)->engine();
  ASSERT_TRUE(eng->Start().ok());
  auto id = eng->Submit(parsed.workload, "test");
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  auto run = eng->Wait(*id, 60000);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded)
      << run->failure_code << " " << run->failure_message;
  auto stored = (*rt)->store()->GetRun(run->id);
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_EQ(stored->phase, spec::RunPhase::kSucceeded);
  auto greeting = ReadFile(out + "/greet/greeting.txt");
  ASSERT_TRUE(greeting.ok()) << greeting.error().ToString();
  EXPECT_EQ(*greeting, "hello\n");

  ASSERT_TRUE((*rt)->PublishAddress("http://127.0.0.1:1").ok());
  auto addr = ReadFile(dir_ + "/state/controller.addr");
  ASSERT_TRUE(addr.ok());
  EXPECT_EQ(*addr, "http://127.0.0.1:1\n");
  eng->Stop();
  rt->reset();
  // The lock went with the runtime.
  auto again = Runtime::Open(o);
  EXPECT_TRUE(again.ok()) << again.error().ToString();
}

TEST_F(RuntimeTest, UnknownBackendOrStepIsolationIsAnError) {
  RuntimeOptions bad_backend;
  bad_backend.backend = "slrum";
  Error e = OpenFails(bad_backend);
  EXPECT_EQ(e.code, codes::kInvalidArgument);
  EXPECT_EQ(e.message, "unknown backend \"slrum\"");
  EXPECT_EQ(e.hint, "use --backend local, slurm or k8s");

  RuntimeOptions bad_isolation;
  bad_isolation.backend_options.isolation = "sometimes";
  e = OpenFails(bad_isolation);
  EXPECT_EQ(e.code, codes::kInvalidArgument);
  EXPECT_EQ(e.message, "unknown step isolation \"sometimes\"");
  EXPECT_EQ(e.hint, "use auto, users, user:NAME, namespace or none");
}

}  // namespace
}  // namespace rsl::runtime
