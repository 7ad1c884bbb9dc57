#include "backend/shim_supervisor.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "backend/shim_cgroup.h"
#include "backend/shim_container.h"
#include "backend/shim_identity.h"
#include "backend/shim_io.h"
#include "backend/shim_log.h"
#include "backend/shim_namespace.h"
#include "backend/shim_spawn.h"
#include "backend/shim_usage.h"

namespace rsl::shim {

namespace {

using nlohmann::json;

constexpr int64_t kIdleExitMs = 3000;   // no client, no attempt: exit (tests make many dirs)
constexpr int64_t kPipeDrainMs = 2000;  // a step's escaped descendants may hold the mask pipe
constexpr int64_t kRmdirRetryMs = 10;   // a killed task leaves its cgroup asynchronously
constexpr int kRmdirTries = 200;
constexpr int64_t kBindRetryMs = 2000;  // an exiting predecessor may still hold the name
constexpr size_t kMaxLineBytes = 64u << 20;
// Live usage samples of running attempts: often enough for `status`, and an attempt shorter
// than this (most steps of a big DAG) is never sampled at all.
constexpr int64_t kUsageSampleMs = 1000;

}  // namespace

void Supervisor::Add(int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
}

void Supervisor::Accept() {
  while (true) {
    int fd = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    // The abstract namespace has no permissions: only our own user may start steps as us.
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid() ||
        !InOurUserNamespace(cred.pid)) {
      close(fd);
      continue;
    }
    conns_[fd];
    Add(fd, EPOLLIN);
    Send(fd, json{{"op", "hello"}});
  }
}

void Supervisor::CloseConn(int fd) {
  for (auto& [id, a] : attempts_) {
    if (a->owner == fd) a->owner = -1;  // the exit journal stays the record
  }
  epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  conns_.erase(fd);
}

void Supervisor::Flush(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  std::string& out = it->second.out;
  while (!out.empty()) {
    ssize_t n = send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out.erase(0, size_t(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    out.clear();  // the peer is gone; its EOF closes the connection
    break;
  }
  bool want_out = !out.empty();
  if (want_out == it->second.watching_out) return;  // one system call less per message
  it->second.watching_out = want_out;
  epoll_event ev{};
  ev.events = want_out ? uint32_t(EPOLLIN | EPOLLOUT) : uint32_t(EPOLLIN);
  ev.data.fd = fd;
  epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &ev);
}

void Supervisor::Send(int fd, const json& msg) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  bool was_empty = it->second.out.empty();
  it->second.out += msg.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  if (was_empty) Flush(fd);
}

// Reads what the connection has (never blocks) and handles every complete line.
void Supervisor::ReadConn(int fd) {
  while (conns_.count(fd)) {
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      CloseConn(fd);
      return;
    }
    std::string& in = conns_[fd].in;
    in.append(buf, size_t(n));
    size_t start = 0, nl;
    std::vector<std::string> lines;
    while ((nl = in.find('\n', start)) != std::string::npos) {
      lines.push_back(in.substr(start, nl - start));
      start = nl + 1;
    }
    in.erase(0, start);
    if (in.size() > kMaxLineBytes) {
      CloseConn(fd);
      return;
    }
    for (const auto& line : lines) Handle(fd, line);
  }
}

void Supervisor::OnConnReadable(int fd) { ReadConn(fd); }

// The connection being handled is left alone: its later lines must stay in order.
void Supervisor::DrainOtherConns(int except) {
  if (draining_) return;
  draining_ = true;
  std::vector<int> fds;
  for (const auto& [fd, c] : conns_) {
    if (fd != except) fds.push_back(fd);
  }
  for (int fd : fds) ReadConn(fd);
  draining_ = false;
}

void Supervisor::Handle(int fd, const std::string& line) {
  json msg = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!msg.is_object()) return;
  std::string op = msg.value("op", "");
  if (op == "launch") {
    Launch(fd, msg);
  } else if (op == "stop") {
    Stop(msg);
  } else if (op == "query") {
    std::string id = msg.value("id", "");
    // A launch an engine wrote just before it died may still sit unread on its connection.
    DrainOtherConns(fd);
    auto it = attempts_.find(id);
    bool running = it != attempts_.end();
    if (running) it->second->owner = fd;
    Send(fd, json{{"op", "state"}, {"id", id}, {"running", running}});
  }
}

void Supervisor::SendExit(const Attempt& a, const std::string& record, bool workdir_empty) {
  if (a.owner < 0) return;
  json msg{{"op", "exit"}, {"id", a.id}, {"record", record}};
  if (workdir_empty) msg["workdir_empty"] = true;
  Send(a.owner, msg);
}

void Supervisor::FailBeforeStart(std::unique_ptr<Attempt> a, const std::string& why) {
  int64_t now = RealUs();
  if (a->in_use_fd >= 0) close(a->in_use_fd);
  if (!a->in_use.empty()) RemoveContainerConfig(a->argv);
  std::string rec = Record(-1, 0, false, "", 0, 0, 0, 0, LimitsText(*a), now, now, why);
  journals_.Write(a->exit_file, rec);
  SendExit(*a, rec);
  for (const auto* dir : {&a->v2_cg, &a->mem_cg, &a->cpu_cg}) QueueRmdir(*dir);
}

void Supervisor::Launch(int fd, const json& msg) {
  std::unique_ptr<Attempt> a = ParseLaunch(msg);
  a->owner = fd;
  if (a->id.empty()) return;
  if (auto it = attempts_.find(a->id); it != attempts_.end()) {
    it->second->owner = fd;  // launched twice: the running one reports to the latest launcher
    return;
  }
  if (a->argv.empty()) return FailBeforeStart(std::move(a), "empty command");
  bool isolated = a->uid >= 0;
  for (const std::string& dir : {Dirname(a->exit_file), Dirname(a->log_path)}) {
    // The attempts' directory of a live attempt's journal exists: not made on every launch.
    if (journals_.Held(dir + "/")) continue;
    // Isolated: the logs and exit records are ours alone (0700 leaf, 0711 parents).
    if (isolated ? !MakeDirs(dir, 0711, 0700) : !MakeDirs(dir)) {
      return FailBeforeStart(std::move(a),
                             "cannot create directory " + dir + ": " + strerror(errno));
    }
  }
  std::string pool = Dirname(a->workdir);
  // The step's own directories, and which of them were made just now (0700, ours).
  std::vector<std::pair<const std::string*, bool>> own;
  if (!a->workdir.empty()) {
    bool made = false;
    if (!spares_.Make(pool, a->workdir, isolated, &made)) {
      return FailBeforeStart(std::move(a),
                             "cannot create directory " + a->workdir + ": " + strerror(errno));
    }
    own.emplace_back(&a->workdir, made);
  }
  for (const std::string& dir : a->make_dirs) {
    bool made = false;
    if (!spares_.Make(pool, dir, isolated, &made)) {
      return FailBeforeStart(std::move(a),
                             "cannot create directory " + dir + ": " + strerror(errno));
    }
    own.emplace_back(&dir, made);
  }
  if (isolated) {
    // The step's own directories become its identity's (0700); everything above them stays
    // ours (0711: it may pass through, not list or change).
    for (const auto& [dir, made] : own) {
      uid_t uid = uid_t(a->uid);
      gid_t gid = gid_t(a->gid);
      if (!(made ? GiveNewDir(*dir, uid, gid) : GiveDir(*dir, uid, gid))) {
        return FailBeforeStart(std::move(a), "cannot hand directory " + *dir + " to uid " +
                                                 std::to_string(a->uid) + ": " + strerror(errno));
      }
    }
  }
  if (!a->in_use.empty()) {
    // The image bundle the container runs from is not evicted while we hold this.
    a->in_use_fd = open(a->in_use.c_str(), O_RDWR | O_CLOEXEC);
    if (a->in_use_fd < 0 || flock(a->in_use_fd, LOCK_SH) != 0) {
      if (a->in_use_fd >= 0) close(a->in_use_fd);
      a->in_use_fd = -1;
      return FailBeforeStart(
          std::move(a), "image bundle gone from the cache: " + a->in_use + ": " + strerror(errno));
    }
  }
  // stdout+stderr through a pipe: the log is created at the first byte (WriteLog).
  int out_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return FailBeforeStart(std::move(a), std::string("cannot create a pipe: ") + strerror(errno));
  }
  a->mechanism = SetupLimits(a.get());

  // Everything the child needs is prepared before the fork: it only makes system calls, and
  // may read this until its exec, after SpawnChild returned (so the attempt keeps it).
  struct Start {
    std::vector<char*> argv, envp;  // argv with ChildPlan's spare slot in front
    std::vector<const char*> procs;
    std::string program;
    ChildPlan plan;
    NsPlan ns;
  };
  auto start = std::make_shared<Start>();
  start->argv.reserve(a->argv.size() + 2);
  start->argv.push_back(nullptr);
  for (auto& s : a->argv) start->argv.push_back(s.data());
  start->argv.push_back(nullptr);
  start->envp.reserve(a->env.size() + 1);
  for (auto& s : a->env) start->envp.push_back(s.data());
  start->envp.push_back(nullptr);
  ChildPlan& plan = start->plan;
  plan.argv = start->argv.data() + 1;
  plan.envp = start->envp.data();
  for (const auto& f : a->procs) start->procs.push_back(f.c_str());
  start->procs.push_back(nullptr);
  plan.procs = start->procs.data();
  plan.as_limit = {rlim_t(a->memory), rlim_t(a->memory)};
  plan.use_rlimit = a->mechanism == "rlimit" && a->memory > 0;
  plan.workdir = a->workdir.empty() ? nullptr : a->workdir.c_str();
  start->program = programs_.Resolve(a->argv[0], a->env, a->workdir, NowMs());
  plan.program = start->program.empty() ? nullptr : start->program.c_str();
  plan.devnull = devnull_;
  plan.out = out_pipe[1];
  plan.parent = pid_;
  // A container attempt's uid only owns its directories: runc runs as us and starts the
  // step as that uid (its config's process.user).
  plan.uid = a->in_use.empty() ? a->uid : -1;
  plan.gid = a->in_use.empty() ? a->gid : -1;
  if (a->userns) {
    start->ns = PlanNamespace(*a);
    plan.ns = &start->ns;
  }
  if (StartsWithoutWaiting(plan)) a->child_stack = stacks_.Take();  // none: vfork, waiting

  a->start_ms = NowMs();
  a->started_us = RealUs();
  pid_t child = SpawnChild(plan, a->child_stack);
  a->child_plan = std::move(start);
  close(out_pipe[1]);
  if (child < 0) {
    close(out_pipe[0]);
    stacks_.Give(a->child_stack);
    a->child_stack = nullptr;
    return FailBeforeStart(std::move(a), std::string("fork failed: ") + strerror(errno));
  }
  setpgid(child, child);  // also here, so signals reach the group even before the child runs
  a->pid = child;
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  a->pipe_fd = out_pipe[0];
  by_pipe_[a->pipe_fd] = a.get();
  Add(a->pipe_fd, EPOLLIN);
  by_pid_[child] = a.get();
  a->journal = JournalDir(a->exit_file);
  journals_.Hold(a->journal);
  attempts_[a->id] = std::move(a);
}

void Supervisor::Stop(const json& msg) {
  auto it = attempts_.find(msg.value("id", ""));
  if (it == attempts_.end()) return;
  Attempt* a = it->second.get();
  if (a->exited) return;
  if (a->stop.empty()) a->stop = msg.value("timed_out", false) ? "timeout" : "cancel";
  kill(-a->pid, SIGTERM);
  if (a->kill_at < 0) a->kill_at = NowMs() + a->grace_ms;
}

void Supervisor::OnPipe(Attempt* a) {
  while (a->pipe_fd >= 0) {
    char buf[65536];
    ssize_t n = read(a->pipe_fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      by_pipe_.erase(a->pipe_fd);
      epoll_ctl(epoll_, EPOLL_CTL_DEL, a->pipe_fd, nullptr);
      close(a->pipe_fd);
      a->pipe_fd = -1;
      break;
    }
    if (a->secrets.empty()) {
      WriteLog(a, buf, size_t(n));
      continue;
    }
    a->pending.append(buf, size_t(n));
    size_t cut = a->pending.rfind('\n');
    // Mask whole lines, so a secret split across two reads is still found.
    if (cut != std::string::npos || a->pending.size() > 1 << 20) {
      size_t len = cut == std::string::npos ? a->pending.size() : cut + 1;
      std::string chunk = a->pending.substr(0, len);
      a->pending.erase(0, len);
      Mask(&chunk, a->secrets);
      WriteLog(a, chunk.data(), chunk.size());
    }
  }
  if (a->exited) Finish(a);
}

void Supervisor::OnSignal() {
  signalfd_siginfo si;
  while (read(sfd_, &si, sizeof(si)) == sizeof(si)) {
  }
  while (true) {
    // Peek first: while the main process is a zombie its pid, and so its group id, cannot
    // be reused, so killing the group below cannot hit a stranger.
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) break;
    pid_t pid = info.si_pid;
    auto it = by_pid_.find(pid);
    if (it != by_pid_.end()) {
      kill(-pid, SIGKILL);  // whatever the step left behind in its group goes with it
      for (const auto& f : it->second->procs) KillCgroup(f);
    }
    int status = 0;
    rusage ru{};
    if (wait4(pid, &status, WNOHANG, &ru) != pid) break;
    if (it == by_pid_.end()) continue;  // an orphan handed to us as subreaper: just reaped
    Attempt* a = it->second;
    by_pid_.erase(it);
    OnExited(a, status, ru);
  }
}

void Supervisor::OnExited(Attempt* a, int status, const rusage& ru) {
  a->exited = true;
  a->status = status;
  a->ru = ru;
  a->wall_ms = NowMs() - a->start_ms;
  a->ended_us = RealUs();
  a->kill_at = -1;
  if (a->pipe_fd >= 0) {
    a->drain_until = NowMs() + kPipeDrainMs;
    OnPipe(a);  // finishes at EOF (the group was just killed) or at drain_until
    return;
  }
  Finish(a);
}

void Supervisor::Finish(Attempt* a) {
  if (a->pipe_fd >= 0) {
    by_pipe_.erase(a->pipe_fd);
    epoll_ctl(epoll_, EPOLL_CTL_DEL, a->pipe_fd, nullptr);
    close(a->pipe_fd);
    a->pipe_fd = -1;
  }
  if (!a->pending.empty()) {
    Mask(&a->pending, a->secrets);
    WriteLog(a, a->pending.data(), a->pending.size());
  }
  long long cpu_ms = (a->ru.ru_utime.tv_sec + a->ru.ru_stime.tv_sec) * 1000LL +
                     (a->ru.ru_utime.tv_usec + a->ru.ru_stime.tv_usec) / 1000;
  long long peak = a->ru.ru_maxrss * 1024LL;
  if (long long p = CgroupPeak(*a); p > 0) peak = p;
  bool oom = CgroupOomKilled(*a);
  int exit_code = WIFEXITED(a->status) ? WEXITSTATUS(a->status) : -1;
  int sig = WIFSIGNALED(a->status) ? WTERMSIG(a->status) : 0;
  long long peak_cpu = PeakCpuMillicores(a->peak_cpu_millicores, cpu_ms, a->wall_ms);
  std::string rec = Record(exit_code, sig, oom, a->stop, a->wall_ms, cpu_ms, peak, peak_cpu,
                           LimitsText(*a), a->started_us, a->ended_us, a->note);
  // Empty now: a later attempt may take it over, and the engine need not look in it.
  bool workdir_empty = spares_.Recycle(a->workdir);
  journals_.Write(a->exit_file, rec);  // the durable truth first, then the fast path
  journals_.Release(a->journal);
  if (a->log_fd >= 0) close(a->log_fd);
  if (a->in_use_fd >= 0) close(a->in_use_fd);
  if (!a->in_use.empty()) RemoveContainerConfig(a->argv);
  for (const auto* dir : {&a->v2_cg, &a->mem_cg, &a->cpu_cg}) QueueRmdir(*dir);
  SendExit(*a, rec, workdir_empty);
  stacks_.Give(a->child_stack);  // the child is gone: its stack and plan are free
  attempts_.erase(a->id);        // destroys *a
}

void Supervisor::QueueRmdir(const std::string& dir) {
  if (dir.empty()) return;
  if (rmdir(dir.c_str()) == 0 || errno != EBUSY) return;
  rmdirs_.push_back({dir, kRmdirTries, NowMs() + kRmdirRetryMs});
}

int64_t Supervisor::NextDeadline() const {
  int64_t next = -1;
  auto take = [&](int64_t t) {
    if (t >= 0 && (next < 0 || t < next)) next = t;
  };
  for (const auto& [id, a] : attempts_) {
    take(a->kill_at);
    take(a->drain_until);
    if (!a->exited) take(a->next_sample_ms);
  }
  for (const auto& r : rmdirs_) take(r.next_ms);
  return next;
}

void Supervisor::Timers() {
  int64_t now = NowMs();
  std::vector<Attempt*> drained;
  for (auto& [id, a] : attempts_) {
    if (a->kill_at >= 0 && now >= a->kill_at) {
      kill(-a->pid, SIGKILL);
      for (const auto& f : a->procs) KillCgroup(f);
      a->kill_at = -1;
    }
    if (a->drain_until >= 0 && now >= a->drain_until) drained.push_back(a.get());
  }
  for (Attempt* a : drained) Finish(a);
  SampleUsage(now);
  for (size_t i = 0; i < rmdirs_.size();) {
    PendingRmdir& r = rmdirs_[i];
    if (now >= r.next_ms) {
      bool busy = rmdir(r.dir.c_str()) != 0 && errno == EBUSY;
      if (!busy || --r.tries_left <= 0) {
        rmdirs_.erase(rmdirs_.begin() + long(i));
        continue;
      }
      r.next_ms = now + kRmdirRetryMs;
    }
    ++i;
  }
}

// Sends every running attempt whose sample is due its usage so far: from its cgroup (v2:
// memory.current, memory.peak, cpu.stat; v1: memory.usage_in_bytes, max_usage_in_bytes and,
// where the cpu controller is mounted with cpuacct, cpuacct.usage), else from /proc of its
// process group (the main process is the group leader). The engine keeps the latest for
// `status`; the exit record has the totals. Attempts nobody owns are sampled too (not sent),
// so their CPU peak (the highest rate between two samples) misses no interval.
void Supervisor::SampleUsage(int64_t now) {
  struct Sample {
    Attempt* a;
    long long cpu_ms = -1, memory = -1, peak = 0;  // -1: no cgroup counter, /proc instead
  };
  std::vector<Sample> due;
  for (auto& [id, a] : attempts_) {
    if (a->exited || a->pid <= 0) continue;
    if (a->next_sample_ms < 0) a->next_sample_ms = a->start_ms + kUsageSampleMs;
    if (now < a->next_sample_ms) continue;
    a->next_sample_ms = now + kUsageSampleMs;
    due.push_back({a.get()});
  }
  if (due.empty()) return;
  std::map<pid_t, GroupUsage> groups;  // the attempts without cgroup counters
  for (Sample& s : due) {
    const Attempt& a = *s.a;
    s.peak = CgroupPeak(a);
    ReadCgroupUsage(a, &s.cpu_ms, &s.memory);
    if (s.cpu_ms < 0 || s.memory < 0) groups[a.pid];
  }
  if (!groups.empty()) ReadGroupUsage(&groups);
  static const long kTicks = sysconf(_SC_CLK_TCK);
  static const long kPage = sysconf(_SC_PAGESIZE);
  for (Sample& s : due) {
    Attempt* a = s.a;
    if (auto g = groups.find(a->pid); g != groups.end()) {
      if (s.cpu_ms < 0 && kTicks > 0) s.cpu_ms = g->second.cpu_ticks * 1000 / kTicks;
      if (s.memory < 0) s.memory = g->second.rss_pages * kPage;
    }
    a->sampled_peak = std::max({a->sampled_peak, s.peak, s.memory});
    long long cpu_ms = std::max(s.cpu_ms, 0LL);
    int64_t since = a->last_sample_ms < 0 ? a->start_ms : a->last_sample_ms;
    if (now > since && cpu_ms >= a->last_cpu_ms) {
      a->peak_cpu_millicores =
          std::max(a->peak_cpu_millicores, (cpu_ms - a->last_cpu_ms) * 1000 / (now - since));
    }
    a->last_sample_ms = now;
    a->last_cpu_ms = cpu_ms;
    if (a->owner < 0) continue;  // nobody to tell
    Send(a->owner, json{{"op", "usage"},
                        {"id", a->id},
                        {"wall_ms", now - a->start_ms},
                        {"cpu_ms", cpu_ms},
                        {"peak_memory_bytes", a->sampled_peak},
                        {"peak_cpu_millicores", a->peak_cpu_millicores}});
  }
}

int Supervisor::Run(const std::string& state_dir, const std::string& socket_name) {
  std::string lock_path = state_dir + "/rsl-supervisor.lock";
  int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return 1;
  // An OFD lock: the backend can test it (F_OFD_GETLK) without taking it.
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(lock_fd, F_OFD_SETLK, &fl) != 0) return 0;  // another supervisor serves this dir
  RemoveStaleContainers(state_dir);

  listen_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  size_t name_len = std::min(socket_name.size(), sizeof(addr.sun_path) - 1);
  memcpy(addr.sun_path + 1, socket_name.data(), name_len);  // sun_path[0] = 0: abstract
  socklen_t addr_len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name_len);
  int64_t bind_until = NowMs() + kBindRetryMs;
  while (bind(listen_, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    if (errno != EADDRINUSE || NowMs() > bind_until) return 1;
    usleep(5000);  // the predecessor released the lock and is closing its socket
  }
  if (listen(listen_, 128) != 0) return 1;

  devnull_ = open("/dev/null", O_RDWR | O_CLOEXEC);
  sigemptyset(&blocked_);
  sigaddset(&blocked_, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked_, nullptr);
  for (int sig : {SIGPIPE, SIGHUP, SIGINT}) signal(sig, SIG_IGN);
  pid_ = getpid();
  mode_t mask = umask(022);  // read (by setting it back): it never changes from here on
  umask(mask);
  SetKnownUmask(mask);
  sfd_ = signalfd(-1, &blocked_, SFD_CLOEXEC | SFD_NONBLOCK);
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  Add(listen_, EPOLLIN);
  Add(sfd_, EPOLLIN);

  int64_t idle_since = NowMs();
  while (true) {
    int64_t now = NowMs();
    bool idle = conns_.empty() && attempts_.empty() && rmdirs_.empty();
    if (!idle) {
      idle_since = -1;
    } else if (idle_since < 0) {
      idle_since = now;
    } else if (now - idle_since >= kIdleExitMs) {
      Accept();  // one who connected at the last moment keeps us alive
      if (conns_.empty()) {
        spares_.RemoveAll();
        break;
      }
      continue;
    }
    int64_t deadline = NextDeadline();
    if (idle)
      deadline =
          deadline < 0 ? idle_since + kIdleExitMs : std::min(deadline, idle_since + kIdleExitMs);
    int timeout = deadline < 0 ? -1 : int(std::max<int64_t>(0, deadline - now));
    epoll_event events[64];
    int n = epoll_wait(epoll_, events, 64, timeout);
    if (n < 0 && errno != EINTR) return 1;
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listen_) {
        Accept();
      } else if (fd == sfd_) {
        OnSignal();
      } else if (auto p = by_pipe_.find(fd); p != by_pipe_.end()) {
        OnPipe(p->second);
      } else if (conns_.count(fd)) {
        if (events[i].events & EPOLLOUT) Flush(fd);
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) OnConnReadable(fd);
      }
    }
    Timers();
  }
  close(listen_);
  return 0;
}

}  // namespace rsl::shim
