// rsl-shim: the supervisor of one attempt of one step, started by the local backend.
//
// It outlives the engine: it runs in its own session, holds the attempt's lock (inherited
// as fd 3 from the backend, so "lock held" == "shim alive" with no race at spawn), starts
// the step as a new process group inside the attempt's cgroups (or under rlimits), relays
// SIGTERM (cancel) / SIGUSR1 (timeout) to the whole group and escalates to SIGKILL after the
// grace period, measures wall time, CPU time and peak memory, detects OOM kills, and writes
// the exit file atomically (tmp + rename) before it exits. A later engine reads that file
// to reconcile an attempt that ended while no engine was watching.
//
// Usage: rsl-shim --exit-file F --log F --workdir D [--memory BYTES] [--cpu-millis N]
//                 [--mem-cgroup DIR] [--cpu-cgroup DIR] [--v2-cgroup DIR] [--grace-ms N]
//                 [--mask-file F] -- argv...
// The shim's own environment is the step's complete environment.
//
// Written against the C library only (small, fast to start), and careful to do nothing
// but async-signal-safe calls between fork and exec.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr int kLockFd = 3;               // the attempt lock, dup2'ed here by the backend
constexpr int kDefaultGraceMs = 10'000;  // SIGTERM -> SIGKILL
constexpr int kExecFailedCode = 127;     // like a shell: command not found / not executable

struct Args {
  std::string exit_file, log, workdir, mem_cg, cpu_cg, v2_cg, mask_file;
  long long memory = 0, cpu_millis = 0;
  int grace_ms = kDefaultGraceMs;
  std::vector<char*> argv;
};

int64_t RealUs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

bool WriteString(const std::string& path, const std::string& s) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, s.data(), s.size()) == ssize_t(s.size());
  close(fd);
  return ok;
}

std::string ReadSmall(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, size_t(n));
  close(fd);
  return out;
}

long long ReadNumberAfter(const std::string& text, const std::string& key) {
  size_t p = text.find(key);
  if (p == std::string::npos) return -1;
  return atoll(text.c_str() + p + key.size());
}

bool ParseArgs(int argc, char** argv, Args* a) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) return false;
    std::string v = argv[++i];
    if (k == "--exit-file") a->exit_file = v;
    else if (k == "--log") a->log = v;
    else if (k == "--workdir") a->workdir = v;
    else if (k == "--memory") a->memory = atoll(v.c_str());
    else if (k == "--cpu-millis") a->cpu_millis = atoll(v.c_str());
    else if (k == "--mem-cgroup") a->mem_cg = v;
    else if (k == "--cpu-cgroup") a->cpu_cg = v;
    else if (k == "--v2-cgroup") a->v2_cg = v;
    else if (k == "--grace-ms") a->grace_ms = atoi(v.c_str());
    else if (k == "--mask-file") a->mask_file = v;
    else return false;
  }
  for (; i < argc; ++i) a->argv.push_back(argv[i]);
  a->argv.push_back(nullptr);
  return !a->exit_file.empty() && !a->log.empty() && a->argv.size() > 1;
}

// Sets up the cgroups; returns the mechanism used ("cgroup v2", "cgroup v1", "rlimit",
// "none") and fills `procs` with the cgroup.procs files the child must join.
std::string SetupLimits(const Args& a, std::vector<std::string>* procs, std::string* note) {
  bool want = a.memory > 0 || a.cpu_millis > 0;
  if (!a.v2_cg.empty()) {
    if (mkdir(a.v2_cg.c_str(), 0755) == 0 || errno == EEXIST) {
      bool ok = true;
      if (a.memory > 0) {
        ok &= WriteString(a.v2_cg + "/memory.max", std::to_string(a.memory));
        WriteString(a.v2_cg + "/memory.swap.max", "0");
      }
      if (a.cpu_millis > 0) {
        ok &= WriteString(a.v2_cg + "/cpu.max", std::to_string(a.cpu_millis * 100) + " 100000");
      }
      if (ok) {
        procs->push_back(a.v2_cg + "/cgroup.procs");
        return "cgroup v2";
      }
    }
    *note = "cgroup v2 not writable (" + std::string(strerror(errno)) + ")";
  }
  if (!a.mem_cg.empty() || !a.cpu_cg.empty()) {
    bool ok = true;
    if (!a.mem_cg.empty()) {
      ok &= mkdir(a.mem_cg.c_str(), 0755) == 0 || errno == EEXIST;
      if (ok && a.memory > 0) {
        ok &= WriteString(a.mem_cg + "/memory.limit_in_bytes", std::to_string(a.memory));
        // Without swap accounting a limited step would swap instead of being OOM-killed.
        WriteString(a.mem_cg + "/memory.memsw.limit_in_bytes", std::to_string(a.memory));
      }
      if (ok) procs->push_back(a.mem_cg + "/cgroup.procs");
    }
    if (ok && !a.cpu_cg.empty()) {
      ok &= mkdir(a.cpu_cg.c_str(), 0755) == 0 || errno == EEXIST;
      if (ok && a.cpu_millis > 0) {
        ok &= WriteString(a.cpu_cg + "/cpu.cfs_period_us", "100000");
        ok &= WriteString(a.cpu_cg + "/cpu.cfs_quota_us", std::to_string(a.cpu_millis * 100));
      }
      if (ok) procs->push_back(a.cpu_cg + "/cgroup.procs");
    }
    if (ok) return "cgroup v1";
    procs->clear();
    *note = "cgroup v1 not writable (" + std::string(strerror(errno)) + ")";
  }
  return want ? "rlimit" : "none";
}

// Replaces every secret value in `data` by ***.
void Mask(std::string* data, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    size_t p = 0;
    while ((p = data->find(s, p)) != std::string::npos) {
      data->replace(p, s.size(), "***");
      p += 3;
    }
  }
}

std::vector<std::string> ReadMaskFile(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty()) return out;
  std::string text = ReadSmall(path);
  unlink(path.c_str());
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\0') {
      if (i > start) out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

void KillCgroup(const std::string& procs_file) {
  std::string pids = ReadSmall(procs_file);
  size_t start = 0;
  while (start < pids.size()) {
    size_t end = pids.find('\n', start);
    if (end == std::string::npos) end = pids.size();
    int pid = atoi(pids.c_str() + start);
    if (pid > 0) kill(pid, SIGKILL);
    start = end + 1;
  }
}

void RemoveCgroup(const std::string& dir) {
  if (dir.empty()) return;
  // A killed task leaves the cgroup asynchronously: retry briefly.
  for (int i = 0; i < 100 && rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) usleep(2000);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, &a)) {
    fprintf(stderr,
            "usage: rsl-shim --exit-file F --log F --workdir D [--memory B] [--cpu-millis N] "
            "[--mem-cgroup D] [--cpu-cgroup D] [--v2-cgroup D] [--grace-ms N] "
            "[--mask-file F] -- argv...\n");
    return 2;
  }
  setsid();  // own session: survives the engine and its terminal
  // Orphaned descendants (a step's background jobs) become our children, so they are
  // reaped here and never linger as zombies.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Close everything inherited but stdio and the lock.
  syscall(SYS_close_range, kLockFd + 1, ~0U, 0);
  fcntl(kLockFd, F_SETFD, FD_CLOEXEC);
  {
    int fd = open((a.exit_file + ".pid").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      std::string s = std::to_string(getpid()) + "\n";
      (void)!write(fd, s.data(), s.size());
      close(fd);
    }
  }

  std::vector<std::string> secrets = ReadMaskFile(a.mask_file);
  std::vector<std::string> procs;
  std::string note;
  std::string mechanism = SetupLimits(a, &procs, &note);

  int log_fd = open(a.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int out_pipe[2] = {-1, -1};
  if (!secrets.empty() && pipe2(out_pipe, O_CLOEXEC) != 0) out_pipe[0] = out_pipe[1] = -1;
  int child_out = out_pipe[1] >= 0 ? out_pipe[1] : log_fd;

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigaddset(&mask, SIGUSR1);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

  // Everything the child needs is prepared before fork.
  std::vector<std::string> pid_writes = procs;
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  rlimit as_limit{rlim_t(a.memory), rlim_t(a.memory)};
  bool use_rlimit = mechanism == "rlimit" && a.memory > 0;
  const char* workdir = a.workdir.empty() ? nullptr : a.workdir.c_str();

  int64_t start = NowMs();
  int64_t started_us = RealUs();
  pid_t child = fork();
  if (child == 0) {
    setpgid(0, 0);
    char pidbuf[32];
    int n = snprintf(pidbuf, sizeof(pidbuf), "%d", int(getpid()));
    for (const auto& f : pid_writes) {
      int fd = open(f.c_str(), O_WRONLY);
      if (fd >= 0) {
        (void)!write(fd, pidbuf, size_t(n));
        close(fd);
      }
    }
    if (use_rlimit) setrlimit(RLIMIT_AS, &as_limit);
    if (devnull >= 0) dup2(devnull, 0);
    if (child_out >= 0) {
      dup2(child_out, 1);
      dup2(child_out, 2);
    }
    sigprocmask(SIG_UNBLOCK, &mask, nullptr);
    if (workdir && chdir(workdir) != 0) {
      dprintf(2, "rsl-shim: cannot enter %s: %s\n", workdir, strerror(errno));
      _exit(kExecFailedCode);
    }
    execvp(a.argv[0], a.argv.data());
    dprintf(2, "rsl-shim: cannot run %s: %s\n", a.argv[0], strerror(errno));
    _exit(kExecFailedCode);
  }
  if (child < 0) {
    std::string s = "exit_code=-1\nsignal=0\noom=0\nstop=\nwall_ms=0\ncpu_ms=0\n"
                    "peak_memory_bytes=0\nlimits=" + mechanism + "\nmessage=fork failed: " +
                    strerror(errno) + "\n";
    std::string tmp = a.exit_file + ".tmp";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      (void)!write(fd, s.data(), s.size());
      close(fd);
      rename(tmp.c_str(), a.exit_file.c_str());
    }
    return 1;
  }
  setpgid(child, child);  // also here, so signals reach the group even before the child runs
  if (out_pipe[1] >= 0) close(out_pipe[1]);

  std::string stop;  // "", "cancel" or "timeout"
  int64_t kill_at = -1;
  int status = 0;
  bool exited = false;
  std::string pending;  // masked output not yet ending in a newline
  while (!exited) {
    pollfd fds[2] = {{sfd, POLLIN, 0}, {out_pipe[0], POLLIN, 0}};
    int nfds = out_pipe[0] >= 0 ? 2 : 1;
    int timeout = -1;
    if (kill_at >= 0) timeout = int(std::max<int64_t>(0, kill_at - NowMs()));
    int r = poll(fds, nfds, timeout);
    if (r < 0 && errno != EINTR) break;
    if (kill_at >= 0 && NowMs() >= kill_at) {
      kill(-child, SIGKILL);
      for (const auto& f : procs) KillCgroup(f);
      kill_at = -1;
    }
    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP))) {
      char buf[65536];
      ssize_t n = read(out_pipe[0], buf, sizeof(buf));
      if (n > 0) {
        pending.append(buf, size_t(n));
        size_t cut = pending.rfind('\n');
        // Mask whole lines, so a secret split across two reads is still found.
        if (cut != std::string::npos || pending.size() > 1 << 20) {
          size_t len = cut == std::string::npos ? pending.size() : cut + 1;
          std::string chunk = pending.substr(0, len);
          pending.erase(0, len);
          Mask(&chunk, secrets);
          (void)!write(log_fd, chunk.data(), chunk.size());
        }
      } else {
        close(out_pipe[0]);
        out_pipe[0] = -1;
      }
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si;
      while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) continue;
        if (stop.empty()) stop = si.ssi_signo == SIGUSR1 ? "timeout" : "cancel";
        kill(-child, SIGTERM);
        if (kill_at < 0) kill_at = NowMs() + a.grace_ms;
        fcntl(sfd, F_SETFL, O_NONBLOCK);
      }
      fcntl(sfd, F_SETFL, O_NONBLOCK);
    }
    rusage unused;
    pid_t w = wait4(child, &status, WNOHANG, &unused);
    if (w == child) exited = true;
  }
  int64_t wall = NowMs() - start;
  int64_t ended_us = RealUs();
  // Whatever the step left behind in its group or cgroup goes with it.
  kill(-child, SIGKILL);
  for (const auto& f : procs) KillCgroup(f);
  while (out_pipe[0] >= 0) {
    char buf[65536];
    ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n <= 0) break;
    pending.append(buf, size_t(n));
  }
  if (!pending.empty()) {
    Mask(&pending, secrets);
    (void)!write(log_fd, pending.data(), pending.size());
  }

  // Reap whatever was left in the group (killed above) before measuring.
  for (int i = 0; i < 100; ++i) {
    pid_t w = waitpid(-1, nullptr, WNOHANG);
    if (w < 0) break;  // no children left
    if (w == 0) usleep(1000);
  }
  rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  long long cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000LL +
                     (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
  long long peak = ru.ru_maxrss * 1024LL;
  bool oom = false;
  if (!a.v2_cg.empty() && mechanism == "cgroup v2") {
    long long p = atoll(ReadSmall(a.v2_cg + "/memory.peak").c_str());
    if (p > 0) peak = p;
    oom = ReadNumberAfter(ReadSmall(a.v2_cg + "/memory.events"), "oom_kill ") > 0;
  } else if (!a.mem_cg.empty() && mechanism == "cgroup v1") {
    long long p = atoll(ReadSmall(a.mem_cg + "/memory.max_usage_in_bytes").c_str());
    if (p > 0) peak = p;
    oom = ReadNumberAfter(ReadSmall(a.mem_cg + "/memory.oom_control"), "oom_kill ") > 0;
  }
  int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

  std::string limits = mechanism;
  if (a.memory > 0 || a.cpu_millis > 0) {
    limits += " (memory " + (a.memory > 0 ? std::to_string(a.memory) : std::string("-")) +
              ", cpu " + (a.cpu_millis > 0 ? std::to_string(a.cpu_millis) + "m" : "-") + ")";
  }
  std::string rec = "exit_code=" + std::to_string(exit_code) + "\nsignal=" + std::to_string(sig) +
                    "\noom=" + (oom ? "1" : "0") + "\nstop=" + stop +
                    "\nwall_ms=" + std::to_string(wall) + "\ncpu_ms=" + std::to_string(cpu_ms) +
                    "\npeak_memory_bytes=" + std::to_string(peak) + "\nlimits=" + limits +
                    "\nstarted_us=" + std::to_string(started_us) +
                    "\nended_us=" + std::to_string(ended_us) + "\nmessage=" + note + "\n";
  std::string tmp = a.exit_file + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!write(fd, rec.data(), rec.size());
    close(fd);
    rename(tmp.c_str(), a.exit_file.c_str());
  }
  if (log_fd >= 0) close(log_fd);
  RemoveCgroup(a.v2_cg);
  RemoveCgroup(a.mem_cg);
  RemoveCgroup(a.cpu_cg);
  return 0;
}
