// rsl-shim: the local backend's step supervisor, ONE per state directory.
//
//   rsl-shim --serve --state-dir DIR --socket NAME
//
// Started by the local backend (local.cc) when none runs for its state directory. It
// daemonizes (own session, chdir /, stdio on /dev/null, inherited fds closed), holds an OFD
// write lock on <DIR>/rsl-supervisor.lock for its whole life ("lock held" == "supervisor
// alive"; a second one started concurrently sees the lock and exits), is a child subreaper,
// and listens on the abstract unix socket NAME (only connections from its own uid are
// accepted). It outlives the engine: steps keep running while no engine is connected, and a
// later engine adopts them.
//
// Protocol: newline-delimited JSON. On accept the supervisor sends {"op":"hello"}. Then:
//   client -> {"op":"launch","id":..,"argv":[..],"env":["K=V",..],"workdir":..,
//              "make_dirs":[..],"log":..,"exit_file":..,"memory":N,"cpu_millis":N,
//              "v2_cg":..,"mem_cg":..,"cpu_cg":..,"grace_ms":N,"secrets":[..]}   (no reply)
//   client -> {"op":"stop","id":..,"timed_out":bool}                              (no reply)
//   client -> {"op":"query","id":..}  -> {"op":"state","id":..,"running":bool}
//   supervisor -> {"op":"exit","id":..,"record":"<the exit record>"}
//   supervisor -> {"op":"usage","id":..,"wall_ms":N,"cpu_ms":N,"peak_memory_bytes":N}
//                 about every kUsageSampleMs while the attempt runs (see SampleUsage)
// "exit_file" names the attempt's exit record: it is appended to the journal beside it
// (see below), the file itself is not created.
// The exit message goes to the connection that owns the attempt: its launcher, or whoever
// queried it last. Before answering a query the supervisor reads everything already sent on
// every connection, so a launch written by an engine that died a moment ago is never missed.
//
// Per attempt: mkdir -p workdir, make_dirs and the parents of the log and exit files (the
// working directory of an ended attempt, when left empty, stays until it is renamed into a
// later attempt's directory instead of making a new one: see MakeAttemptDir);
// cgroup v2 / v1 limits (or RLIMIT_AS) as the backend asked; the step is forked as a new
// process group with PR_SET_PDEATHSIG(SIGKILL) (nothing runs unsupervised), its complete
// environment and stdout+stderr through a pipe to the log, which is created at the first
// byte of output (a silent step leaves no log file; with secrets, whole lines are written
// with the secret values masked). Stop: SIGTERM to the group now, SIGKILL after the grace
// period. When the step's main process ends, whatever is left of its group and cgroup is
// killed, the pipe is drained (until EOF, at most kPipeDrainMs), and the exit record
// (key=value lines ending with "end=1") is appended, before the exit message is sent, to
// the exit journal of the exit file's directory, <dirname(exit_file)>/exits:
//   "\nattempt=<basename(exit_file)>\n" + record, in one write() (see WriteExit)
// so a silent step creates no file at all, only its directories. The journal is open while
// attempts recording there are alive. ReadExitFile in local.cc reads the exit file if one
// exists (older supervisors, other writers), else the last complete record of its key in
// the journal; a record torn by a crash has no "end=1" and is ignored.
//
// The event loop never blocks on one attempt: timers (grace period, cgroup rmdir retries,
// usage samples, idle exit) are deadlines in the poll loop. With no client and no attempt for
// kIdleExitMs the supervisor exits.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

extern char** environ;

namespace {

using nlohmann::json;

constexpr int kDefaultGraceMs = 10'000;  // SIGTERM -> SIGKILL
constexpr int kExecFailedCode = 127;     // like a shell: command not found / not executable
constexpr int64_t kIdleExitMs = 3000;    // no client, no attempt: exit (tests make many dirs)
constexpr int64_t kPipeDrainMs = 2000;   // a step's escaped descendants may hold the mask pipe
constexpr int64_t kRmdirRetryMs = 10;    // a killed task leaves its cgroup asynchronously
constexpr int kRmdirTries = 200;
constexpr int64_t kBindRetryMs = 2000;  // an exiting predecessor may still hold the name
constexpr size_t kMaxLineBytes = 64u << 20;
constexpr size_t kMaxSpareDirs = 64;  // per directory of working directories
// Live usage samples of running attempts: often enough for `status`, and an attempt shorter
// than this (most steps of a big DAG) is never sampled at all.
constexpr int64_t kUsageSampleMs = 1000;

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

int64_t RealUs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
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

// A step isolated by a user namespace runs as our uid too: it is told apart by its user
// namespace. /proc/<pid>/uid_map is readable by all and shows the map as seen from ours, so
// it equals our own exactly when the peer is in our namespace.
bool InOurUserNamespace(pid_t pid) {
  static const std::string ours = ReadSmall("/proc/self/uid_map");
  if (pid <= 0) return false;
  return ReadSmall("/proc/" + std::to_string(pid) + "/uid_map") == ours;
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

long long ReadNumberAfter(const std::string& text, const std::string& key) {
  size_t p = text.find(key);
  if (p == std::string::npos) return -1;
  return atoll(text.c_str() + p + key.size());
}

// mkdir -p: missing parents are made `parent_mode`, a missing `path` itself `leaf_mode`. The
// default 0755 is left to the umask, as for any mkdir; another mode (an isolated step's 0711
// parents and 0700 directories) is set exactly, whatever the umask. errno is kept on failure.
bool MakeDirs(const std::string& path, mode_t parent_mode = 0755, mode_t leaf_mode = 0755) {
  if (path.empty()) return true;
  auto make = [&](const std::string& dir, mode_t mode) {
    if (mkdir(dir.c_str(), mode) != 0) return errno == EEXIST;
    return mode == 0755 || chmod(dir.c_str(), mode) == 0;
  };
  if (make(path, leaf_mode)) return true;
  if (errno != ENOENT) return false;
  size_t p = path.rfind('/');
  if (p == std::string::npos || p == 0) return false;
  if (!MakeDirs(path.substr(0, p), parent_mode, parent_mode)) return false;
  return make(path, leaf_mode);
}

std::string Dirname(const std::string& path) {
  size_t p = path.rfind('/');
  return p == std::string::npos || p == 0 ? "" : path.substr(0, p);
}

// Hands an isolated step its directory: owner uid:gid, mode 0700. Through an O_NOFOLLOW
// descriptor, so a link in its place is refused, never followed. errno is kept on failure.
bool GiveDir(const std::string& dir, uid_t uid, gid_t gid) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = fchown(fd, uid, gid) == 0 && fchmod(fd, 0700) == 0;
  int e = errno;
  close(fd);
  errno = e;
  return ok;
}

// True when `dir` is a directory holding nothing but "." and "..".
bool IsEmptyDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool empty = true;
  while (const dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(d);
  return empty;
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

// What the child does between fork and exec, prepared by the supervisor beforehand.
struct ChildPlan {
  char** argv = nullptr;
  char** envp = nullptr;
  const std::vector<std::string>* procs = nullptr;  // cgroup.procs files to join
  rlimit as_limit{};
  bool use_rlimit = false;
  const char* workdir = nullptr;
  const char* program = nullptr;  // argv[0] found in PATH by the supervisor (ResolveProgram)
  int devnull = -1, out = -1;
  pid_t parent = 0;
  long long uid = -1, gid = -1;       // isolation by uid: the step's identity (-1: ours)
  const struct NsPlan* ns = nullptr;  // isolation by a mount namespace, when set
};

// Isolation "namespace" (backend/identity.h), prepared by the supervisor: the child makes a
// user and mount namespace, lays an empty tmpfs over each hidden directory (the state and
// runs directories), and binds back the step's own directories (read-write) and its
// dependencies' outputs (read-only) at their paths.
struct NsPlan {
  struct Bind {
    std::string path;
    bool ro = false;
    unsigned long keep = 0;  // the source mount's flags a remount in a user namespace keeps
  };
  std::string uid_map, gid_map;     // "<ours> <ours> 1": the step stays our user inside
  std::vector<std::string> hide;    // tmpfs over each
  std::vector<std::string> mkdirs;  // inside those tmpfs, parents first
  std::vector<Bind> binds;
};

void WriteErr(const char* what, const char* arg, int err) {
  const char* parts[] = {"rsl-shim: ", what, arg, ": ", strerror(err), "\n"};
  for (const char* p : parts) (void)!write(2, p, strlen(p));
}

bool WriteTo(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == ssize_t(text.size());
  close(fd);
  return ok;
}

// The child's half of isolation "namespace": false with errno set and *what naming the step
// that failed. Always a forked child (SpawnChild), never a vfork one, so it may allocate.
bool EnterNamespace(const NsPlan& ns, const char** what) {
  // Our /proc/self files are root's while we are not dumpable (the supervisor is not), and
  // the id maps are written through them. A forked child (never vfork: this is per memory
  // map) may be; the exec decides again for the step.
  *what = "PR_SET_DUMPABLE";
  if (prctl(PR_SET_DUMPABLE, 1) != 0) return false;
  *what = "unshare(CLONE_NEWUSER|CLONE_NEWNS)";
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  *what = "the user namespace's id maps";
  if (!WriteTo("/proc/self/setgroups", "deny") || !WriteTo("/proc/self/uid_map", ns.uid_map) ||
      !WriteTo("/proc/self/gid_map", ns.gid_map)) {
    return false;
  }
  *what = "a private mount namespace";
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  // Opened here, in the new namespace (a bind source must be one of its mounts), and
  // before the tmpfs hides them.
  *what = "a directory of the step";
  std::vector<int> fds;
  for (const auto& b : ns.binds) {
    fds.push_back(open(b.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (fds.back() < 0) return false;
  }
  *what = "a tmpfs over the state directory";
  for (const auto& h : ns.hide) {
    if (mount("tmpfs", h.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=64k") != 0) {
      return false;
    }
  }
  *what = "the step's directories inside the tmpfs";
  for (const auto& d : ns.mkdirs) {
    if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  *what = "a bind mount of the step's directories";
  for (size_t i = 0; i < ns.binds.size(); ++i) {
    const NsPlan::Bind& b = ns.binds[i];
    std::string src = "/proc/self/fd/" + std::to_string(fds[i]);
    if (mount(src.c_str(), b.path.c_str(), nullptr, MS_BIND, nullptr) != 0) return false;
    if (b.ro && mount(nullptr, b.path.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | b.keep,
                      nullptr) != 0) {
      return false;
    }
    close(fds[i]);
  }
  return true;
}

// The child: system calls only (it may share the supervisor's memory, see SpawnChild).
[[noreturn]] void ExecChild(const ChildPlan& p) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the supervisor is gone: so is the step
  if (getppid() != p.parent) _exit(kExecFailedCode);
  setpgid(0, 0);
  char pidbuf[32];
  int n = snprintf(pidbuf, sizeof(pidbuf), "%d", int(getpid()));
  for (const auto& f : *p.procs) {
    int pfd = open(f.c_str(), O_WRONLY);
    if (pfd >= 0) {
      (void)!write(pfd, pidbuf, size_t(n));
      close(pfd);
    }
  }
  if (p.use_rlimit) setrlimit(RLIMIT_AS, &p.as_limit);
  // Output first: what goes wrong from here on is in the step's log.
  dup2(p.devnull, 0);
  dup2(p.out, 1);
  dup2(p.out, 2);
  if (p.ns) {
    const char* what = "";
    if (!EnterNamespace(*p.ns, &what)) {
      WriteErr("step isolation: cannot set up ", what, errno);
      _exit(kExecFailedCode);
    }
  }
  if (p.uid >= 0) {
    // Raw system calls: glibc's setuid() would try to change every thread of the process
    // whose memory a vfork child shares. Groups first, then gid, then uid (after which
    // nothing can be changed back).
    if (syscall(SYS_setgroups, 0, nullptr) != 0 ||
        syscall(SYS_setresgid, gid_t(p.gid), gid_t(p.gid), gid_t(p.gid)) != 0 ||
        syscall(SYS_setresuid, uid_t(p.uid), uid_t(p.uid), uid_t(p.uid)) != 0) {
      WriteErr("cannot drop privileges", "", errno);
      _exit(kExecFailedCode);
    }
  }
  for (int sig : {SIGPIPE, SIGHUP, SIGINT}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (p.workdir && chdir(p.workdir) != 0) {
    WriteErr("cannot enter ", p.workdir, errno);
    _exit(kExecFailedCode);
  }
  if (p.program) execve(p.program, p.argv, p.envp);
  // Not resolved, or that failed (a script without #!, say): execvp does it all again and
  // says why, exactly as without the resolution.
  environ = p.envp;  // execvp searches the step's PATH, and passes its environment
  execvp(p.argv[0], p.argv);
  WriteErr("cannot run ", p.argv[0], errno);
  _exit(kExecFailedCode);
}

// The file execvp would run for `name` under the step's PATH, found here instead of by the
// child: execvp tries execve in each PATH directory in turn, and a failed execve costs
// nearly what a successful one's setup does (with this machine's PATH of ten directories,
// nine failed execve per `true` step, in the vfork child while the supervisor waits). Like
// execvp: the first PATH entry of the environment (none: /bin:/usr/bin); an empty entry is
// the working directory; entries that are not executable regular files are passed over.
// The result is what execvp would pass to execve: relative when the PATH entry is.
// Empty when `name` has a '/' or nothing was found: the child then calls execvp itself.
std::string ResolveProgram(const std::string& name, const std::vector<std::string>& env,
                           const std::string& workdir) {
  if (name.empty() || name.find('/') != std::string::npos) return "";
  std::string path = "/bin:/usr/bin";
  for (const auto& e : env) {
    if (e.compare(0, 5, "PATH=") == 0) {
      path = e.substr(5);
      break;
    }
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    start = end + 1;
    // What execvp passes to execve (relative entries stay relative: the child is in
    // `workdir` by then), and where that is from here.
    std::string file = dir.empty() ? name : dir + "/" + name;
    std::string here = file[0] == '/' ? file : (workdir.empty() ? "/" : workdir + "/") + file;
    struct stat st;
    if (stat(here.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(here.c_str(), X_OK) == 0) {
      return file;
    }
  }
  return "";
}

// Starts the child like posix_spawn does: vfork shares our memory until the exec (no
// page-table copy, the biggest part of a fork), so the only thing the child changes in
// it, `environ`, is put back here. The sanitizers' runtimes are not vfork-safe: fork there.
pid_t SpawnChild(const ChildPlan& plan) {
  char** saved_environ = environ;
#if defined(__SANITIZE_ADDRESS__)
  pid_t pid = fork();
#else
  // A step entering a namespace changes what is per memory map (EnterNamespace): fork.
  pid_t pid = plan.ns ? fork() : vfork();
#endif
  if (pid == 0) ExecChild(plan);
  environ = saved_environ;
  return pid;
}

struct Attempt {
  std::string id, exit_file, log_path, workdir;
  std::vector<std::string> argv, env, make_dirs, secrets;
  long long memory = 0, cpu_millis = 0;
  std::string v2_cg, mem_cg, cpu_cg;
  int grace_ms = kDefaultGraceMs;
  long long uid = -1, gid = -1;  // isolation by uid: the step's identity (-1: ours)
  bool userns = false;           // isolation by a mount namespace
  std::vector<std::string> hide, ro;

  std::string mechanism = "none", note;
  std::vector<std::string> procs;  // cgroup.procs files the child joins
  int owner = -1;                  // connection fd that gets the exit message; -1 = none
  pid_t pid = -1;
  int log_fd = -1, pipe_fd = -1;  // pipe_fd: read end of the step's stdout+stderr pipe
  bool log_opened = false;        // the log was opened (or tried) at the first output
  std::string pending;            // masked output not yet ending in a newline
  std::string journal;            // the exit journal's directory while the attempt is alive
  std::string stop;               // "", "cancel" or "timeout"
  int64_t start_ms = 0, started_us = 0, kill_at = -1;
  // After the main process ended:
  bool exited = false;
  int status = 0;
  rusage ru{};
  int64_t wall_ms = 0, ended_us = 0, drain_until = -1;
  // Live usage samples (SampleUsage): when the next is due, the highest memory seen.
  int64_t next_sample_ms = -1;
  long long sampled_peak = 0;
};

// The highest memory use the attempt's cgroup recorded (v2 memory.peak, kernels >= 5.19; v1
// memory.max_usage_in_bytes); 0 without a memory cgroup.
long long CgroupPeak(const Attempt& a) {
  if (a.mechanism == "cgroup v2") return atoll(ReadSmall(a.v2_cg + "/memory.peak").c_str());
  if (a.mechanism == "cgroup v1" && !a.mem_cg.empty()) {
    return atoll(ReadSmall(a.mem_cg + "/memory.max_usage_in_bytes").c_str());
  }
  return 0;
}

struct Conn {
  std::string in, out;
};

// The exit journal of one directory, open while attempts recording there are alive.
struct Journal {
  int fd = -1;
  int live = 0;
};

struct PendingRmdir {
  std::string dir;
  int tries_left = kRmdirTries;
  int64_t next_ms = 0;
};

class Supervisor {
 public:
  int Run(const std::string& state_dir, const std::string& socket_name);

 private:
  void Add(int fd, uint32_t events);
  void Accept();
  void OnConnReadable(int fd);
  void ReadConn(int fd);
  void CloseConn(int fd);
  void Send(int fd, const json& msg);
  void Flush(int fd);
  void Handle(int fd, const std::string& line);
  void DrainOtherConns(int except);
  void Launch(int fd, const json& msg);
  void Stop(const json& msg);
  void OnSignal();
  void OnPipe(Attempt* a);
  void OnExited(Attempt* a, int status, const rusage& ru);
  void Finish(Attempt* a);
  void FailBeforeStart(std::unique_ptr<Attempt> a, const std::string& why);
  void SendExit(const Attempt& a, const std::string& record);
  void WriteExit(const std::string& exit_file, const std::string& record);
  void ReleaseJournal(Attempt* a);
  std::string SetupLimits(Attempt* a);
  void Timers();
  int64_t NextDeadline() const;
  void QueueRmdir(const std::string& dir);
  bool MakeAttemptDir(const std::string& pool, const std::string& dir, bool isolated);
  void RecycleWorkdir(const std::string& workdir);
  void RemoveSpareDirs();
  void SampleUsage(int64_t now);

  int epoll_ = -1, sfd_ = -1, listen_ = -1, devnull_ = -1;
  sigset_t blocked_;
  std::map<int, Conn> conns_;
  std::map<std::string, std::unique_ptr<Attempt>> attempts_;
  std::map<pid_t, Attempt*> by_pid_;
  std::map<int, Attempt*> by_pipe_;
  std::map<std::string, Journal> journals_;  // directory (with its "/") -> its journal
  std::vector<PendingRmdir> rmdirs_;
  // Empty working directories of ended attempts, by the directory that holds them: the next
  // attempts get them by rename instead of mkdir (see MakeAttemptDir).
  std::map<std::string, std::vector<std::string>> spares_;
  bool draining_ = false;
};

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
  epoll_event ev{};
  ev.events = out.empty() ? uint32_t(EPOLLIN) : uint32_t(EPOLLIN | EPOLLOUT);
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

// Sets up the cgroups; returns the mechanism used ("cgroup v2", "cgroup v1", "rlimit",
// "none") and fills a->procs with the cgroup.procs files the child must join.
std::string Supervisor::SetupLimits(Attempt* a) {
  bool want = a->memory > 0 || a->cpu_millis > 0;
  if (!a->v2_cg.empty()) {
    if (mkdir(a->v2_cg.c_str(), 0755) == 0 || errno == EEXIST) {
      bool ok = true;
      if (a->memory > 0) {
        ok &= WriteString(a->v2_cg + "/memory.max", std::to_string(a->memory));
        WriteString(a->v2_cg + "/memory.swap.max", "0");
      }
      if (a->cpu_millis > 0) {
        ok &= WriteString(a->v2_cg + "/cpu.max", std::to_string(a->cpu_millis * 100) + " 100000");
      }
      if (ok) {
        a->procs.push_back(a->v2_cg + "/cgroup.procs");
        return "cgroup v2";
      }
    }
    a->note = "cgroup v2 not writable (" + std::string(strerror(errno)) + ")";
    a->v2_cg.clear();
  }
  if (!a->mem_cg.empty() || !a->cpu_cg.empty()) {
    bool ok = true;
    if (!a->mem_cg.empty()) {
      ok &= mkdir(a->mem_cg.c_str(), 0755) == 0 || errno == EEXIST;
      if (ok && a->memory > 0) {
        ok &= WriteString(a->mem_cg + "/memory.limit_in_bytes", std::to_string(a->memory));
        // Without swap accounting a limited step would swap instead of being OOM-killed.
        WriteString(a->mem_cg + "/memory.memsw.limit_in_bytes", std::to_string(a->memory));
      }
      if (ok) a->procs.push_back(a->mem_cg + "/cgroup.procs");
    }
    if (ok && !a->cpu_cg.empty()) {
      ok &= mkdir(a->cpu_cg.c_str(), 0755) == 0 || errno == EEXIST;
      if (ok && a->cpu_millis > 0) {
        ok &= WriteString(a->cpu_cg + "/cpu.cfs_period_us", "100000");
        ok &= WriteString(a->cpu_cg + "/cpu.cfs_quota_us", std::to_string(a->cpu_millis * 100));
      }
      if (ok) a->procs.push_back(a->cpu_cg + "/cgroup.procs");
    }
    if (ok) return "cgroup v1";
    a->procs.clear();
    a->note = "cgroup v1 not writable (" + std::string(strerror(errno)) + ")";
  }
  return want ? "rlimit" : "none";
}

std::string LimitsText(const Attempt& a) {
  std::string limits = a.mechanism;
  if (a.memory > 0 || a.cpu_millis > 0) {
    limits += " (memory " + (a.memory > 0 ? std::to_string(a.memory) : std::string("-")) +
              ", cpu " + (a.cpu_millis > 0 ? std::to_string(a.cpu_millis) + "m" : "-") + ")";
  }
  return limits;
}

// The exit record: key=value lines, "end=1" last (ReadExitFile rejects a record without it).
std::string Record(int exit_code, int sig, bool oom, const std::string& stop, int64_t wall_ms,
                   long long cpu_ms, long long peak, const std::string& limits, int64_t started_us,
                   int64_t ended_us, const std::string& message) {
  std::string m = message;
  for (char& c : m) {
    if (c == '\n') c = ' ';
  }
  return "exit_code=" + std::to_string(exit_code) + "\nsignal=" + std::to_string(sig) +
         "\noom=" + (oom ? "1" : "0") + "\nstop=" + stop + "\nwall_ms=" + std::to_string(wall_ms) +
         "\ncpu_ms=" + std::to_string(cpu_ms) + "\npeak_memory_bytes=" + std::to_string(peak) +
         "\nlimits=" + limits + "\nstarted_us=" + std::to_string(started_us) +
         "\nended_us=" + std::to_string(ended_us) + "\nmessage=" + m + "\nend=1\n";
}

// Not fsynced: after a power loss an unrecorded attempt is simply run again.
void WriteRecord(const std::string& path, const std::string& record) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!write(fd, record.data(), record.size());
  close(fd);
}

// The journal's directory: everything up to the exit file's last "/" (with it).
std::string JournalDir(const std::string& exit_file) {
  size_t p = exit_file.rfind('/');
  return p == std::string::npos ? "" : exit_file.substr(0, p + 1);
}

// Appends the record to <dir of exit_file>/exits (ReadExitFile in local.cc reads it), framed
// as "\nattempt=<basename of exit_file>\n" + record, in ONE write: a record torn by a crash
// lacks its "end=1", and the next one starts on a line of its own whatever the torn one left
// (even zeros after a power loss). Creating one file per attempt costs an inode allocation,
// the most expensive thing a short step does on ext4. Not fsynced, like WriteRecord.
void Supervisor::WriteExit(const std::string& exit_file, const std::string& record) {
  if (exit_file.empty()) return;
  std::string dir = JournalDir(exit_file);
  std::string key = exit_file.substr(dir.size());
  if (key.empty() || key.find('\n') != std::string::npos) return WriteRecord(exit_file, record);
  std::string framed = "\nattempt=" + key + "\n" + record;
  auto it = journals_.find(dir);
  int fd = it != journals_.end() ? it->second.fd : -1;
  bool keep = it != journals_.end();  // kept open while the directory's attempts are alive
  if (fd < 0) {
    fd = open((dir + "exits").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (keep) it->second.fd = fd;
  }
  bool ok = fd >= 0 && write(fd, framed.data(), framed.size()) == ssize_t(framed.size());
  if (!keep && fd >= 0) close(fd);
  if (!ok) WriteRecord(exit_file, record);  // the journal cannot take it: a file of its own
}

void Supervisor::ReleaseJournal(Attempt* a) {
  auto it = journals_.find(a->journal);
  if (it == journals_.end() || --it->second.live > 0) return;
  if (it->second.fd >= 0) close(it->second.fd);
  journals_.erase(it);
}

void Supervisor::SendExit(const Attempt& a, const std::string& record) {
  if (a.owner >= 0) Send(a.owner, json{{"op", "exit"}, {"id", a.id}, {"record", record}});
}

void Supervisor::FailBeforeStart(std::unique_ptr<Attempt> a, const std::string& why) {
  int64_t now = RealUs();
  std::string rec = Record(-1, 0, false, "", 0, 0, 0, LimitsText(*a), now, now, why);
  WriteExit(a->exit_file, rec);
  SendExit(*a, rec);
  for (const auto* dir : {&a->v2_cg, &a->mem_cg, &a->cpu_cg}) QueueRmdir(*dir);
}

// Appends to the step's log, created at the first byte: a step that prints nothing costs
// no file. Short writes are retried; a log that cannot be opened drops the output.
void WriteLog(Attempt* a, const char* data, size_t len) {
  if (len == 0) return;
  if (!a->log_opened) {
    a->log_opened = true;
    if (!a->log_path.empty()) {
      a->log_fd = open(a->log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
  }
  while (a->log_fd >= 0 && len > 0) {
    ssize_t n = write(a->log_fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    len -= size_t(n);
  }
}

std::vector<std::string> Strings(const json& msg, const char* key) {
  std::vector<std::string> out;
  auto it = msg.find(key);
  if (it == msg.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

// The mount flags a bind of `path` must keep when remounted read-only in a user namespace
// (the kernel refuses to drop a flag that the outer mount has locked).
unsigned long LockedFlags(const std::string& path) {
  struct statvfs sv {};
  if (statvfs(path.c_str(), &sv) != 0) return MS_NOSUID | MS_NODEV;
  unsigned long f = 0;
  if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

bool Below(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

NsPlan PlanNamespace(const Attempt& a) {
  NsPlan ns;
  ns.uid_map = std::to_string(getuid()) + " " + std::to_string(getuid()) + " 1";
  ns.gid_map = std::to_string(getgid()) + " " + std::to_string(getgid()) + " 1";
  for (const auto& h : a.hide) {
    if (h.empty() || h[0] != '/' || !IsDirectory(h)) continue;
    bool inside = false;  // a directory below another hidden one is hidden with it
    for (const auto& other : a.hide) inside = inside || Below(h, other);
    if (!inside) ns.hide.push_back(h);
  }
  std::vector<std::pair<std::string, bool>> wanted;
  if (!a.workdir.empty()) wanted.emplace_back(a.workdir, false);
  for (const auto& d : a.make_dirs) wanted.emplace_back(d, false);
  for (const auto& d : a.ro) wanted.emplace_back(d, true);
  std::sort(wanted.begin(), wanted.end());
  for (const auto& [path, ro] : wanted) {
    const std::string* root = nullptr;
    for (const auto& h : ns.hide) {
      if (Below(path, h)) root = &h;
    }
    if (!root || !IsDirectory(path)) continue;  // visible anyway, or nothing to bind
    // Its parents inside the tmpfs, then itself.
    for (size_t p = path.find('/', root->size() + 1);; p = path.find('/', p + 1)) {
      std::string dir = p == std::string::npos ? path : path.substr(0, p);
      if (std::find(ns.mkdirs.begin(), ns.mkdirs.end(), dir) == ns.mkdirs.end()) {
        ns.mkdirs.push_back(dir);
      }
      if (p == std::string::npos) break;
    }
    ns.binds.push_back({path, ro, LockedFlags(path)});
  }
  return ns;
}

void Supervisor::Launch(int fd, const json& msg) {
  auto a = std::make_unique<Attempt>();
  a->id = msg.value("id", "");
  a->owner = fd;
  a->argv = Strings(msg, "argv");
  a->env = Strings(msg, "env");
  a->make_dirs = Strings(msg, "make_dirs");
  a->secrets = Strings(msg, "secrets");
  a->workdir = msg.value("workdir", "");
  a->log_path = msg.value("log", "");
  a->exit_file = msg.value("exit_file", "");
  a->memory = msg.value("memory", 0LL);
  a->cpu_millis = msg.value("cpu_millis", 0LL);
  a->v2_cg = msg.value("v2_cg", "");
  a->mem_cg = msg.value("mem_cg", "");
  a->cpu_cg = msg.value("cpu_cg", "");
  a->grace_ms = msg.value("grace_ms", kDefaultGraceMs);
  a->uid = msg.value("uid", -1LL);
  a->gid = msg.value("gid", -1LL);
  if (a->uid == 0 || (a->uid >= 0 && a->gid < 0)) a->uid = a->gid = -1;  // never root
  a->userns = msg.value("userns", 0) != 0;
  a->hide = Strings(msg, "hide");
  a->ro = Strings(msg, "ro");
  if (a->id.empty()) return;
  if (auto it = attempts_.find(a->id); it != attempts_.end()) {
    it->second->owner = fd;  // launched twice: the running one reports to the latest launcher
    return;
  }
  if (a->argv.empty()) return FailBeforeStart(std::move(a), "empty command");
  bool isolated = a->uid >= 0;
  for (const std::string& dir : {Dirname(a->exit_file), Dirname(a->log_path)}) {
    // The attempts' directory of a live attempt's journal exists: not made on every launch.
    if (journals_.count(dir + "/")) continue;
    // Isolated: the logs and exit records are ours alone (0700 leaf, 0711 parents).
    if (isolated ? !MakeDirs(dir, 0711, 0700) : !MakeDirs(dir)) {
      return FailBeforeStart(std::move(a),
                             "cannot create directory " + dir + ": " + strerror(errno));
    }
  }
  std::string pool = Dirname(a->workdir);
  if (!a->workdir.empty() && !MakeAttemptDir(pool, a->workdir, isolated)) {
    return FailBeforeStart(std::move(a),
                           "cannot create directory " + a->workdir + ": " + strerror(errno));
  }
  for (const std::string& dir : a->make_dirs) {
    if (!MakeAttemptDir(pool, dir, isolated)) {
      return FailBeforeStart(std::move(a),
                             "cannot create directory " + dir + ": " + strerror(errno));
    }
  }
  if (isolated) {
    // The step's own directories become its identity's (0700); everything above them stays
    // ours (0711: it may pass through, not list or change).
    std::vector<std::string> own = a->make_dirs;
    if (!a->workdir.empty()) own.push_back(a->workdir);
    for (const std::string& dir : own) {
      if (!GiveDir(dir, uid_t(a->uid), gid_t(a->gid))) {
        return FailBeforeStart(std::move(a), "cannot hand directory " + dir + " to uid " +
                                                 std::to_string(a->uid) + ": " + strerror(errno));
      }
    }
  }
  // stdout+stderr through a pipe: the log is created at the first byte (WriteLog).
  int out_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return FailBeforeStart(std::move(a), std::string("cannot create a pipe: ") + strerror(errno));
  }
  a->mechanism = SetupLimits(a.get());

  // Everything the child needs is prepared before the fork: it only makes system calls.
  std::vector<char*> argv, envp;
  for (auto& s : a->argv) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : a->env) envp.push_back(s.data());
  envp.push_back(nullptr);
  ChildPlan plan;
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.procs = &a->procs;
  plan.as_limit = {rlim_t(a->memory), rlim_t(a->memory)};
  plan.use_rlimit = a->mechanism == "rlimit" && a->memory > 0;
  plan.workdir = a->workdir.empty() ? nullptr : a->workdir.c_str();
  std::string program = ResolveProgram(a->argv[0], a->env, a->workdir);
  plan.program = program.empty() ? nullptr : program.c_str();
  plan.devnull = devnull_;
  plan.out = out_pipe[1];
  plan.parent = getpid();
  plan.uid = a->uid;
  plan.gid = a->gid;
  NsPlan ns;
  if (a->userns) {
    ns = PlanNamespace(*a);
    plan.ns = &ns;
  }

  a->start_ms = NowMs();
  a->started_us = RealUs();
  pid_t child = SpawnChild(plan);
  close(out_pipe[1]);
  if (child < 0) {
    close(out_pipe[0]);
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
  journals_[a->journal].live++;
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
  bool oom = false;
  if (a->mechanism == "cgroup v2") {
    oom = ReadNumberAfter(ReadSmall(a->v2_cg + "/memory.events"), "oom_kill ") > 0;
  } else if (a->mechanism == "cgroup v1" && !a->mem_cg.empty()) {
    oom = ReadNumberAfter(ReadSmall(a->mem_cg + "/memory.oom_control"), "oom_kill ") > 0;
  }
  int exit_code = WIFEXITED(a->status) ? WEXITSTATUS(a->status) : -1;
  int sig = WIFSIGNALED(a->status) ? WTERMSIG(a->status) : 0;
  std::string rec = Record(exit_code, sig, oom, a->stop, a->wall_ms, cpu_ms, peak, LimitsText(*a),
                           a->started_us, a->ended_us, a->note);
  RecycleWorkdir(a->workdir);    // empty now: a later attempt may take it over
  WriteExit(a->exit_file, rec);  // the durable truth first, then the fast path
  ReleaseJournal(a);
  if (a->log_fd >= 0) close(a->log_fd);
  for (const auto* dir : {&a->v2_cg, &a->mem_cg, &a->cpu_cg}) QueueRmdir(*dir);
  SendExit(*a, rec);
  attempts_.erase(a->id);  // destroys *a
}

// An attempt's directories (its working directory and staging) are new inodes, and inode
// allocation is what a step's launch costs most on ext4 without a journal: it skips every
// recently deleted inode of the group one by one (up to ~0.3 ms a directory after many
// deletions). So an ended attempt's working directory, when the step left it empty, is kept
// as a spare, under its own name, and the next attempt's directory is that spare renamed:
// one rename, no allocation. Spares that no attempt took are removed (rmdir: only while
// still empty) when the supervisor goes idle.
bool Supervisor::MakeAttemptDir(const std::string& pool, const std::string& dir, bool isolated) {
  auto it = pool.empty() ? spares_.end() : spares_.find(pool);
  if (it != spares_.end()) {
    // A spare that is `dir` itself (an attempt launched again) is no longer spare.
    auto self = std::find(it->second.begin(), it->second.end(), dir);
    if (self != it->second.end()) it->second.erase(self);
  }
  while (it != spares_.end() && !it->second.empty()) {
    const std::string& spare = it->second.back();
    if (rename(spare.c_str(), dir.c_str()) == 0) {
      it->second.pop_back();
      return true;
    }
    // ENOENT: dir's parent is not made yet, or the spare is gone (its run directory was
    // removed); EXDEV: another file system; ENOTEMPTY/EEXIST: dir exists. A spare that is
    // gone is dropped, else it stays and mkdir below says what is wrong, if anything.
    struct stat st {};
    if (errno != ENOENT || lstat(spare.c_str(), &st) == 0) break;
    it->second.pop_back();
  }
  return isolated ? MakeDirs(dir, 0711, 0700) : MakeDirs(dir);
}

void Supervisor::RecycleWorkdir(const std::string& workdir) {
  std::string pool = Dirname(workdir);
  if (pool.empty()) return;
  std::vector<std::string>& spares = spares_[pool];
  if (spares.size() >= kMaxSpareDirs || !IsEmptyDir(workdir)) return;
  spares.push_back(workdir);
}

void Supervisor::RemoveSpareDirs() {
  for (const auto& [pool, spares] : spares_) {
    for (const auto& d : spares) rmdir(d.c_str());
  }
  spares_.clear();
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
    if (!a->exited && a->owner >= 0) take(a->next_sample_ms);
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

// What the processes of one process group use now, from /proc/<pid>/stat.
struct GroupUsage {
  long long cpu_ticks = 0;  // utime + stime + cutime + cstime (children they waited for)
  long long rss_pages = 0;
};

// Sums /proc/<pid>/stat over the processes of each group in `groups` (one pass over /proc).
void ReadGroupUsage(std::map<pid_t, GroupUsage>* groups) {
  DIR* d = opendir("/proc");
  if (!d) return;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::string stat = ReadSmall(std::string("/proc/") + e->d_name + "/stat");
    size_t paren = stat.rfind(')');  // the command name may hold anything but not after this
    if (paren == std::string::npos) continue;
    // Fields after the name: 3 state, 4 ppid, 5 pgrp, ... 14 utime 15 stime 16 cutime
    // 17 cstime ... 24 rss (man 5 proc).
    long long f[25] = {0};
    const char* p = stat.c_str() + paren + 1;
    for (int field = 3; field <= 24 && *p; ++field) {
      while (*p == ' ') ++p;
      f[field] = atoll(p);
      while (*p && *p != ' ') ++p;
    }
    auto it = groups->find(pid_t(f[5]));
    if (it == groups->end()) continue;
    it->second.cpu_ticks += f[14] + f[15] + f[16] + f[17];
    it->second.rss_pages += f[24];
  }
  closedir(d);
}

// Sends every running attempt whose sample is due its usage so far: from its cgroup (v2:
// memory.current, memory.peak, cpu.stat; v1: memory.usage_in_bytes, max_usage_in_bytes and,
// where the cpu controller is mounted with cpuacct, cpuacct.usage), else from /proc of its
// process group (the main process is the group leader). The engine keeps the latest for
// `status`; the exit record has the totals.
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
    if (a->owner >= 0) due.push_back({a.get()});  // else nobody to tell
  }
  if (due.empty()) return;
  std::map<pid_t, GroupUsage> groups;  // the attempts without cgroup counters
  for (Sample& s : due) {
    const Attempt& a = *s.a;
    s.peak = CgroupPeak(a);
    if (a.mechanism == "cgroup v2") {
      s.cpu_ms = ReadNumberAfter(ReadSmall(a.v2_cg + "/cpu.stat"), "usage_usec ") / 1000;
      s.memory = atoll(ReadSmall(a.v2_cg + "/memory.current").c_str());
    } else if (a.mechanism == "cgroup v1") {
      if (!a.mem_cg.empty()) {
        s.memory = atoll(ReadSmall(a.mem_cg + "/memory.usage_in_bytes").c_str());
      }
      std::string usage = a.cpu_cg.empty() ? "" : ReadSmall(a.cpu_cg + "/cpuacct.usage");
      if (!usage.empty()) s.cpu_ms = atoll(usage.c_str()) / 1'000'000;
    }
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
    Send(a->owner, json{{"op", "usage"},
                        {"id", a->id},
                        {"wall_ms", now - a->start_ms},
                        {"cpu_ms", std::max(s.cpu_ms, 0LL)},
                        {"peak_memory_bytes", a->sampled_peak}});
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
        RemoveSpareDirs();
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

}  // namespace

int main(int argc, char** argv) {
  std::string state_dir, socket_name;
  bool serve = false;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--serve") {
      serve = true;
    } else if (k == "--state-dir" && i + 1 < argc) {
      state_dir = argv[++i];
    } else if (k == "--socket" && i + 1 < argc) {
      socket_name = argv[++i];
    } else {
      state_dir.clear();
      break;
    }
  }
  if (!serve || state_dir.empty() || socket_name.empty()) {
    fprintf(stderr, "usage: rsl-shim --serve --state-dir DIR --socket NAME\n");
    return 2;
  }
  // Daemonize: a new session (the backend's spawn made us no group leader), then fork so
  // the backend reaps our parent at once and we are nobody's child but init's.
  setsid();
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid > 0) _exit(0);
  if (chdir("/") != 0) return 1;
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
  }
  syscall(SYS_close_range, 3, ~0U, 0);
  // Orphaned descendants (a step's background jobs) become our children, so they are
  // reaped here and never linger as zombies.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Not open to a step that runs as our user (isolation "namespace"): our memory, our open
  // files and our root through /proc. A step's exec makes it dumpable again, for itself.
  prctl(PR_SET_DUMPABLE, 0);
  // Steps inherit our signal state: start from the defaults, whatever the engine that
  // started us had blocked or ignored (seedctl blocks SIGINT/SIGTERM for its sigwait).
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  Supervisor supervisor;
  return supervisor.Run(state_dir, socket_name);
}
