// rsl-shim's SpawnChild on its own (shim_spawn.h): a child started without waiting for its exec
// shares the supervisor's memory while the supervisor goes on, so it must neither make the
// supervisor wait nor touch what the supervisor uses (errno first of all), and it still does
// what execvp would (PATH search, scripts without #!, the error it reports).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backend/shim_spawn.h"

namespace rsl::shim {
namespace {

namespace fs = std::filesystem;

// What a plan points at, kept as the supervisor keeps it (until the child has ended).
struct Start {
  std::vector<std::string> args, env, procs;
  std::vector<char*> argv, envp;  // argv with the spare slot in front
  std::vector<const char*> procv;
  std::string program, workdir;
  ChildPlan plan;
  int out[2] = {-1, -1};

  Start(std::vector<std::string> a, std::vector<std::string> e)
      : args(std::move(a)), env(std::move(e)) {}
  ~Start() {
    for (int fd : out) {
      if (fd >= 0) close(fd);
    }
  }
  ChildPlan& Make() {
    argv = {nullptr};
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    envp.clear();
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    procv.clear();
    for (auto& s : procs) procv.push_back(s.c_str());
    procv.push_back(nullptr);
    EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
    plan.argv = argv.data() + 1;
    plan.envp = envp.data();
    plan.procs = procv.data();
    plan.program = program.empty() ? nullptr : program.c_str();
    plan.workdir = workdir.empty() ? nullptr : workdir.c_str();
    plan.devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    plan.out = out[1];
    plan.parent = getpid();
    return plan;
  }
  // After the child started: our copy of the write end goes, the output is read to its end.
  std::string Output() {
    close(out[1]);
    close(plan.devnull);
    out[1] = -1;
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) > 0;) text.append(buf, size_t(n));
    return text;
  }
};

int ExitCode(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1000;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

class ShimSpawnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rsl-shim-spawn-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (void* s : used_) stacks_.Give(s);  // every child has been waited for by now
    fs::remove_all(dir_);
  }
  void Script(const std::string& path, const std::string& text, mode_t mode) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }
  // Starts `plan` as the supervisor does: without waiting where it can, on a stack of ours.
  pid_t Spawn(const ChildPlan& plan) {
    void* stack = StartsWithoutWaiting(plan) ? stacks_.Take() : nullptr;
    used_.push_back(stack);
    return SpawnChild(plan, stack);
  }
  pid_t Spawn(Start& s) { return Spawn(s.Make()); }
  std::string dir_;
  ChildStacks stacks_;
  std::vector<void*> used_;
};

#if defined(__x86_64__) || defined(__aarch64__)
TEST_F(ShimSpawnTest, TheSupervisorDoesNotWaitForTheChildsExec) {
  // The child joins its "cgroup" first: here a FIFO without a reader, so its open blocks, and
  // with it the exec. SpawnChild must come back meanwhile (a vfork parent would wait for good).
  std::string fifo = dir_ + "/cgroup.procs";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Start s({"true"}, {"PATH=/usr/bin:/bin"});
  s.procs = {fifo};
  s.program = "/bin/true";
  ChildPlan& plan = s.Make();
  ASSERT_TRUE(StartsWithoutWaiting(plan));
  void* stack = stacks_.Take();
  ASSERT_NE(stack, nullptr);
  pid_t pid = SpawnChild(plan, stack);
  ASSERT_GT(pid, 0);
  // Still before its exec: it has not written its pid (our read end would get it).
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WNOHANG), 0);
  int fd = open(fifo.c_str(), O_RDONLY);  // lets the child's open through
  ASSERT_GE(fd, 0);
  char buf[32] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  EXPECT_EQ(std::string(buf, size_t(std::max<ssize_t>(n, 0))), std::to_string(pid));
  EXPECT_EQ(s.Output(), "");
  EXPECT_EQ(ExitCode(pid), 0);
  stacks_.Give(stack);
  // A stack given back is the next one taken.
  EXPECT_EQ(stacks_.Take(), stack);
  stacks_.Give(stack);
}

TEST_F(ShimSpawnTest, AChildsFailuresLeaveTheSupervisorsErrnoAlone) {
  // The child shares our thread pointer: through glibc's wrappers its failed chdir would set
  // our errno to ENOENT. It calls the kernel itself.
  Start s({"true"}, {});
  s.program = "/bin/true";
  s.workdir = dir_ + "/missing";
  errno = 4242;
  pid_t pid = Spawn(s);
  ASSERT_GT(pid, 0);
  int code = ExitCode(pid);
  EXPECT_EQ(errno, 4242);
  EXPECT_EQ(code, kExecFailedCode);
  EXPECT_EQ(s.Output(), "rsl-shim: cannot enter " + s.workdir + ": No such file or directory\n");
}
#endif

TEST_F(ShimSpawnTest, WithoutAResolvedProgramTheStepsPathIsSearchedAsExecvpDoes) {
  Script(dir_ + "/bin1/rsl-tool", "#!/bin/sh\necho not-executable\n", 0644);
  fs::create_directories(dir_ + "/bin2/rsl-tool");  // a directory: passed over
  Script(dir_ + "/bin3/rsl-tool", "#!/bin/sh\necho found \"$0\" \"$1\"\n", 0755);
  Script(dir_ + "/bin3/rsl-plain", "echo plain \"$0\" \"$1\"\n", 0755);  // no #!: sh runs it
  std::string path =
      "PATH=" + dir_ + "/nowhere:" + dir_ + "/bin1:" + dir_ + "/bin2:" + dir_ + "/bin3";
  {
    Start s({"rsl-tool", "a b"}, {path});
    pid_t pid = Spawn(s);
    ASSERT_GT(pid, 0);
    EXPECT_EQ(s.Output(), "found " + dir_ + "/bin3/rsl-tool a b\n");
    EXPECT_EQ(ExitCode(pid), 0);
  }
  {
    Start s({"rsl-plain", "x"}, {path});
    pid_t pid = Spawn(s);
    ASSERT_GT(pid, 0);
    EXPECT_EQ(s.Output(), "plain " + dir_ + "/bin3/rsl-plain x\n");
    EXPECT_EQ(ExitCode(pid), 0);
  }
  {
    // Resolved by the supervisor but not runnable by the kernel: sh, as execvp.
    Start s({"rsl-plain", "y"}, {path});
    s.program = dir_ + "/bin3/rsl-plain";
    pid_t pid = Spawn(s);
    ASSERT_GT(pid, 0);
    EXPECT_EQ(s.Output(), "plain " + dir_ + "/bin3/rsl-plain y\n");
    EXPECT_EQ(ExitCode(pid), 0);
  }
  {
    // Only a file without x and a directory of that name: EACCES, as execvp says it.
    Start s({"rsl-tool"}, {"PATH=" + dir_ + "/bin1:" + dir_ + "/bin2:" + dir_ + "/nowhere"});
    pid_t pid = Spawn(s);
    ASSERT_GT(pid, 0);
    EXPECT_EQ(s.Output(), "rsl-shim: cannot run rsl-tool: Permission denied\n");
    EXPECT_EQ(ExitCode(pid), kExecFailedCode);
  }
  {
    Start s({"rsl-none"}, {path});
    pid_t pid = Spawn(s);
    ASSERT_GT(pid, 0);
    EXPECT_EQ(s.Output(), "rsl-shim: cannot run rsl-none: No such file or directory\n");
    EXPECT_EQ(ExitCode(pid), kExecFailedCode);
  }
  {
    // A name with a slash is not searched; an empty PATH entry is the working directory.
    Start s({"./rsl-tool", "w"}, {});
    s.workdir = dir_ + "/bin3";
    pid_t pid = Spawn(s);
    ASSERT_GT(pid, 0);
    EXPECT_EQ(s.Output(), "found ./rsl-tool w\n");
    EXPECT_EQ(ExitCode(pid), 0);
  }
  {
    Start s({"rsl-tool", "e"}, {"PATH=" + dir_ + "/nowhere::"});
    s.workdir = dir_ + "/bin3";
    pid_t pid = Spawn(s);
    ASSERT_GT(pid, 0);
    EXPECT_EQ(s.Output(), "found rsl-tool e\n");
    EXPECT_EQ(ExitCode(pid), 0);
  }
  {
    // No PATH in the step's environment: /bin:/usr/bin, whatever ours says.
    Start s({"sh", "-c", "echo \"$PATH\" ok"}, {});
    pid_t pid = Spawn(s);
    ASSERT_GT(pid, 0);
    std::string out = s.Output();
    EXPECT_NE(out.find("ok\n"), std::string::npos) << out;
    EXPECT_EQ(ExitCode(pid), 0);
  }
}

TEST_F(ShimSpawnTest, TheChildsOutputAndInputAreWhereThePlanSays) {
  // stdout and stderr on plan.out, stdin on plan.devnull, default SIGPIPE, our signal mask
  // cleared, the pid written to every procs file.
  std::string procs1 = dir_ + "/one.procs", procs2 = dir_ + "/two.procs";
  std::ofstream(procs1).close();
  std::ofstream(procs2).close();
  Start s({"sh", "-c", "echo out; echo err >&2; cat; grep -E '^(SigBlk|SigIgn)' /proc/self/status"},
          {"PATH=/usr/bin:/bin"});
  s.procs = {procs1, procs2};
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old), 0);
  struct sigaction ign {
  }, old_pipe{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ign, &old_pipe), 0);
  pid_t pid = Spawn(s);
  ASSERT_EQ(sigaction(SIGPIPE, &old_pipe, nullptr), 0);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
  ASSERT_GT(pid, 0);
  std::string out = s.Output();
  EXPECT_EQ(ExitCode(pid), 0);
  EXPECT_NE(out.find("out\nerr\n"), std::string::npos) << out;
  EXPECT_NE(out.find("SigBlk:\t0000000000000000\n"), std::string::npos) << out;
  // Whatever else sh ignores, SIGPIPE (bit 13) is not among it.
  size_t ign_at = out.find("SigIgn:\t");
  ASSERT_NE(ign_at, std::string::npos) << out;
  unsigned long long ignored = std::stoull(out.substr(ign_at + 8, 16), nullptr, 16);
  EXPECT_EQ(ignored & (1ULL << (SIGPIPE - 1)), 0ULL) << out;
  for (const auto& f : {procs1, procs2}) {
    std::ifstream in(f);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(text, std::to_string(pid)) << f;
  }
}

TEST_F(ShimSpawnTest, AnOutputAlreadyInPlaceStaysOpenAcrossTheExec) {
  // plan.out is our fd 1 itself, close-on-exec (as the supervisor's descriptors are): the
  // step's stdout must still be it after the exec (dup2 onto itself would keep the flag).
  Start s({"sh", "-c", "echo to-stdout"}, {"PATH=/usr/bin:/bin"});
  ChildPlan& plan = s.Make();
  int saved = dup(1);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(dup3(s.out[1], 1, O_CLOEXEC), 1);
  plan.out = 1;
  pid_t pid = Spawn(plan);
  dup2(saved, 1);  // ours again before anything prints
  close(saved);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(s.Output(), "to-stdout\n");
  EXPECT_EQ(ExitCode(pid), 0);
}

TEST_F(ShimSpawnTest, ManyChildsAtOnceEachRunTheirOwnPlan) {
  // Stacks are taken while others still run, and each child reads only its own plan.
  std::vector<std::unique_ptr<Start>> starts;
  std::vector<pid_t> pids;
  for (int i = 0; i < 40; ++i) {
    starts.push_back(std::make_unique<Start>(
        std::vector<std::string>{"sh", "-c", "echo child-" + std::to_string(i)},
        std::vector<std::string>{"PATH=/usr/bin:/bin"}));
    pids.push_back(Spawn(*starts.back()));
    ASSERT_GT(pids.back(), 0);
  }
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(starts[size_t(i)]->Output(), "child-" + std::to_string(i) + "\n");
    EXPECT_EQ(ExitCode(pids[size_t(i)]), 0);
  }
}

}  // namespace
}  // namespace rsl::shim
