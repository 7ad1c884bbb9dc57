// Starting an attempt's step in rsl-shim: everything the child needs is prepared by the
// supervisor beforehand (ChildPlan), and the child between fork and exec makes system calls
// only, itself (no errno), no allocation: it shares the supervisor's memory while the
// supervisor goes on (clone with CLONE_VM). Except when it enters a namespace: then it is
// always a forked child (shim_namespace.h).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/shim_namespace.h"

namespace rsl::shim {

//! Exit status of a child that could not start the step: like a shell's "command not found
//! / not executable".
constexpr int kExecFailedCode = 127;

//! What the child does between fork and exec, prepared by the supervisor beforehand. What it
//! points at must stay valid, and unchanged, until the child has ended (it may read it until
//! its exec, after SpawnChild returned).
struct ChildPlan {
  //! argv[-1] is a spare slot the child may write: a script without #! runs as
  //! /bin/sh <file> <args> from argv[-1] (execvp's way), without allocating.
  char** argv = nullptr;
  char** envp = nullptr;
  const char* const* procs = nullptr;  // cgroup.procs files to join, nullptr-ended (or none)
  rlimit as_limit{};
  bool use_rlimit = false;
  const char* workdir = nullptr;
  const char* program = nullptr;  // argv[0] found in PATH by the supervisor (ResolveProgram)
  int devnull = -1, out = -1;
  pid_t parent = 0;
  long long uid = -1, gid = -1;  // isolation by uid: the step's identity (-1: ours)
  const NsPlan* ns = nullptr;    // isolation by a mount namespace, when set
};

//! The file execvp would run for `name` under the step's PATH, found here instead of by the
//! child: execvp tries execve in each PATH directory in turn, and a failed execve costs
//! nearly what a successful one's setup does (with this machine's PATH of ten directories,
//! nine failed execve per `true` step, in the vfork child while the supervisor waits). Like
//! execvp: the first PATH entry of the environment (none: /bin:/usr/bin); an empty entry is
//! the working directory; entries that are not executable regular files are passed over.
//! The result is what execvp would pass to execve: relative when the PATH entry is.
//! Empty when `name` has a '/' or nothing was found: the child then calls execvp itself.
std::string ResolveProgram(const std::string& name, const std::vector<std::string>& env,
                           const std::string& workdir);

//! ResolveProgram's answers, each kept for kTtlMs per program name and PATH, as a shell's
//! command hash keeps them (for good, there): with this machine's PATH of ten directories a
//! `true` step cost nine failed stat() and two more to find. A program installed meanwhile in
//! an earlier PATH directory is found kTtlMs later at most; one removed makes the exec fail,
//! and the child then searches itself (SpawnChild). Only PATHs of absolute directories are
//! kept (a relative entry depends on the working directory). Not thread-safe.
class ProgramCache {
 public:
  static constexpr int64_t kTtlMs = 1000;
  static constexpr size_t kMaxEntries = 256;
  std::string Resolve(const std::string& name, const std::vector<std::string>& env,
                      const std::string& workdir, int64_t now_ms);

 private:
  struct Found {
    std::string file;
    int64_t at_ms = 0;
  };
  std::map<std::string, Found> found_;  // name + '\0' + PATH -> what was found, and when
};

//! Whether SpawnChild(plan, stack) starts the child without waiting for its exec: with
//! CLONE_VM the child shares our memory (no page-table copy, the biggest part of a fork) on a
//! stack of its own, while we go on. A vfork parent, as posix_spawn's, is suspended until the
//! child has exec'd, and on busy cores that child first waits for a CPU: meanwhile no other
//! step starts and no exit is reaped (0.5 ms a step on two cores, bench/README.md). Not for a
//! plan with a namespace (forked), nor where the child cannot call the kernel without libc
//! (only x86-64 and arm64 can).
bool StartsWithoutWaiting(const ChildPlan& plan);

//! Starts the child: without waiting when StartsWithoutWaiting(plan) and `stack_top` (the top
//! of a ChildStacks stack) is given, else by vfork (fork under the sanitizers, whose runtimes
//! are not vfork-safe, and for a plan with a namespace), which returns after its exec. The
//! child: PR_SET_PDEATHSIG(SIGKILL) (nothing runs unsupervised), a process group of its own,
//! the plan's cgroups or RLIMIT_AS, stdin on /dev/null and stdout+stderr on plan.out, the
//! namespace, the identity, default signals, the working directory, then the exec (the plan's
//! program, else a search of the step's PATH as execvp's); what fails is written to the
//! step's output and the child exits kExecFailedCode. Returns the child's pid, or -1 with errno
//! set. The plan, and the stack, stay the child's until it has ended.
pid_t SpawnChild(const ChildPlan& plan, void* stack_top = nullptr);

//! Stacks for children started without waiting (SpawnChild): kSize bytes each under a guard
//! page, taken for a child and given back once it has ended, kept for the next. Not
//! thread-safe (the supervisor has one thread).
class ChildStacks {
 public:
  static constexpr size_t kSize = 64 << 10;  // the child's frames need about 5 KiB
  ChildStacks() = default;
  ChildStacks(const ChildStacks&) = delete;
  ChildStacks& operator=(const ChildStacks&) = delete;
  ~ChildStacks();
  //! A stack's top (stacks grow down), or nullptr when no memory could be mapped.
  void* Take();
  //! `top` from Take, once its child has ended; nullptr is ignored.
  void Give(void* top);

 private:
  std::vector<void*> free_;  // tops
};

}  // namespace rsl::shim
