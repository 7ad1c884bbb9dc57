// The local backend: each attempt is a process group on this machine, started and watched by
// ONE long-lived supervisor per state directory (`rsl-shim --serve`, shim_main.cc) that
// outlives the engine. The backend starts the supervisor when none runs, talks to it over an
// abstract unix socket (newline-delimited JSON, protocol in shim_supervisor.h), and turns its
// exit messages into on_exit callbacks.
//
// Files:
//   <state_dir>/rsl-supervisor.lock  OFD-locked by the supervisor for its whole life
//                                    ("held" == "supervisor alive")
//   <dir>/exits   the exit journal of the exit files in <dir>: for each attempt whose
//                 exit_file is <dir>/<name>, "\nattempt=<name>\n" + its exit record
//                 (key=value lines ending with end=1), appended in one write by the
//                 supervisor before it reports the exit: the durable truth for recovery
//                 (ReadExitFile). The exit file itself is not created (an inode per attempt
//                 is what a short step pays most for on ext4)
//   log_path      the step's stdout+stderr (secret values replaced by ***), created at the
//                 first byte of output: a step that prints nothing has no log file
// The supervisor creates the attempt's directories (workdir, make_dirs, the parents of the
// log and exit files). A working directory the step left empty stays, a spare, until the
// supervisor renames it into a later attempt's directory instead of making a new inode
// (spares nobody took are removed when the supervisor goes idle). A spawn failure comes
// back as an exit (exec failure: exit code 127, the reason in the log).
// Limits: cgroup v2 when a writable memory controller is delegated, else cgroup v1 memory
// and cpu controllers when writable (this development machine), else RLIMIT_AS; the
// mechanism is reported in a "LimitsApplied" event. An OOM kill is read from the cgroup's
// oom_kill counter and reported as kOomKilled.
//
// Lifetimes: destroying the backend closes its connection; the supervisor keeps running the
// steps, and a later backend Adopts them (the supervisor reports to whoever queried last).
// If the supervisor dies, its steps die with it (PR_SET_PDEATHSIG) and every attempt the
// backend owned is reported from its exit record, else as kNodeLost, after whatever the
// attempt left in the background is killed (processes whose environment holds its
// RSL_SUPERVISED_ATTEMPT, which every step gets); the next Launch starts a new supervisor.
// With no client and no step for a few seconds the supervisor exits.
//
// Container images: a step whose image came from a registry (admission put RSL_IMAGE_DIGEST
// in its environment) runs in a container with runc when runc and rsl-cinit are installed
// (container.h, image/cache.h, docs/image.md); RSL_CONTAINER_RUNTIME=none keeps such steps on
// the host.
//
// Threading: Launch/Stop/Adopt may be called from any thread; Launch only writes one line to
// the socket (the supervisor is started first if needed), after, for a container step, taking
// its image's bundle from the cache (pulling it first when missing: that blocks). Exits and live
// usage samples (on_usage, about every second while an attempt runs) are reported from one reader
// thread, events from the calling thread.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/factory.h"
#include "backend/identity.h"
#include "base/status.h"

namespace rsl::backend {

struct LocalOptions {
  std::string state_dir;        //!< "" = $XDG_RUNTIME_DIR/rsl, else /tmp/rsl-<uid>
  std::string node_file;        //!< "" = probe only
  std::string shim_path;        //!< "" = rsl-shim next to the running executable, or $RSL_SHIM
  std::string limits = "auto";  //!< auto | cgroup-v2 | cgroup-v1 | rlimit | none
  std::string nvidia_smi = "nvidia-smi";  //!< "" = do not probe GPUs
  int64_t grace_ms = 10'000;              //!< SIGTERM -> SIGKILL, enforced by the supervisor
  //! Who steps run as (identity.h): auto | users | user:NAME | namespace | none.
  std::string isolation = "auto";
  std::string runs_dir;  //!< BackendOptions::runs_dir
};

Result<std::unique_ptr<Backend>> NewLocalBackend(const BackendOptions& options);
Result<std::unique_ptr<Backend>> NewLocalBackend(const LocalOptions& options);

//! The exit record of the attempt whose exit file is `path`, parsed: the file if it exists
//! (older supervisors, other writers), else the last complete record keyed basename(path)
//! in the journal <dirname(path)>/exits (records torn by a crash are skipped). Errors:
//! IO_ERROR (no record), INTERNAL (garbled or incomplete: no final "end=1").
Result<AttemptExit> ReadExitFile(const std::string& path, const std::string& attempt_id);
//! The same from the record's text (`path` only names it in errors).
Result<AttemptExit> ParseExitRecord(const std::string& text, const std::string& path,
                                    const std::string& attempt_id);

//! "auto" resolved on this machine: "cgroup v2", "cgroup v1", "rlimit".
std::string DetectLimitMechanism();

}  // namespace rsl::backend
