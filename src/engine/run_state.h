// The state the engine's loop keeps for one active run: the run's records, its plan, and one
// StepSlot per step with everything the executor holds for that step (its stored row, its
// parsed `when`, its live attempt, the devices it holds, ...). Not a public header.
//
// Threading: owned by the loop thread (engine.cc); nothing here locks.
#pragma once

#include <cstdint>
#include <map>
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

//! The results of the last SUCCEEDED run of the same workload name before this one
//! (`previous.output.<step>.metrics.<key>`), loaded once when the run starts.
struct PreviousResults {
  bool loaded = false;
  std::string run_id;                          //!< "" when there is none
  std::map<std::string, std::string> metrics;  //!< step name -> metrics JSON object
};

//! What an expression of a run reads: status.<step>, output.<step>.metrics.<key...>,
//! previous.output.<step>.metrics.<key...>, and for postProcess hooks run.<field> and
//! step.<field> of the hook's step. A previous value that does not exist reads as null and
//! is remembered (missing()): conditions over it are false (EvalCondition).
class RunContext : public expr::Context {
 public:
  RunContext(const RunPlan* plan, const PreviousResults* previous)
      : plan_(plan), previous_(previous) {}
  //! The hook's view: its run, its step (index into the plan) and how that step ended.
  struct Self {
    int step = -1;
    spec::StepPhase phase = spec::StepPhase::kPending;
    std::string metrics_json = "{}";
    int exit_code = -1;
    int attempt = 0;
    std::string failure_code;
    std::string run_id, run_name, run_namespace, workload_id;
  };
  void SetSelf(Self self) { self_ = std::move(self); }
  std::optional<expr::Value> Lookup(const expr::Reference& ref) const override;
  //! The previous values read so far that did not exist, with why ("no earlier SUCCEEDED
  //! run of this workload", "run X has no metric acc for step validate").
  const std::vector<std::string>& missing() const { return missing_; }

 private:
  const RunPlan* plan_;
  const PreviousResults* previous_;
  std::optional<Self> self_;
  mutable std::vector<std::string> missing_;
};

//! Evaluates a condition. A condition that reads a previous value that does not exist is
//! false, and `note` (when not null) says which value and why; otherwise "".
Result<bool> EvalCondition(const expr::Expr& e, const RunContext& ctx, std::string* note);

//! What the executor holds for one step of an active run.
struct StepSlot {
  store::Step record;              //!< mirror of the stored step row
  std::optional<expr::Expr> when;  //!< the parsed `when` (none: always)
  //! The live (or last) attempt. Once it ended, only its identity is kept (ShedEndedLaunch).
  backend::LaunchSpec launch;
  std::vector<int> gpus;               //!< device indices held on launch.node
  bool insufficient_reported = false;  //!< InsufficientResources said once per wait
  //! A policy stopped the live attempt: (as success, why). Consumed by its exit.
  std::optional<std::pair<bool, std::string>> stop_override;
  std::string progress_seen;  //!< the last progress turned into an event
  //! postProcess: the hooks of the step's end were handed to the sender (once per step).
  bool post_process_fired = false;
  //! A succeeded attempt whose required hooks are being sent: its exit, applied when they
  //! are done (the step stays running meanwhile).
  struct HeldExit {
    backend::AttemptExit exit;
    std::string metrics_json;
    bool never_ran = false;
    size_t waiting = 0;   //!< required hooks not yet done
    std::string failure;  //!< the first failed one's message
  };
  std::unique_ptr<HeldExit> held_exit;  //!< rare: not inline in every step's slot
};

//! Drops what an ended attempt's LaunchSpec no longer needs (environment, argv, labels,
//! directories, secrets): about 2 KB a step that a 100,000-step run held to its end. Kept:
//! its ids, step, attempt number, node and resources (Release, events, hooks' views).
void ShedEndedLaunch(backend::LaunchSpec* launch);

class ObjectLease;

//! One active run, owned by the loop thread.
struct RunState {
  store::Run run;
  store::WorkloadVersion version;
  std::shared_ptr<const spec::Workload> workload;  //!< never null; shared with the caller of Submit
  RunInfo info;
  std::unique_ptr<RunPlan> plan;
  std::vector<StepSlot> slots;  //!< one per pipeline step, in its order
  bool finishing = false;       //!< commit/discard under way
  //! Handed to the committer thread (FinishRuns): only it touches the run until its files
  //! are done; the loop neither drives nor schedules it.
  bool committing = false;
  int owner_fd = -1;            //!< flock on <run_dir>/owner.lock while active
  int64_t min_cpu_request = 0;  //!< smallest placed cpu request of its steps
  PreviousResults previous;     //!< loaded when the workload reads previous.*
  //! Every launch's labels: the workload's, with its namespace and name (NewRunState).
  std::map<std::string, std::string> launch_labels;
  //! The variables its attempts get alike: the inherited ones, RSL_RUN_ID, RSL_WORKLOAD_ID.
  std::map<std::string, std::string> launch_env;
  // The loop's schedule of this run (Engine::Impl::Reschedule), set after each Drive.
  uint64_t seq = 0;              //!< order of its first Drive: its place among the waiting
  int64_t timer_at = INT64_MAX;  //!< its key in the timers (the plan's NextWakeup)
  bool quiet_when_full = false;  //!< Drive is a no-op while no node has min_cpu_request free
  //! Ready steps left unplaced: among the waiting runs, quiet (quiet_when_full when filed)
  //! or not (Engine::Impl::FileWaiting).
  enum class Waiting : uint8_t { kNo, kLoud, kQuiet } waiting = Waiting::kNo;
  // The output root its end needs (Engine::Impl::TakeOutputRoot): taken without waiting, held
  // from then to the end of its commit. While another commit holds it, the run's end is
  // tried again at root_retry_at (NowMs; 0 = not waiting), and after kOutputLockWaitMs of
  // waiting (since root_wait_since, NowMs) it ends with root_error instead.
  std::unique_ptr<FileLock> root_lock;      //!< a local root's lock
  std::unique_ptr<ObjectLease> root_lease;  //!< an object-store root's lease
  Status root_error;
  int64_t root_retry_at = 0;
  int64_t root_wait_since = 0;
  int64_t root_poll_ms = 0;
  // A non-atomic run's step publications that wait for its object-store root's lease (held
  // by another run's commit): tried again at publish_retry_at (NowMs), failed after
  // kOutputLockWaitMs of waiting (since publish_wait_since). Its end waits for them.
  std::vector<int> pending_publications;
  int64_t publish_retry_at = 0;
  int64_t publish_wait_since = 0;
  int64_t publish_poll_ms = 0;

  RunState() = default;
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;
  ~RunState();  //!< releases owner_fd

  //! Evaluates step i's `when` against this run's plan (status.<step>,
  //! output.<step>.metrics.<key>, previous.*). True when the step has none. `note`: as
  //! EvalCondition's.
  Result<bool> EvalWhen(int i, std::string* note = nullptr) const;
};

//! Builds a RunState (records, parsed `when`s, one slot per step) for a workload and its run.
//! A step without a cpu request counts as `default_cpu_millis` in min_cpu_request.
//! `w` is shared, never copied: the controller keeps the same object as the version's snapshot
//! (a 10,000-step workload copied at admission was 4 % of the engine's own time).
//! `inherited_env`: the engine's (Engine::Impl::inherited_env_), the start of launch_env.
std::unique_ptr<RunState> NewRunState(std::shared_ptr<const spec::Workload> w,
                                      const store::WorkloadVersion& v, const store::Run& run,
                                      const std::string& state_dir, int64_t default_cpu_millis,
                                      const std::map<std::string, std::string>& inherited_env);

//! Takes <run_dir>/owner.lock (exclusive, non-blocking): one engine drives a run at a time.
//! Returns the fd, or -1 when another live engine holds it. Makes the run directory first.
int LockRunOwner(Env* env, const std::string& run_dir);

//! A step without a cpu request counts as DefaultCpuMillis(largest node) when placing: a node
//! of N cores runs N+4 such steps at once. ninja's default -j is N+2; RSL needs two more
//! because a finished step's slot stays empty until its exit is durable and the next step is
//! launched (about 1 ms here, against ninja's 0.1 ms), which short steps would leave idle.
int64_t DefaultCpuMillis(const std::vector<sched::Node>& nodes);

}  // namespace rsl::engine
