#include "backend/local.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "sched/inventory.h"

namespace rsl::backend {
namespace {

constexpr int kShimLockFd = 3;  // where the shim expects the attempt lock
// Adopting a shim that holds its lock but has no pid file yet (it started a moment ago):
// wait up to kPidFileWaits x kPidFileWaitUs for the file.
constexpr int kPidFileWaits = 400;
constexpr int kPidFileWaitUs = 5000;

std::string Dirname(const std::string& path) {
  size_t p = path.rfind('/');
  return p == std::string::npos ? "." : path.substr(0, p);
}

std::string SelfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  return Dirname(std::string(buf, size_t(n)));
}

// Mount point of a cgroup hierarchy: `v2` for cgroup2, else the v1 one with `controller`.
std::string CgroupMount(bool v2, const std::string& controller) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, dir, type, opts, rest;
  while (in >> dev >> dir >> type >> opts) {
    std::getline(in, rest);
    if (v2 && type == "cgroup2") return dir;
    if (!v2 && type == "cgroup") {
      for (const auto& o : Split(opts, ',')) {
        if (o == controller) return dir;
      }
    }
  }
  return "";
}

// This process's path inside a hierarchy, from /proc/self/cgroup ("" for v2's "0::").
std::string SelfCgroupPath(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto parts = Split(line, ':');
    if (parts.size() < 3) continue;
    std::string path = line.substr(parts[0].size() + parts[1].size() + 2);
    if (controller.empty() && parts[0] == "0" && parts[1].empty()) return path;
    if (!controller.empty()) {
      for (const auto& c : Split(parts[1], ',')) {
        if (c == controller) return path;
      }
    }
  }
  return "";
}

bool Writable(const std::string& dir) {
  std::string probe = dir + "/rsl";
  if (mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) return false;
  return access(probe.c_str(), W_OK) == 0;
}

struct CgroupBases {
  std::string mechanism;  // "cgroup v2" | "cgroup v1" | "rlimit"
  std::string v2, mem, cpu;  // parent directories for per-attempt cgroups
};

CgroupBases Detect(const std::string& wanted) {
  CgroupBases b;
  if (wanted == "auto" || wanted == "cgroup-v2") {
    std::string mount = CgroupMount(true, "");
    if (!mount.empty()) {
      std::string base = mount + SelfCgroupPath("");
      std::string controllers;
      if (auto c = ReadFile(base + "/cgroup.controllers"); c.ok()) controllers = *c;
      bool has_memory = false;
      for (const auto& c : Split(std::string(Trim(controllers)), ' ')) has_memory |= c == "memory";
      if (has_memory && Writable(base)) {
        // Enable the controllers for our subtree (a no-op if already enabled).
        std::ofstream(base + "/rsl/cgroup.subtree_control") << "+memory +cpu";
        b.mechanism = "cgroup v2";
        b.v2 = base + "/rsl";
        return b;
      }
    }
  }
  if (wanted == "auto" || wanted == "cgroup-v1") {
    std::string mem = CgroupMount(false, "memory");
    std::string cpu = CgroupMount(false, "cpu");
    if (!mem.empty()) {
      std::string mem_base = mem + SelfCgroupPath("memory");
      if (Writable(mem_base)) {
        b.mechanism = "cgroup v1";
        b.mem = mem_base + "/rsl";
        if (!cpu.empty()) {
          std::string cpu_base = cpu + SelfCgroupPath("cpu");
          if (Writable(cpu_base)) b.cpu = cpu_base + "/rsl";
        }
        return b;
      }
    }
  }
  b.mechanism = wanted == "none" ? "none" : "rlimit";
  return b;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string SanitizeId(const std::string& id) {
  std::string s = id;
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  }
  return s;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

class LocalBackend : public Backend {
 public:
  LocalBackend(LocalOptions opts, std::vector<sched::Node> nodes, CgroupBases cg,
               std::string shim)
      : opts_(std::move(opts)), nodes_(std::move(nodes)), cg_(std::move(cg)),
        shim_(std::move(shim)) {}

  Status Init() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_ < 0 || wake_ < 0) return OsError(codes::kInternal, "epoll", "", errno);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 0;  // 0 = the wake eventfd; attempts use their key (>= 1)
    epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    watcher_ = std::thread([this] { WatchLoop(); });
    return Status::Ok();
  }

  ~LocalBackend() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    uint64_t one = 1;
    (void)!write(wake_, &one, sizeof(one));
    if (watcher_.joinable()) watcher_.join();
    for (auto& [key, w] : watched_) {
      if (w.pidfd >= 0) close(w.pidfd);
    }
    close(epoll_);
    close(wake_);
  }

  std::string name() const override { return "local"; }

  Result<std::vector<sched::Node>> ListNodes() override { return nodes_; }

  Status Launch(const LaunchSpec& spec) override {
    std::string dir = Dirname(spec.exit_file);
    RSL_RETURN_IF_ERROR(MakeDirs(dir));
    if (!spec.workdir.empty()) RSL_RETURN_IF_ERROR(MakeDirs(spec.workdir));
    std::string cg_name = SanitizeId(spec.attempt_id);
    std::vector<std::string> args = {shim_, "--exit-file", spec.exit_file, "--log", spec.log_path,
                                     "--workdir", spec.workdir, "--grace-ms",
                                     std::to_string(opts_.grace_ms)};
    bool limited = spec.memory_bytes > 0 || spec.cpu_millis > 0;
    if (spec.memory_bytes > 0) {
      args.insert(args.end(), {"--memory", std::to_string(spec.memory_bytes)});
    }
    if (spec.cpu_millis > 0) {
      args.insert(args.end(), {"--cpu-millis", std::to_string(spec.cpu_millis)});
    }
    if (limited && cg_.mechanism == "cgroup v2") {
      args.insert(args.end(), {"--v2-cgroup", cg_.v2 + "/" + cg_name});
    } else if (limited && cg_.mechanism == "cgroup v1") {
      args.insert(args.end(), {"--mem-cgroup", cg_.mem + "/" + cg_name});
      if (!cg_.cpu.empty()) args.insert(args.end(), {"--cpu-cgroup", cg_.cpu + "/" + cg_name});
    } else if (cg_.mechanism == "none") {
      args.insert(args.end(), {"--memory", "0", "--cpu-millis", "0"});
    }
    if (!spec.secret_values.empty()) {
      std::string mask;
      for (const auto& s : spec.secret_values) mask += s + '\0';
      std::string mask_file = dir + "/mask";
      int fd = open(mask_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) return OsError(codes::kIoError, "cannot write", mask_file, errno);
      bool ok = write(fd, mask.data(), mask.size()) == ssize_t(mask.size());
      close(fd);
      if (!ok) return Error(codes::kIoError, "cannot write " + mask_file);
      args.insert(args.end(), {"--mask-file", mask_file});
    }
    args.push_back("--");
    args.insert(args.end(), spec.argv.begin(), spec.argv.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);

    // The lock travels to the shim as fd 3 (dup2 clears CLOEXEC in the child only), so it
    // is held from the instant the shim exists and never leaks into other children.
    std::string lock_path = dir + "/lock";
    int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0) return OsError(codes::kIoError, "cannot open", lock_path, errno);
    if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      close(lock_fd);
      return Error(codes::kConflict, "attempt " + spec.attempt_id + " is already running")
          .Value(spec.attempt_id);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, lock_fd, kShimLockFd);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, shim_.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(lock_fd);
    if (rc != 0) return OsError(codes::kInternal, "cannot start rsl-shim", shim_, rc);
    int pidfd = PidfdOpen(pid);
    {
      std::lock_guard<std::mutex> lock(mu_);
      Watch(spec.attempt_id, spec.exit_file, pid, pidfd, /*child=*/true);
    }
    if (limited && on_event) {
      std::string what = cg_.mechanism == "none" ? "no limits enforced (--limits none)"
                                                 : "limits via " + cg_.mechanism;
      on_event({spec.attempt_id, "LimitsApplied", what, spec.node});
    }
    return Status::Ok();
  }

  void Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_attempt_.find(attempt_id);
    if (it == by_attempt_.end()) return;
    const Watched& w = watched_.at(it->second);
    kill(w.pid, timed_out ? SIGUSR1 : SIGTERM);
  }

  void Adopt(const LaunchSpec& spec) override {
    std::string dir = Dirname(spec.exit_file);
    int lock_fd = open((dir + "/lock").c_str(), O_RDWR | O_CLOEXEC);
    bool alive = false;
    if (lock_fd >= 0) {
      alive = flock(lock_fd, LOCK_EX | LOCK_NB) != 0;
      close(lock_fd);
    }
    if (alive) {
      // A shim that has just started may not have written its pid yet.
      pid_t pid = 0;
      for (int i = 0; i < kPidFileWaits && pid <= 0; ++i) {
        auto pid_text = ReadFile(spec.exit_file + ".pid");
        pid = pid_text.ok() ? atoi(pid_text->c_str()) : 0;
        if (pid <= 0) usleep(kPidFileWaitUs);
      }
      int pidfd = pid > 0 ? PidfdOpen(pid) : -1;
      // The lock still held after pidfd_open: the pidfd is the live shim, not a reused pid.
      lock_fd = open((dir + "/lock").c_str(), O_RDWR | O_CLOEXEC);
      bool still = lock_fd >= 0 && flock(lock_fd, LOCK_EX | LOCK_NB) != 0;
      if (lock_fd >= 0) close(lock_fd);
      if (pidfd >= 0 && still) {
        std::lock_guard<std::mutex> lock(mu_);
        Watch(spec.attempt_id, spec.exit_file, pid, pidfd, /*child=*/false);
        return;
      }
      if (pidfd >= 0) close(pidfd);
    }
    // Ended while no engine watched: its exit file tells how, or it never ran / its shim
    // died (kNodeLost: rescheduled without spending a retry).
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back({spec.attempt_id, spec.exit_file});
    uint64_t one = 1;
    (void)!write(wake_, &one, sizeof(one));
  }

 private:
  struct Watched {
    std::string attempt_id, exit_file;
    pid_t pid = -1;
    int pidfd = -1;
    bool child = true;
  };

  // REQUIRES: mu_ held.
  void Watch(const std::string& attempt_id, const std::string& exit_file, pid_t pid, int pidfd,
             bool child) {
    uint64_t key = next_key_++;
    watched_[key] = Watched{attempt_id, exit_file, pid, pidfd, child};
    by_attempt_[attempt_id] = key;
    if (pidfd >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = key;
      epoll_ctl(epoll_, EPOLL_CTL_ADD, pidfd, &ev);
    }
  }

  void Report(const std::string& attempt_id, const std::string& exit_file) {
    auto exit = ReadExitFile(exit_file, attempt_id);
    AttemptExit e;
    if (exit.ok()) {
      e = std::move(*exit);
    } else {
      e.attempt_id = attempt_id;
      e.kind = ExitKind::kNodeLost;
      e.message = "the attempt's supervisor is gone and left no exit record";
    }
    e.node = sched::kLocalNodeName;
    if (on_exit) on_exit(e);
  }

  void WatchLoop() {
    epoll_event events[64];
    while (true) {
      int n = epoll_wait(epoll_, events, 64, -1);
      std::vector<std::pair<std::string, std::string>> done;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        for (int i = 0; i < n; ++i) {
          uint64_t key = events[i].data.u64;
          if (key == 0) {
            uint64_t v;
            (void)!read(wake_, &v, sizeof(v));
            continue;
          }
          auto it = watched_.find(key);
          if (it == watched_.end()) continue;
          Watched& w = it->second;
          if (w.child) waitpid(w.pid, nullptr, 0);
          epoll_ctl(epoll_, EPOLL_CTL_DEL, w.pidfd, nullptr);
          close(w.pidfd);
          done.emplace_back(w.attempt_id, w.exit_file);
          by_attempt_.erase(w.attempt_id);
          watched_.erase(it);
        }
        for (auto& r : ready_) done.push_back(std::move(r));
        ready_.clear();
      }
      for (const auto& [attempt, exit_file] : done) Report(attempt, exit_file);
    }
  }

  LocalOptions opts_;
  std::vector<sched::Node> nodes_;
  CgroupBases cg_;
  std::string shim_;
  int epoll_ = -1, wake_ = -1;
  std::thread watcher_;
  std::mutex mu_;
  bool stopping_ = false;                        // GUARDED_BY(mu_)
  uint64_t next_key_ = 1;                        // GUARDED_BY(mu_)
  std::map<uint64_t, Watched> watched_;          // GUARDED_BY(mu_)
  std::map<std::string, uint64_t> by_attempt_;   // GUARDED_BY(mu_)
  std::vector<std::pair<std::string, std::string>> ready_;  // GUARDED_BY(mu_)
};

}  // namespace

std::string DetectLimitMechanism() { return Detect("auto").mechanism; }

Result<AttemptExit> ReadExitFile(const std::string& path, const std::string& attempt_id) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  std::map<std::string, std::string> kv;
  for (const auto& line : Split(*text, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (!kv.count("exit_code") || !kv.count("wall_ms")) {
    return Error(codes::kInternal, "garbled exit record " + path);
  }
  AttemptExit e;
  e.attempt_id = attempt_id;
  e.exit_code = atoi(kv["exit_code"].c_str());
  e.signal = atoi(kv["signal"].c_str());
  e.usage.wall_ms = atoll(kv["wall_ms"].c_str());
  e.usage.cpu_ms = atoll(kv["cpu_ms"].c_str());
  e.usage.peak_memory_bytes = atoll(kv["peak_memory_bytes"].c_str());
  std::string limits = kv["limits"];
  std::string how = e.signal ? "killed by " + SignalName(e.signal)
                             : "exit code " + std::to_string(e.exit_code);
  if (kv["stop"] == "timeout") {
    e.kind = ExitKind::kTimedOut;
    e.message = "stopped: time limit exceeded (" + how + ")";
  } else if (kv["stop"] == "cancel") {
    e.kind = ExitKind::kCancelled;
    e.message = "stopped on request (" + how + ")";
  } else if (kv["oom"] == "1") {
    e.kind = ExitKind::kOomKilled;
    e.message = "memory limit exceeded, OOM-killed (" + limits + ")";
  } else if (e.exit_code == 0) {
    e.kind = ExitKind::kSucceeded;
    e.message = "exit code 0";
  } else {
    e.kind = ExitKind::kFailed;
    e.message = how;
  }
  if (!kv["message"].empty()) e.message += "; " + kv["message"];
  return e;
}

Result<std::unique_ptr<Backend>> NewLocalBackend(const LocalOptions& options) {
  std::string shim = options.shim_path;
  if (shim.empty()) {
    const char* env = getenv("RSL_SHIM");
    shim = env && *env ? env : SelfDir() + "/rsl-shim";
  }
  if (access(shim.c_str(), X_OK) != 0) {
    return Error(codes::kInternal, "cannot find the step supervisor rsl-shim at " + shim)
        .Value(shim)
        .Hint("install rsl-shim next to seedctl/rsl-controller, or set RSL_SHIM");
  }
  sched::Node probed = sched::ProbeLocalNode(options.nvidia_smi);
  std::vector<sched::Node> nodes = {probed};
  if (!options.node_file.empty()) {
    auto loaded = sched::LoadNodeFile(options.node_file, probed);
    if (!loaded.ok()) return loaded.error();
    nodes = std::move(*loaded);
  }
  static const std::vector<std::string> kModes = {"auto", "cgroup-v2", "cgroup-v1", "rlimit",
                                                  "none"};
  if (std::find(kModes.begin(), kModes.end(), options.limits) == kModes.end()) {
    return Error(codes::kInvalidArgument, "unknown limits mode " + Quote(options.limits))
        .Hint("use one of " + Join(kModes, ", "));
  }
  auto backend = std::make_unique<LocalBackend>(options, std::move(nodes),
                                                Detect(options.limits), shim);
  RSL_RETURN_IF_ERROR(backend->Init());
  return std::unique_ptr<Backend>(std::move(backend));
}

Result<std::unique_ptr<Backend>> NewLocalBackend(const BackendOptions& options) {
  LocalOptions lo;
  lo.state_dir = options.state_dir;
  lo.node_file = options.node_file;
  if (const char* l = getenv("RSL_LIMITS"); l && *l) lo.limits = l;
  return NewLocalBackend(lo);
}

}  // namespace rsl::backend
