// `seedctl run` as a user runs it: exit status, the final table, the code on the last line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "base/file.h"
#include "base/strings.h"

namespace rsl {
namespace {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

Result Seedctl(const std::string& args) {
  std::string cmd = std::string(RSL_BINARY_DIR) + "/bin/seedctl " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string LastLine(const std::string& s) {
  auto lines = Split(std::string(Trim(s)), '\n');
  return lines.empty() ? "" : lines.back();
}

class SeedctlRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = ::testing::TempDir() + "seedctl_run_" + name + "_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  std::string Write(const std::string& pipeline, const std::string& extra = "") {
    std::string path = dir_ + "/wl.yaml";
    EXPECT_TRUE(WriteFileAtomic(path, "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
                                      "metadata:\n  name: cli\nspec:\n" + extra +
                                      "  pipeline:\n" + pipeline)
                    .ok());
    return path;
  }
  std::string Flags() { return " --state-dir " + dir_ + "/state --no-hooks"; }
  std::string dir_;
};

TEST_F(SeedctlRunTest, SucceedsWithATable) {
  auto r = Seedctl("run -f " + Write("    - {name: hello, command: [sh, -c, 'echo hi > $RSL_OUTPUT/x']}\n") +
                   Flags());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("STEP   PHASE      ATTEMPTS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hello  SUCCEEDED  1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" Started "), std::string::npos) << r.output;  // progress lines
  EXPECT_TRUE(StartsWith(LastLine(r.output), "workload wl-")) << r.output;
  EXPECT_NE(LastLine(r.output).find("SUCCEEDED"), std::string::npos);
}

TEST_F(SeedctlRunTest, FailureEndsWithTheCode) {
  auto r = Seedctl("run -f " + Write("    - {name: bad, command: [sh, -c, 'exit 3']}\n") + Flags());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(LastLine(r.output), "STEP_FAILED") << r.output;
  EXPECT_NE(r.output.find("bad   FAILED"), std::string::npos) << r.output;
}

TEST_F(SeedctlRunTest, ImpossibleRequestIsRejected) {
  auto r = Seedctl("run -f " +
                   Write("    - {name: big, command: ['true'], resources: {cpu: 4096}}\n") + Flags());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(LastLine(r.output), "INSUFFICIENT_RESOURCES") << r.output;
  EXPECT_NE(r.output.find("local: cpu 4096 >"), std::string::npos) << r.output;
}

TEST_F(SeedctlRunTest, JsonOutputAndBadFlags) {
  auto r = Seedctl("run -o json -f " + Write("    - {name: a, command: ['true']}\n") + Flags());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"phase\": \"SUCCEEDED\""), std::string::npos) << r.output;
  auto missing = Seedctl("run" + Flags());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(LastLine(missing.output), "INVALID_ARGUMENT");
  auto nofile = Seedctl("run -f " + dir_ + "/nope.yaml" + Flags());
  EXPECT_EQ(nofile.exit_code, 1);
  EXPECT_EQ(LastLine(nofile.output), "SPEC_PARSE_ERROR") << nofile.output;
}

TEST_F(SeedctlRunTest, RecoverWithNothingToDo) {
  auto r = Seedctl("run --recover" + Flags());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("nothing to recover"), std::string::npos);
}

}  // namespace
}  // namespace rsl
