#include "serve/haproxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::serve {
namespace {

//! How long Start waits for the runtime socket to answer (HAProxy starts in milliseconds).
constexpr int64_t kStartWaitMs = 10'000;
//! One runtime command's connect + answer bound.
constexpr int kCommandTimeoutSec = 5;

std::string LastLines(const std::string& text, size_t n) {
  std::vector<std::string> lines = Split(text, '\n');
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - long(n));
  return Join(lines, "\n");
}

bool IsSuccess(const std::string& answer) {
  std::string a(Trim(answer));
  if (a.empty()) return true;
  for (const char* ok : {"New server registered.", "Server deleted."}) {
    if (a.find(ok) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::string ProxyConfigText(const ProxyConfig& c) {
  const std::vector<std::string> lines = {
      "global",
      "  stats socket " + c.socket_path + " mode 600 level admin",
      "  maxconn 4096",
      "defaults",
      "  mode http",
      "  timeout connect 2s",
      "  timeout client 60s",
      "  timeout server 60s",
      "  timeout http-keep-alive 2s",
      // A request that never reached a replica (refused: it is stopping or was killed) goes
      // to another one instead of failing.
      "  retries 3",
      "  option redispatch 1",
      "  retry-on conn-failure empty-response response-timeout",
      // No idle server connection: a drained server has nothing open, `del server` works.
      "  http-reuse never",
      "  option http-server-close",
      std::string("frontend ") + kFrontendName,
      "  bind " + c.bind_host + ":" + std::to_string(c.port),
      std::string("  default_backend ") + kBackendName,
      std::string("backend ") + kBackendName,
      "  balance leastconn",
  };
  return Join(lines, "\n") + "\n";
}

Result<std::vector<StatRow>> ParseShowStat(const std::string& csv) {
  std::vector<std::string> lines = Split(csv, '\n');
  std::map<std::string, size_t> col;
  std::vector<StatRow> rows;
  for (const auto& raw : lines) {
    std::string line(Trim(raw));
    if (line.empty()) continue;
    if (StartsWith(line, "#")) {
      std::vector<std::string> names = Split(line.substr(1), ',');
      for (size_t i = 0; i < names.size(); ++i) col[std::string(Trim(names[i]))] = i;
      continue;
    }
    for (const char* need : {"pxname", "svname", "scur", "stot", "hrsp_5xx", "status"}) {
      if (!col.count(need)) {
        return Error(codes::kInternal, std::string("HAProxy's show stat has no column ") + need)
            .Value(LastLines(csv, 2));
      }
    }
    std::vector<std::string> f = Split(line, ',');
    auto at = [&](const char* name) -> std::string {
      size_t i = col[name];
      return i < f.size() ? f[i] : "";
    };
    auto num = [&](const char* name) -> int64_t {
      std::string v = at(name);
      return v.empty() ? 0 : strtoll(v.c_str(), nullptr, 10);
    };
    StatRow r;
    r.proxy = at("pxname");
    r.server = at("svname");
    r.scur = num("scur");
    r.stot = num("stot");
    r.hrsp_5xx = num("hrsp_5xx");
    r.status = at("status");
    rows.push_back(std::move(r));
  }
  return rows;
}

Result<std::string> HaproxyRuntime::Command(const std::string& command) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return OsError(codes::kIoError, "socket", socket_path_, errno);
  timeval tv{kCommandTimeoutSec, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof addr.sun_path) {
    close(fd);
    return Error(codes::kIoError, "HAProxy socket path is too long").Value(socket_path_);
  }
  memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    close(fd);
    return OsError(codes::kIoError, "cannot reach HAProxy's runtime API", socket_path_, err);
  }
  std::string line = command + "\n";
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(fd, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      return OsError(codes::kIoError, "cannot write to HAProxy's runtime API", socket_path_, err);
    }
    off += size_t(n);
  }
  std::string out;
  char buf[8192];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  close(fd);
  return out;
}

Status HaproxyRuntime::Expect(const std::string& command) {
  auto answer = Command(command);
  if (!answer.ok()) return answer.status();
  if (IsSuccess(*answer)) return Status::Ok();
  return Error(codes::kInternal,
               "HAProxy refused " + Quote(command) + ": " + std::string(Trim(*answer)));
}

Status HaproxyRuntime::AddServer(const std::string& name, const std::string& host, int port) {
  return Expect(std::string("add server ") + kBackendName + "/" + name + " " + host + ":" +
                std::to_string(port));
}

Status HaproxyRuntime::SetState(const std::string& name, const std::string& state) {
  return Expect(std::string("set server ") + kBackendName + "/" + name + " state " + state);
}

Status HaproxyRuntime::DelServer(const std::string& name) {
  return Expect(std::string("del server ") + kBackendName + "/" + name);
}

Result<std::vector<StatRow>> HaproxyRuntime::ShowStat() {
  auto answer = Command("show stat");
  if (!answer.ok()) return answer.error();
  return ParseShowStat(*answer);
}

Result<std::unique_ptr<HaproxyProcess>> HaproxyProcess::Start(const std::string& haproxy,
                                                              const std::string& dir,
                                                              const ProxyConfig& config) {
  if (access(haproxy.c_str(), X_OK) != 0) {
    return Error(codes::kServingProxyMissing, "HAProxy is not installed: cannot run " + haproxy)
        .Value(haproxy)
        .Hint("install Debian's haproxy (scripts/install-deps.sh), or point --haproxy at it");
  }
  RSL_RETURN_IF_ERROR(MakeDirs(dir));
  std::string cfg = dir + "/haproxy.cfg";
  std::string log = dir + "/haproxy.log";
  RSL_RETURN_IF_ERROR(WriteFileAtomic(cfg, ProxyConfigText(config)));
  unlink(config.socket_path.c_str());
  int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) return OsError(codes::kIoError, "cannot create", log, errno);
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(log_fd);
    return OsError(codes::kIoError, "cannot start HAProxy", haproxy, err);
  }
  if (pid == 0) {
    // Its own process group, and no parent-death signal: a controller that dies leaves the
    // endpoint serving, and the next one adopts it.
    setpgid(0, 0);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execl(haproxy.c_str(), haproxy.c_str(), "-db", "-f", cfg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(log_fd);
  std::unique_ptr<HaproxyProcess> p(new HaproxyProcess(pid, dir, config.socket_path, true));
  for (int64_t waited = 0; waited < kStartWaitMs; waited += 20) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      p->pid_ = -1;
      auto text = ReadFile(log);
      return Error(codes::kIoError,
                   "HAProxy exited at start: " + LastLines(text.ok() ? *text : "", 3))
          .Value(cfg)
          .Hint("is the port " + std::to_string(config.port) + " in use?");
    }
    if (p->runtime().Command("show info").ok()) return p;
    usleep(20'000);
  }
  return Error(codes::kIoError, "HAProxy's runtime API did not answer in time").Value(cfg);
}

Result<std::unique_ptr<HaproxyProcess>> HaproxyProcess::Adopt(pid_t pid, const std::string& dir,
                                                              const std::string& socket) {
  std::string cfg = dir + "/haproxy.cfg";
  auto cmdline = ReadFileIfExists("/proc/" + std::to_string(pid) + "/cmdline", 64 * 1024);
  bool ours = pid > 0 && cmdline.ok() && *cmdline && !Gone(pid) &&
              (*cmdline)->find(cfg) != std::string::npos;
  if (!ours) {
    return Error(codes::kNotFound, "HAProxy " + std::to_string(pid) + " of " + cfg + " is gone")
        .Value(std::to_string(pid));
  }
  std::unique_ptr<HaproxyProcess> p(new HaproxyProcess(pid, dir, socket, false));
  if (auto info = p->runtime().Command("show info"); !info.ok()) {
    p->pid_ = -1;  // not ours to stop: it may be on its way out
    return info.error();
  }
  return p;
}

HaproxyProcess::~HaproxyProcess() {
  if (!released_) Stop();
}

bool HaproxyProcess::Gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  // A zombie nobody reaped yet (an adopted HAProxy's parent is not us) is gone too.
  auto stat = ReadFileIfExists("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat.ok() || !*stat) return true;
  size_t paren = (*stat)->rfind(')');
  return paren != std::string::npos && paren + 2 < (*stat)->size() && (**stat)[paren + 2] == 'Z';
}

void HaproxyProcess::Stop() {
  if (pid_ <= 0) return;
  auto ended = [this] {
    if (child_) return waitpid(pid_, nullptr, WNOHANG) == pid_;
    return Gone(pid_);
  };
  kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (ended()) {
      pid_ = -1;
      return;
    }
    usleep(10'000);
  }
  kill(pid_, SIGKILL);
  if (child_) {
    waitpid(pid_, nullptr, 0);
  } else {
    for (int i = 0; i < 500 && !Gone(pid_); ++i) usleep(10'000);
  }
  pid_ = -1;
}

Result<int> FreePort(const std::string& host) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return OsError(codes::kIoError, "socket", host, errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    close(fd);
    return OsError(codes::kIoError, "cannot allocate a port", host, err);
  }
  close(fd);
  return int(ntohs(addr.sin_port));
}

bool PortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(uint16_t(port));
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace rsl::serve
