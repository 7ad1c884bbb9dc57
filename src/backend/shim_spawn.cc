#include "backend/shim_spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "backend/shim_io.h"

namespace rsl::shim {

namespace {

// The child's code. A child started without waiting for its exec shares the supervisor's
// memory while the supervisor goes on, its thread pointer included: glibc's wrappers would
// store a failure's errno in the supervisor's errno, and anything that allocates or takes a
// lock would race with it. So the child calls the kernel itself (the result, or -errno),
// allocates nothing, writes nothing but its own stack and its plan's spare slot, and is not
// instrumented by the sanitizers (their runtime state is per thread, which it would share).
#define RSL_CHILD_CODE __attribute__((no_sanitize("address", "undefined")))

constexpr size_t kStackGuard = 4096;  // under a child's stack: an overflow faults

RSL_CHILD_CODE inline long Sys(long n, long a = 0, long b = 0, long c = 0, long d = 0) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
#else
  long r = syscall(n, a, b, c, d);  // only ever in a child that waits (StartsWithoutWaiting)
  return r < 0 ? -errno : r;
#endif
}

template <class T>
RSL_CHILD_CODE inline long Arg(T* p) {
  return reinterpret_cast<long>(p);
}

// strlen, which the sanitizers intercept (the barrier keeps the compiler from making the
// loop a call to it).
RSL_CHILD_CODE size_t Len(const char* s) {
  size_t n = 0;
  while (s[n]) {
    ++n;
    __asm__ volatile("" ::: "memory");
  }
  return n;
}

RSL_CHILD_CODE void Put(const char* s) { (void)Sys(SYS_write, 2, Arg(s), long(Len(s))); }

[[noreturn]] RSL_CHILD_CODE void Exit(int code) {
  for (;;) Sys(SYS_exit_group, code);
}

// "rsl-shim: <what><arg>: <error>" on the step's output, as WriteErr (shim_io.h) says it, then
// the exit of a step that could not start. `err` is -errno.
[[noreturn]] RSL_CHILD_CODE void Fail(const char* what, const char* arg, long err) {
  const char* text = strerrordesc_np(int(-err));  // no locale, no buffer: strerror may allocate
  Put("rsl-shim: ");
  Put(what);
  Put(arg);
  Put(": ");
  Put(text ? text : "Unknown error");
  Put("\n");
  Exit(kExecFailedCode);
}

// execve, and for a file the kernel cannot run (a script without #!) what execvp does: /bin/sh
// runs it, given the file and the step's arguments. The error when neither ran.
RSL_CHILD_CODE long ExecFile(const char* file, const ChildPlan& p) {
  long r = Sys(SYS_execve, Arg(file), Arg(p.argv), Arg(p.envp));
  if (r != -ENOEXEC) return r;
  char** sh = p.argv - 1;  // the plan's spare slot (ChildPlan::argv)
  sh[0] = const_cast<char*>("/bin/sh");
  sh[1] = const_cast<char*>(file);
  Sys(SYS_execve, Arg("/bin/sh"), Arg(sh), Arg(p.envp));
  return r;
}

// execvp without the environment's PATH: the step's (its envp's; none: /bin:/usr/bin). An
// empty entry is the working directory; after an entry that cannot run the file for want of
// it (not there, not a directory, ...) the next one is tried; EACCES is reported if any entry
// gave it, as execvp does.
[[noreturn]] RSL_CHILD_CODE void ExecSearch(const ChildPlan& p) {
  const char* name = p.argv[0];
  size_t name_len = Len(name);
  bool slash = false;
  for (size_t i = 0; i < name_len; ++i) slash = slash || name[i] == '/';
  if (name_len == 0) Fail("cannot run ", name, -ENOENT);
  if (slash) Fail("cannot run ", name, ExecFile(name, p));
  const char* path = "/bin:/usr/bin";
  for (char** e = p.envp; *e; ++e) {
    const char* v = *e;
    if (v[0] == 'P' && v[1] == 'A' && v[2] == 'T' && v[3] == 'H' && v[4] == '=') {
      path = v + 5;
      break;
    }
  }
  char file[4096];
  bool eacces = false;
  long err = -ENOENT;
  for (const char* dir = path;; ++dir) {
    const char* end = dir;
    while (*end && *end != ':') ++end;
    size_t dir_len = size_t(end - dir);
    if (dir_len + 1 + name_len < sizeof(file)) {
      size_t n = 0;
      for (size_t i = 0; i < dir_len; ++i) file[n++] = dir[i];
      if (dir_len > 0) file[n++] = '/';
      for (size_t i = 0; i <= name_len; ++i) file[n++] = name[i];  // with its NUL
      err = ExecFile(file, p);
      if (err == -EACCES) eacces = true;
      if (err != -EACCES && err != -ENOENT && err != -ESTALE && err != -ENOTDIR && err != -ENODEV &&
          err != -ETIMEDOUT) {
        break;  // it exists and cannot run (a script's /bin/sh included): say why
      }
    } else {
      err = -ENAMETOOLONG;
    }
    if (*end == '\0') break;
    dir = end;
  }
  Fail("cannot run ", name, eacces ? -EACCES : err);
}

[[noreturn]] RSL_CHILD_CODE void ExecChild(const ChildPlan& p) {
  Sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);  // the supervisor is gone: so is the step
  if (Sys(SYS_getppid) != p.parent) Exit(kExecFailedCode);
  Sys(SYS_setpgid, 0, 0);
  char pid[24];
  size_t n = sizeof(pid);
  for (long v = Sys(SYS_getpid); n == sizeof(pid) || v > 0; v /= 10) pid[--n] = char('0' + v % 10);
  for (const char* const* f = p.procs; f && *f; ++f) {
    long fd = Sys(SYS_openat, AT_FDCWD, Arg(*f), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      Sys(SYS_write, fd, Arg(pid + n), long(sizeof(pid) - n));
      Sys(SYS_close, fd);
    }
  }
  if (p.use_rlimit) Sys(SYS_prlimit64, 0, RLIMIT_AS, Arg(&p.as_limit), 0);
  // Output first: what goes wrong from here on is in the step's log. (dup3 clears the copy's
  // close-on-exec; an fd already in place keeps its own, so it is cleared here.)
  const int from[3] = {p.devnull, p.out, p.out};
  for (int fd = 0; fd < 3; ++fd) {
    if (from[fd] == fd) {
      Sys(SYS_fcntl, fd, F_SETFD, 0);
    } else {
      Sys(SYS_dup3, from[fd], fd, 0);
    }
  }
  if (p.ns) {  // a forked child, not one that shares our memory (StartsWithoutWaiting)
    const char* what = "";
    if (!EnterNamespace(*p.ns, &what)) {
      WriteErr("step isolation: cannot set up ", what, errno);
      Exit(kExecFailedCode);
    }
  }
  if (p.uid >= 0) {
    long r = Sys(SYS_setgroups, 0, 0);
    if (r == 0) r = Sys(SYS_setresgid, long(p.gid), long(p.gid), long(p.gid));
    if (r == 0) r = Sys(SYS_setresuid, long(p.uid), long(p.uid), long(p.uid));
    if (r != 0) Fail("cannot drop privileges", "", r);
  }
  // Default dispositions (the kernel's struct sigaction, all zero: SIG_DFL) and no mask.
  const unsigned long dfl[4] = {0, 0, 0, 0};
  const int reset[3] = {SIGPIPE, SIGHUP, SIGINT};  // what the supervisor ignores
  for (int i = 0; i < 3; ++i) Sys(SYS_rt_sigaction, reset[i], Arg(dfl), 0, 8);
  const unsigned long none = 0;
  Sys(SYS_rt_sigprocmask, SIG_SETMASK, Arg(&none), 0, 8);
  if (p.workdir) {
    if (long r = Sys(SYS_chdir, Arg(p.workdir)); r != 0) Fail("cannot enter ", p.workdir, r);
  }
  // Resolved by the supervisor (ProgramCache) when it could; if that fails (a script without
  // #!, say, or a program gone since) the search does it all again and says why, as execvp.
  if (p.program) ExecFile(p.program, p);
  ExecSearch(p);
}

RSL_CHILD_CODE int CloneChild(void* plan) { ExecChild(*static_cast<const ChildPlan*>(plan)); }

}  // namespace

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

std::string ProgramCache::Resolve(const std::string& name, const std::vector<std::string>& env,
                                  const std::string& workdir, int64_t now_ms) {
  if (name.empty() || name.find('/') != std::string::npos) return "";
  const std::string* path = nullptr;
  for (const auto& e : env) {
    if (e.compare(0, 5, "PATH=") == 0) {
      path = &e;
      break;
    }
  }
  // Absolute entries only: an empty or relative one depends on the working directory.
  bool absolute = true;
  for (size_t start = 5; path;) {
    size_t end = std::min(path->find(':', start), path->size());
    if (end == start || (*path)[start] != '/') {
      absolute = false;
      break;
    }
    if (end == path->size()) break;
    start = end + 1;
  }
  if (!absolute) return ResolveProgram(name, env, workdir);
  std::string key = name + '\0' + (path ? *path : "");
  auto it = found_.find(key);
  if (it != found_.end() && now_ms - it->second.at_ms < kTtlMs) return it->second.file;
  std::string file = ResolveProgram(name, env, workdir);
  if (file.empty()) {
    if (it != found_.end()) found_.erase(it);
    return file;
  }
  if (found_.size() >= kMaxEntries) found_.clear();
  found_[key] = {file, now_ms};
  return file;
}

bool StartsWithoutWaiting(const ChildPlan& plan) {
#if defined(__x86_64__) || defined(__aarch64__)
  return plan.ns == nullptr;
#else
  return false;
#endif
}

pid_t SpawnChild(const ChildPlan& plan, void* stack_top) {
  if (stack_top && StartsWithoutWaiting(plan)) {
    return clone(CloneChild, stack_top, CLONE_VM | SIGCHLD, const_cast<ChildPlan*>(&plan));
  }
#if defined(__SANITIZE_ADDRESS__)
  pid_t pid = fork();
#else
  // A step entering a namespace changes what is per memory map (EnterNamespace): fork.
  pid_t pid = plan.ns ? fork() : vfork();
#endif
  if (pid == 0) ExecChild(plan);
  return pid;
}

ChildStacks::~ChildStacks() {
  for (void* top : free_)
    munmap(static_cast<char*>(top) - kSize - kStackGuard, kSize + kStackGuard);
}

void* ChildStacks::Take() {
  if (!free_.empty()) {
    void* top = free_.back();
    free_.pop_back();
    return top;
  }
  void* base = mmap(nullptr, kSize + kStackGuard, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  if (mprotect(base, kStackGuard, PROT_NONE) != 0) {
    munmap(base, kSize + kStackGuard);
    return nullptr;
  }
  return static_cast<char*>(base) + kStackGuard + kSize;
}

void ChildStacks::Give(void* top) {
  if (top) free_.push_back(top);
}

}  // namespace rsl::shim
