// Runs Slurm's client commands (sbatch, squeue, sinfo, sacct, scancel) for the Slurm backend.
// Behind an interface so the backend's parsing and mapping are tested with recorded outputs
// (FakeCommandRunner in the tests) and the real thing only in the integration tests.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"

namespace rsl::backend {

struct CommandOutput {
  int exit_code = -1;  //!< -1 when it could not be started or was killed by a signal
  std::string out;     //!< stdout
  std::string err;     //!< stderr
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  //! Runs argv[0] (looked up in PATH) with argv, waits for it, captures stdout and stderr.
  //! Errors only when the command could not be started at all (IO_ERROR with strerror);
  //! a command that ran and failed is a CommandOutput with its exit code.
  //! Thread-safe: the backend calls it from its monitor thread and from Launch/Stop.
  virtual Result<CommandOutput> Run(const std::vector<std::string>& argv) = 0;
};

//! Runs real processes through `env`'s process API (nullptr: Env::Default()).
//! `env_overrides` are set on top of this process's environment (e.g. SLURM_CONF). Commands
//! (with what they started) are killed after `timeout_ms`: a hung slurmctld must not hang us.
std::unique_ptr<CommandRunner> NewProcessRunner(std::map<std::string, std::string> env_overrides,
                                                int64_t timeout_ms, Env* env = nullptr);

}  // namespace rsl::backend
