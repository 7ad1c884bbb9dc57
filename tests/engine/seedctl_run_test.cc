// `seedctl run` as a user runs it: exit status, the final table, the code on the last line.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <thread>

#include "base/file.h"
#include "base/strings.h"

namespace rsl {
namespace {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

// `prefix` goes before the command in the shell line (a `cd`, environment assignments).
Result Seedctl(const std::string& args, const std::string& prefix = "") {
  std::string cmd = prefix + std::string(RSL_BINARY_DIR) + "/bin/seedctl " + args + " 2>&1";
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
    EXPECT_TRUE(WriteFileAtomic(path,
                                "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
                                "metadata:\n  name: cli\nspec:\n" +
                                    extra + "  pipeline:\n" + pipeline)
                    .ok());
    return path;
  }
  std::string Flags() { return " --state-dir " + dir_ + "/state --no-hooks"; }
  std::string dir_;
};

TEST_F(SeedctlRunTest, SucceedsWithATable) {
  auto r = Seedctl("run -f " +
                   Write("    - {name: hello, command: [sh, -c, 'echo hi > $RSL_OUTPUT/x']}\n") +
                   Flags());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("STEP   PHASE      ATTEMPTS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hello  SUCCEEDED  1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" Started "), std::string::npos) << r.output;  // progress lines
  EXPECT_TRUE(StartsWith(LastLine(r.output), "workload wl-")) << r.output;
  EXPECT_NE(LastLine(r.output).find("SUCCEEDED"), std::string::npos);
}

// Two terminals, one (default) state directory: both runs proceed, one writer at a time.
TEST_F(SeedctlRunTest, TwoRunsAtOnceOnOneStateDirectoryBothSucceed) {
  std::string steps;
  for (int i = 0; i < 40; ++i) {
    steps += "    - {name: s" + std::to_string(i) + ", command: [sh, -c, 'echo " +
             std::to_string(i) + " > $RSL_OUTPUT/x']}\n";
  }
  std::string file = Write("    atomic: true\n    steps:\n" + steps);
  Result first, second;
  std::thread other([&] { first = Seedctl("run -f " + file + Flags()); });
  second = Seedctl("run -f " + file + Flags());
  other.join();
  for (const Result* r : {&first, &second}) {
    EXPECT_EQ(r->exit_code, 0) << r->output;
    EXPECT_EQ(r->output.find("INTERNAL"), std::string::npos) << r->output;
    EXPECT_NE(LastLine(r->output).find("SUCCEEDED"), std::string::npos) << r->output;
  }
}

TEST_F(SeedctlRunTest, FailureEndsWithTheCode) {
  auto r = Seedctl("run -f " + Write("    - {name: bad, command: [sh, -c, 'exit 3']}\n") + Flags());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(LastLine(r.output), "STEP_FAILED") << r.output;
  EXPECT_NE(r.output.find("bad   FAILED"), std::string::npos) << r.output;
}

TEST_F(SeedctlRunTest, ImpossibleRequestIsRejected) {
  auto r =
      Seedctl("run -f " + Write("    - {name: big, command: ['true'], resources: {cpu: 4096}}\n") +
              Flags());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(LastLine(r.output), "INSUFFICIENT_RESOURCES") << r.output;
  EXPECT_NE(r.output.find("local: cpu 4096 >"), std::string::npos) << r.output;
  // The step never started because the workload was refused: REJECTED, not CANCELLED.
  EXPECT_NE(r.output.find("big   REJECTED  0"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("CANCELLED"), std::string::npos) << r.output;
}

// Progress lines are in local time like every other seedctl time: with TZ 5:30 east of UTC
// the clock printed is 5:30 ahead of UTC (within the seconds the run takes).
TEST_F(SeedctlRunTest, ProgressTimesAreLocal) {
  std::time_t before = std::time(nullptr);
  auto r =
      Seedctl("run -f " + Write("    - {name: a, command: ['true']}\n") + Flags(), "TZ=RSL-5:30 ");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t started = r.output.find("  Started  ");
  ASSERT_NE(started, std::string::npos) << r.output;
  size_t line = r.output.rfind('\n', started) + 1;
  int h = 0, m = 0, sec = 0;
  ASSERT_EQ(std::sscanf(r.output.c_str() + line, "%d:%d:%d", &h, &m, &sec), 3) << r.output;
  int printed = h * 3600 + m * 60 + sec;
  int utc = static_cast<int>(before % 86400);
  int ahead = ((printed - utc) % 86400 + 86400) % 86400;
  EXPECT_GE(ahead, 5 * 3600 + 30 * 60) << r.output;
  EXPECT_LE(ahead, 5 * 3600 + 30 * 60 + 120) << r.output;
}

TEST_F(SeedctlRunTest, JsonOutputAndBadFlags) {
  auto r = Seedctl("run -o json -f " + Write("    - {name: a, command: ['true']}\n") + Flags());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"phase\": \"SUCCEEDED\""), std::string::npos) << r.output;
  // The controller's AIWorkload object, camelCase like the API.
  EXPECT_NE(r.output.find("\"kind\": \"AIWorkload\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"stepsSucceeded\": 1"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("failure_code"), std::string::npos) << r.output;
  auto missing = Seedctl("run" + Flags());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(LastLine(missing.output), "INVALID_ARGUMENT");
  auto nofile = Seedctl("run -f " + dir_ + "/nope.yaml" + Flags());
  EXPECT_EQ(nofile.exit_code, 1);
  EXPECT_EQ(LastLine(nofile.output), "IO_ERROR") << nofile.output;
}

// Relative data URIs mean the spec file's directory, resolved at submission and stored so:
// a run killed at its commit and recovered from another directory publishes where the
// file said, and the step's RSL_INPUT is the resolved input.
TEST_F(SeedctlRunTest, RelativeDataUrisMeanTheFilesDirectoryEvenForARecoveryElsewhere) {
  std::filesystem::create_directories(dir_ + "/specs");
  std::filesystem::create_directories(dir_ + "/here");
  std::filesystem::create_directories(dir_ + "/elsewhere");
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/specs/wl.yaml",
                              "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
                              "metadata:\n  name: rel\nspec:\n  data:\n"
                              "    input: {uri: ./in/../in}\n    output: {uri: file://out}\n"
                              "  pipeline:\n    - {name: s, command: [sh, -c,"
                              " 'echo $RSL_INPUT > $RSL_OUTPUT/input']}\n")
                  .ok());
  auto crashed = Seedctl("run -f ../specs/wl.yaml" + Flags(),
                         "cd " + dir_ + "/here && RSL_TEST_CRASH_AT=after-commit-decided ");
  EXPECT_NE(crashed.exit_code, 0) << crashed.output;
  auto recovered = Seedctl("run --recover" + Flags(), "cd " + dir_ + "/elsewhere && ");
  EXPECT_EQ(recovered.exit_code, 0) << recovered.output;
  auto published = ReadFile(dir_ + "/specs/out/s/input");
  ASSERT_TRUE(published.ok()) << recovered.output;
  EXPECT_EQ(*published, dir_ + "/specs/in\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/elsewhere/out"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/here/out"));
}

TEST_F(SeedctlRunTest, RecoverWithNothingToDo) {
  auto r = Seedctl("run --recover" + Flags());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("nothing to recover"), std::string::npos);
}

// On a real terminal: the redrawn progress bar, and Ctrl-C typed on the terminal (the line
// discipline sends SIGINT to the foreground group) cancels the run: the step's processes are
// gone, nothing is published, the code is the last line.
TEST_F(SeedctlRunTest, TerminalShowsABarAndCtrlCCancels) {
  std::string pidfile = dir_ + "/step.pid";
  std::string out = dir_ + "/published";
  std::string wl = Write(
      "    - {name: quick, command: ['true']}\n"
      "    - {name: slow, dependsOn: [quick], command: [sh, -c, 'echo $$ > " +
          pidfile + "; echo 40% > $RSL_PROGRESS_FILE; exec sleep 60']}\n",
      "  data:\n    output:\n      uri: file://" + out + "\n");
  std::string seedctl = std::string(RSL_BINARY_DIR) + "/bin/seedctl";
  std::string state = dir_ + "/state";
  int master = -1;
  winsize ws{};
  ws.ws_row = 40;
  ws.ws_col = 200;
  pid_t pid = forkpty(&master, nullptr, nullptr, &ws);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The step writes its pid into the test's directory: it runs as our user.
    execl(seedctl.c_str(), seedctl.c_str(), "run", "-f", wl.c_str(), "--state-dir", state.c_str(),
          "--no-hooks", "--step-isolation", "none", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string screen;
  auto read_until = [&](const std::function<bool()>& done, int seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      pollfd p{master, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = read(master, buf, sizeof buf);
      if (n > 0) {
        screen.append(buf, size_t(n));
      } else {  // EIO: the child closed the terminal; keep checking `done`
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return done();
  };
  // Started, and the bar drawn below the event lines; the next line erases it (CR, erase).
  ASSERT_TRUE(read_until(
      [&] {
        return PathExists(pidfile) && screen.find("slow  Started") != std::string::npos &&
               screen.find("running: slow") != std::string::npos;
      },
      60))
      << screen;
  EXPECT_NE(screen.find("\n[#"), std::string::npos) << screen;
  EXPECT_NE(screen.find("] 1/2 steps  running: slow"), std::string::npos) << screen;
  EXPECT_NE(screen.find("\r\033[K"), std::string::npos) << screen;
  pid_t step = static_cast<pid_t>(atoi(ReadFile(pidfile)->c_str()));
  ASSERT_GT(step, 0);
  ASSERT_EQ(kill(step, 0), 0);
  ASSERT_EQ(write(master, "\x03", 1), 1);  // Ctrl-C, typed
  int status = 0;
  bool reaped = false;  // waitpid succeeds once: remember it
  ASSERT_TRUE(
      read_until([&] { return reaped || (reaped = waitpid(pid, &status, WNOHANG) == pid); }, 60))
      << screen;
  read_until([] { return false; }, 1);  // whatever is left on the terminal
  close(master);
  ASSERT_TRUE(WIFEXITED(status)) << screen;
  EXPECT_EQ(WEXITSTATUS(status), 1) << screen;
  EXPECT_NE(screen.find("cancelling run-"), std::string::npos) << screen;
  EXPECT_EQ(LastLine(screen).substr(0, 18), "WORKLOAD_CANCELLED") << screen;
  EXPECT_NE(kill(step, 0), 0) << "the step outlived the cancelled run";
  EXPECT_FALSE(PathExists(out));
}

}  // namespace
}  // namespace rsl
