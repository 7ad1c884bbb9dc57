#include "backend/shim_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "backend/shim_identity.h"
#include "backend/shim_io.h"

extern char** environ;

namespace rsl::shim {

namespace {

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
  if (p.uid >= 0 && !DropPrivileges(uid_t(p.uid), gid_t(p.gid))) {
    WriteErr("cannot drop privileges", "", errno);
    _exit(kExecFailedCode);
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

}  // namespace rsl::shim
