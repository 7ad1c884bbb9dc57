// The local backend: each attempt is a process group on this machine, supervised by an
// rsl-shim process (shim_main.cc) that outlives the engine.
//
// Per attempt (paths from the LaunchSpec; <dir> = dirname(exit_file)):
//   <dir>/lock         flock'ed by the shim for its whole life ("held" == "shim alive")
//   <exit_file>.pid    the shim's pid
//   <exit_file>        the exit record (key=value lines), written atomically by the shim
//   log_path           the step's stdout+stderr (secret values replaced by ***)
// Limits: cgroup v2 when a writable memory controller is delegated, else cgroup v1 memory
// and cpu controllers when writable (this development machine), else RLIMIT_AS; the
// mechanism is reported in a "LimitsApplied" event. An OOM kill is read from the cgroup's
// oom_kill counter and reported as kOomKilled.
//
// Threading: Launch/Stop/Adopt may be called from any thread; exits are reported from
// one watcher thread (epoll over pidfds), events from the calling thread.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/factory.h"
#include "base/status.h"

namespace rsl::backend {

struct LocalOptions {
  std::string state_dir;
  std::string node_file;      //!< "" = probe only
  std::string shim_path;      //!< "" = rsl-shim next to the running executable, or $RSL_SHIM
  std::string limits = "auto";  //!< auto | cgroup-v2 | cgroup-v1 | rlimit | none
  std::string nvidia_smi = "nvidia-smi";  //!< "" = do not probe GPUs
  int64_t grace_ms = 10'000;  //!< SIGTERM -> SIGKILL, enforced by the shim
};

Result<std::unique_ptr<Backend>> NewLocalBackend(const BackendOptions& options);
Result<std::unique_ptr<Backend>> NewLocalBackend(const LocalOptions& options);

//! The exit record a shim writes, parsed. Errors: IO_ERROR (missing), INTERNAL (garbled).
Result<AttemptExit> ReadExitFile(const std::string& path, const std::string& attempt_id);

//! "auto" resolved on this machine: "cgroup v2", "cgroup v1", "rlimit".
std::string DetectLimitMechanism();

}  // namespace rsl::backend
