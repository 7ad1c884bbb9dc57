// Pure parsing of Slurm's client output (22.05: `sinfo --json`, `squeue --json`,
// `sacct -c -P`, `sbatch --parsable`) and the mapping of Slurm job states onto ExitKind.
// No processes here: the tests feed recorded real outputs (tests/slurm/testdata/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "sched/node.h"

namespace rsl::backend::slurm {

//! Slurm counts memory in MiB: sinfo's real_memory and alloc_memory, sbatch's --mem=<n>M.
inline constexpr int64_t kMiB = 1024 * 1024;

//! One job as squeue or sacct reports it.
struct Job {
  int64_t job_id = 0;
  std::string name;
  std::string state;   //!< PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, NODE_FAIL, ...
  std::string reason;  //!< squeue's state_reason ("None", "NodeDown", "Resources", ...)
  std::string nodes;   //!< where it runs/ran ("" while pending)
  std::string comment;
  int exit_code = 0;       //!< the batch script's exit status
  int signal = 0;          //!< the signal that ended it, 0 if none
  int64_t start_time = 0;  //!< unix seconds, 0 if unknown
  int64_t end_time = 0;
};

//! A node's state from sinfo.
struct NodeState {
  std::string name;
  std::string state;               //!< sinfo's base state: idle, mixed, allocated, down, ...
  std::vector<std::string> flags;  //!< DRAIN, NOT_RESPONDING, ...
  std::string reason;
  bool down() const;  //!< Slurm declared it down: its jobs are lost
};

//! `squeue --json`. Errors: SLURM output that is not the expected JSON (INTERNAL, with the
//! first bytes of the output).
Result<std::vector<Job>> ParseSqueueJson(std::string_view json);

//! `sacct -c -P -n -o JobID,JobName,State,ExitCode,NodeList,Start,End`.
Result<std::vector<Job>> ParseSacct(std::string_view text);

//! `sinfo --json` -> the scheduler's Node model (CPUs, memory, GRES gpus, Features as
//! capabilities on the node and on each GPU, state Ready|NotReady|Drained|Down, current use),
//! restricted to `partition` unless it is empty; `states` gets Slurm's own view of each node.
Result<std::vector<sched::Node>> ParseSinfoJson(std::string_view json, const std::string& partition,
                                                std::vector<NodeState>* states);

//! The memory of each GPU of a node, as the cluster declares it: a node feature
//! "gpumem_<N>g" or a GRES type ending in "_<N>g" ("gpu:a100_80g:4"), N GiB; 0 if neither
//! says (then a step that asks for gpu.memory cannot be placed there).
int64_t GpuMemoryBytes(const std::string& gres_type, const std::vector<std::string>& features);

//! `sbatch --parsable` prints "<id>" or "<id>;<cluster>".
Result<int64_t> ParseSbatchOutput(std::string_view out);

//! The number of GPUs in a GRES string such as "gpu:4", "gpu:a100:2(S:0-1),shard:8" or
//! "gpu:2(IDX:0-1)"; `model` gets the type if one is named ("a100").
int64_t GpuCount(std::string_view gres, std::string* model = nullptr);

//! "SIGKILL" for 9; "signal N" for a number without a name.
std::string SignalName(int sig);

//! Where a job is in its life, as far as RSL cares.
enum class Phase { kPending, kRunning, kFinished };

struct Outcome {
  Phase phase = Phase::kPending;
  ExitKind kind = ExitKind::kFailed;  //!< only when kFinished
  std::string message;
};

//! Maps a job's state onto a phase and, when finished, an ExitKind:
//! COMPLETED -> kSucceeded (kFailed if the script still exited non-zero), FAILED -> kFailed,
//! TIMEOUT/DEADLINE -> kTimedOut, OUT_OF_MEMORY -> kOomKilled (the message names
//! `memory_bytes`, the limit RSL asked for, when set), NODE_FAIL/BOOT_FAIL/PREEMPTED
//! -> kNodeLost (not the step's fault), CANCELLED -> kCancelled when RSL asked for it
//! (`stop_requested`; kTimedOut when it was for a time limit, `stop_for_timeout`) and
//! kFailed when it did not (an admin's scancel fails the attempt; retryPolicy applies). Unknown
//! states are kRunning if the job has a node, kPending otherwise, so a new Slurm state never ends
//! an attempt by mistake.
Outcome Classify(const Job& job, bool stop_requested, bool stop_for_timeout,
                 int64_t memory_bytes = 0);

}  // namespace rsl::backend::slurm
