#include "model/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "base/codes.h"

namespace rsl::model {
namespace {

// The child's exit code when exec itself fails (as the shell does for "command not found").
constexpr int kExecFailedCode = 127;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env, int64_t timeout_ms,
                                 bool merge_stderr, size_t max_output) {
  if (argv.empty()) return Error(codes::kInvalidArgument, "no program to run");
  int out_pipe[2];
  int err_pipe[2];  // reports exec failure: CLOEXEC, so it closes silently on success
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return OsError(codes::kIoError, "pipe", argv[0], errno);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return OsError(codes::kIoError, "pipe", argv[0], errno);
  }
  // Everything the child needs is prepared before fork (no allocation after it).
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> c_argv, c_env;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  for (auto& e : env_strings) c_env.push_back(e.data());
  c_env.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return OsError(codes::kIoError, "fork", argv[0], err);
  }
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    if (merge_stderr) dup2(out_pipe[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      if (!merge_stderr) dup2(devnull, STDERR_FILENO);
    }
    execvpe(c_argv[0], c_argv.data(), c_env.data());
    int err = errno;
    (void)!write(err_pipe[1], &err, sizeof err);
    _exit(kExecFailedCode);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  ProcessResult result;
  bool timed_out = false;
  bool too_much = false;
  int64_t deadline = NowMs() + timeout_ms;
  char buf[65536];
  while (true) {
    int64_t left = deadline - NowMs();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{out_pipe[0], POLLIN, 0};
    int rc = poll(&pfd, 1, static_cast<int>(left));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      timed_out = true;
      break;
    }
    ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.out.append(buf, static_cast<size_t>(n));
    if (result.out.size() > max_output) {
      too_much = true;
      break;
    }
  }
  close(out_pipe[0]);
  if (timed_out || too_much) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int exec_errno = 0;
  bool exec_failed = read(err_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  close(err_pipe[0]);
  if (exec_failed) return OsError(codes::kIoError, "cannot run", argv[0], exec_errno);
  if (timed_out) {
    return Error(codes::kIoError,
                 argv[0] + " timed out after " + std::to_string(timeout_ms) + " ms");
  }
  if (too_much) {
    return Error(codes::kIoError,
                 argv[0] + " wrote more than " + std::to_string(max_output) + " bytes");
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace rsl::model
