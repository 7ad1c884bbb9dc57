// The state the engine's loop keeps for one active run: the run's records, its plan, and one
// StepSlot per step with everything the executor holds for that step (its stored row, its
// parsed `when`, its live attempt, the devices it holds, ...). Not a public header.
//
// Threading: owned by the loop thread (engine.cc); nothing here locks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "base/env.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "expr/expr.h"
#include "store/store.h"

namespace rsl::engine {

//! What the executor holds for one step of an active run.
struct StepSlot {
  store::Step record;                  //!< mirror of the stored step row
  std::optional<expr::Expr> when;      //!< the parsed `when` (none: always)
  backend::LaunchSpec launch;          //!< the live (or last) attempt
  std::string launch_json;             //!< its stored form (LaunchToJson), once
  std::vector<int> gpus;               //!< device indices held on launch.node
  bool insufficient_reported = false;  //!< InsufficientResources said once per wait
  //! A policy stopped the live attempt: (as success, why). Consumed by its exit.
  std::optional<std::pair<bool, std::string>> stop_override;
  std::string progress_seen;  //!< the last progress turned into an event
};

//! One active run, owned by the loop thread.
struct RunState {
  store::Run run;
  store::WorkloadVersion version;
  spec::Workload workload;
  RunInfo info;
  std::unique_ptr<RunPlan> plan;
  std::vector<StepSlot> slots;  //!< one per pipeline step, in its order
  bool finishing = false;       //!< commit/discard under way
  int owner_fd = -1;            //!< flock on <run_dir>/owner.lock while active
  int64_t min_cpu_request = 0;  //!< smallest placed cpu request of its steps

  RunState() = default;
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;
  ~RunState();  //!< releases owner_fd

  //! Evaluates step i's `when` against this run's plan (status.<step>,
  //! output.<step>.metrics.<key>). True when the step has none.
  Result<bool> EvalWhen(int i) const;
};

//! Builds a RunState (records, parsed `when`s, one slot per step) for a workload and its run.
//! A step without a cpu request counts as `default_cpu_millis` in min_cpu_request.
std::unique_ptr<RunState> NewRunState(const spec::Workload& w, const store::WorkloadVersion& v,
                                      const store::Run& run, const std::string& state_dir,
                                      int64_t default_cpu_millis);

//! Takes <run_dir>/owner.lock (exclusive, non-blocking): one engine drives a run at a time.
//! Returns the fd, or -1 when another live engine holds it. Makes the run directory first.
int LockRunOwner(Env* env, const std::string& run_dir);

//! A step without a cpu request counts as DefaultCpuMillis(largest node) when placing: a node
//! of N cores runs N+4 such steps at once. ninja's default -j is N+2; RSL needs two more
//! because a finished step's slot stays empty until its exit is durable and the next step is
//! launched (about 1 ms here, against ninja's 0.1 ms), which short steps would leave idle.
int64_t DefaultCpuMillis(const std::vector<sched::Node>& nodes);

}  // namespace rsl::engine
