#include "backend/slurm_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/codes.h"
#include "base/strings.h"

extern char** environ;

namespace rsl::backend {
namespace {

class ProcessRunner : public CommandRunner {
 public:
  ProcessRunner(std::map<std::string, std::string> env_overrides, int64_t timeout_ms)
      : timeout_ms_(timeout_ms) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      size_t eq = kv.find('=');
      if (eq == std::string::npos) continue;
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (auto& [k, v] : env_overrides) env[k] = v;
    for (auto& [k, v] : env) env_.push_back(k + "=" + v);
  }

  Result<CommandOutput> Run(const std::vector<std::string>& argv) override {
    if (argv.empty()) return Error(codes::kInternal, "empty command");
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return OsError(codes::kIoError, "pipe", argv[0], errno);
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      int e = errno;
      ::close(out_pipe[0]);
      ::close(out_pipe[1]);
      return OsError(codes::kIoError, "pipe", argv[0], e);
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const auto& e : env_) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
      ::close(out_pipe[0]);
      ::close(err_pipe[0]);
      return OsError(codes::kIoError, "cannot run", argv[0], rc)
          .Hint("is Slurm's client (slurm-client) installed and on PATH?");
    }
    CommandOutput result;
    bool timed_out = !ReadBoth(out_pipe[0], err_pipe[0], &result.out, &result.err);
    if (timed_out) ::kill(pid, SIGKILL);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
      result.exit_code = -1;
      result.err += "\n" + argv[0] + ": killed after " + std::to_string(timeout_ms_) + " ms";
    } else if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    }
    return result;
  }

 private:
  // Drains both pipes until EOF; false when the deadline passed first.
  bool ReadBoth(int out_fd, int err_fd, std::string* out, std::string* err) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
    struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int open_fds = 2;
    char buf[1 << 15];
    while (open_fds > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return false;
      int n = ::poll(fds, 2, static_cast<int>(left));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
        if (r > 0) {
          (i == 0 ? out : err)->append(buf, static_cast<size_t>(r));
        } else if (r == 0 || errno != EINTR) {
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    return true;
  }

  std::vector<std::string> env_;
  int64_t timeout_ms_;
};

}  // namespace

std::unique_ptr<CommandRunner> NewProcessRunner(std::map<std::string, std::string> env_overrides,
                                                int64_t timeout_ms) {
  return std::make_unique<ProcessRunner>(std::move(env_overrides), timeout_ms);
}

}  // namespace rsl::backend
