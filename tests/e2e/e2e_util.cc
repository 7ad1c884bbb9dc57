#include "e2e_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "base/sha256.h"

extern char** environ;

namespace rsl::e2e {

namespace fs = std::filesystem;

// Captured output beyond this is dropped: enough for any step log a test looks at.
constexpr size_t kMaxCapturedBytes = 8 << 20;

namespace {

// Builds envp from the current environment plus `env` (strings owned by `storage`).
std::vector<char*> MakeEnv(const std::map<std::string, std::string>& env,
                           std::vector<std::string>* storage) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) merged[k] = v;
  for (const auto& [k, v] : merged) storage->push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : *storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  return envp;
}

}  // namespace

std::string SourceDir() { return RSL_SOURCE_DIR; }
std::string BinaryDir() { return RSL_BINARY_DIR; }
std::string ExampleDir() { return SourceDir() + "/examples/fraud-detect"; }
std::string SeedctlPath() { return BinaryDir() + "/bin/seedctl"; }
std::string ControllerPath() { return BinaryDir() + "/bin/rsl-controller"; }

std::string CmdResult::LastLine() const {
  std::istringstream in(output);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

CmdResult RunCmd(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, const std::string& cwd) {
  CmdResult result;
  std::vector<std::string> env_strings;
  std::vector<char*> envp = MakeEnv(env, &env_strings);
  std::vector<char*> args;
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    result.output = std::string("pipe: ") + strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  auto t0 = Clock::now();
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    result.output = argv[0] + ": " + strerror(rc);
    return result;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0 && result.output.size() < kMaxCapturedBytes) result.output.append(buf, n);
  }
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.seconds = SecondsSince(t0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

Process::Process(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, const std::string& log_path)
    : log_path_(log_path) {
  std::vector<std::string> env_storage;
  std::vector<char*> envp = MakeEnv(env, &env_storage);
  std::vector<std::string> argv_copy = argv;
  std::vector<char*> args;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  int rc = posix_spawn(&pid_, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "spawn " << argv[0] << ": " << strerror(rc);
  }
}

Process::~Process() {
  if (pid_ > 0 && Running()) {
    kill(-pid_, SIGKILL);
    Wait(10);
  }
}

bool Process::Running() {
  if (pid_ <= 0 || status_ >= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return r == 0;
}

int Process::Wait(double timeout_s) {
  auto t0 = Clock::now();
  while (Running()) {
    if (SecondsSince(t0) > timeout_s) return -1;
    usleep(2000);
  }
  return status_;
}

void Process::Signal(int sig) {
  if (pid_ > 0 && Running()) kill(-pid_, sig);
}

std::string Process::Output() const { return ReadText(log_path_); }

bool WaitUntil(const std::function<bool()>& ready, double timeout_s, double interval_s) {
  auto t0 = Clock::now();
  while (!ready()) {
    if (SecondsSince(t0) > timeout_s) return false;
    usleep(static_cast<useconds_t>(interval_s * 1e6));
  }
  return true;
}

namespace {
std::string SystemTmp() {
  const char* tmp = getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}
}  // namespace

// Not under the build tree: the example's and the demo's steps read what the tests put here.
TempDir::TempDir() : rsl::testing::TempDir("rsl-e2e", SystemTmp()) {}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) ADD_FAILURE() << "cannot write " << path;
}

std::string Sha256OfFile(const std::string& path) { return Sha256Hex(ReadText(path)); }

std::vector<std::string> ListFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReplaceOnce(const std::string& text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "text to replace not found: " << from;
    return text;
  }
  return text.substr(0, at) + to + text.substr(at + from.size());
}

}  // namespace rsl::e2e
