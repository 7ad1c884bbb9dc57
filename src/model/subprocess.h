// Runs a short-lived helper process (the environment's interpreter, asked for its sys.path)
// with a time limit, capturing stdout. Not for steps: the backends launch those.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::model {

struct ProcessResult {
  int exit_code = -1;  //!< -1 when killed by a signal
  std::string out;     //!< stdout (stderr is merged in when `merge_stderr`)
};

//! Runs argv[0] (looked up on PATH if it has no '/') with `env` as its whole environment,
//! through Env::Default()'s process API. Kills it and what it started (SIGKILL to its
//! process group) past `timeout_ms`, then fails with IO_ERROR "timed out"; output beyond
//! `max_output` bytes fails too, so a runaway program cannot exhaust memory.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env, int64_t timeout_ms,
                                 bool merge_stderr = false, size_t max_output = 16 << 20);

}  // namespace rsl::model
