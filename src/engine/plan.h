// The run plan: the pure decisions of one run (SPEC.md "pipeline", "Lifecycle"), apart from
// the doing (engine.cc, backends). It owns the state of every step and answers: which steps
// are ready, which to skip (`when` false, upstream not SUCCEEDED), which to retry and when
// (backoff, backoffFactor, maxBackoff), which to stop (step and run timeouts, cancellation,
// a failing atomic run), and when the run is done and with what phase and failure code.
//
// It never touches processes, files or clocks: the caller passes `now` and reports facts
// (OnLaunched, OnExit). Every state change is recorded as a Transition (with its event
// reason) that the caller drains, persists, and only then acts on.
//
// Cost: every call is O(steps touched), not O(all steps), so a 10,000-step DAG plans in
// microseconds per step.
//
// Threading: not thread-safe; the engine's loop thread owns each plan.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "spec/phase.h"
#include "spec/workload.h"

namespace rsl::engine {

struct StepState {
  spec::StepPhase phase = spec::StepPhase::kPending;
  int attempts = 0;      //!< attempts launched
  int retries_used = 0;  //!< attempts that counted against retryPolicy
  bool running = false;  //!< an attempt is live (launched, not yet exited)
  //! The live attempt waits in the backend's queue (QueuesAttempts): phase PENDING, no
  //! timeout running, until OnRunning.
  bool queued = false;
  bool stop_requested = false;  //!< Stop already asked for the live attempt
  //! The step's (or the run's) timeout fired for the live attempt: it is being stopped. The
  //! phase is TIMED_OUT (and the TimedOut event recorded) from that moment; the exit, after
  //! the grace period at most, completes it (a retry, or the end).
  bool timeout_fired = false;
  int64_t started_at = 0;   //!< of the live/last attempt (0 while it waits in a queue)
  int64_t launched_at = 0;  //!< when the live/last attempt was launched (0: not known)
  int64_t finished_at = 0;
  int64_t next_attempt_at = 0;  //!< RETRYING: not before
  std::string failure_code;
  std::string message;
  std::string metrics_json = "{}";
};

//! One change of a step's or the run's state, with its event.
struct Transition {
  int step = -1;             //!< -1: the run itself
  spec::EventReason reason;  //!< Started, Succeeded, Failed, Retrying, Skipped, ...
  std::string message;
  bool warning = false;  //!< event type Warning (failures) rather than Normal
};

//! What the plan wants stopped.
struct StopRequest {
  int step;
  bool timed_out;  //!< true: step or run timeout; false: cancel / failing run
};

//! The run's end.
struct RunOutcome {
  spec::RunPhase phase;      //!< SUCCEEDED | FAILED | TIMED_OUT | CANCELLED
  std::string failure_code;  //!< "" on success
  std::string message;
};

//! Evaluates a step's `when` (the engine binds it to the expression language and to
//! status.<step> / output.<step>.metrics.<key> of this plan). `note` receives why a false
//! condition is false when it read a value that does not exist (shown in the Skipped event).
using WhenFn = std::function<Result<bool>(int step, std::string* note)>;

class RunPlan {
 public:
  //! `workload` must outlive the plan and have passed validation (known deps, no cycles).
  //! `started_at` starts the run timeout (spec.timeout) clock.
  RunPlan(const spec::Workload* workload, int64_t started_at);

  size_t size() const { return steps_.size(); }
  const spec::Step& step_spec(int i) const { return workload_->pipeline.steps[size_t(i)]; }
  const StepState& state(int i) const { return steps_[size_t(i)]; }
  int IndexOf(const std::string& name) const;  //!< -1 if unknown
  const std::vector<int>& deps(int i) const { return deps_[size_t(i)]; }

  //! Recovery: puts a step back in a recorded state (before the first Advance).
  //! A RUNNING step, a PENDING one with `running` set (queued in the backend), or a
  //! TIMED_OUT one with `running` set (its timeout had fired and its attempt was being
  //! stopped: the stop is asked for again), is expected to be adopted (its exit arrives
  //! later through OnExit).
  void Restore(int i, const StepState& s);

  //! Moves the plan forward at `now`: evaluates candidates (skips, `when`), releases retries
  //! whose backoff passed, finds timeouts. Call after any fact and on wake-up.
  void Advance(int64_t now, const WhenFn& when);

  //! Steps that may start now (dependencies succeeded, `when` true, no backoff pending),
  //! in pipeline order. They stay ready until OnLaunched or the run ends.
  const std::set<int>& ready() const { return ready_; }
  //! The engine launched an attempt of a ready step. `queued`: the backend queues it (the
  //! step stays PENDING and its timeout does not run until OnRunning).
  void OnLaunched(int i, int64_t now, bool queued = false);
  //! The backend runs the queued attempt of step i now: RUNNING (Started), its timeout
  //! counts from `now`. False (nothing changes) when the step is not queued.
  bool OnRunning(int i, int64_t now);
  //! Why the queued attempt of step i still waits (the backend's words), for its message.
  void OnQueued(int i, const std::string& why);
  //! The live attempt of step i ended. `hook_error` (AfterStep) fails a succeeded attempt
  //! without retry.
  void OnExit(int i, const backend::AttemptExit& exit, const std::string& metrics_json, int64_t now,
              const Status& hook_error = Status::Ok());
  //! The step could not be started at all (BeforeStep refused, env missing): FAILED, no retry.
  void FailWithoutRetry(int i, const Error& error, int64_t now);
  //! Cancellation: pending steps CANCELLED, running ones to be stopped.
  void Cancel(int64_t now, const std::string& by);

  //! Stops the caller must carry out (each asked once per attempt).
  std::vector<StopRequest> TakeStops();
  //! State changes since the last call, in order.
  std::vector<Transition> TakeTransitions();
  //! Steps whose state changed since the last call (to persist).
  std::set<int> TakeDirty();

  //! The earliest time Advance has something to do (retry due, timeout), or INT64_MAX.
  int64_t NextWakeup() const;
  //! Set once every step is terminal and nothing runs.
  const std::optional<RunOutcome>& outcome() const { return outcome_; }
  int running() const { return running_; }

  //! delay(n) = backoff * backoffFactor^(n-1), at most maxBackoff (n = 1 for the 1st retry).
  static int64_t RetryDelayMs(const spec::RetryPolicy& policy, int retry_number);

 private:
  bool Terminal(int i) const;
  //! `reason` nullopt: no event (one was recorded already).
  void SetPhase(int i, spec::StepPhase phase, std::optional<spec::EventReason> reason,
                const std::string& message, bool warning);
  void Finish(int i, spec::StepPhase phase, std::optional<spec::EventReason> reason,
              const std::string& message, bool warning);  // terminal + cascade
  void StartFailing(const std::string& why);
  //! Records the timeout of running step i now (phase TIMED_OUT, event TimedOut with
  //! `message`) and asks for its stop; the caller set its failure code.
  void FireTimeout(int i, const std::string& message);
  void EvaluateCandidate(int i, const WhenFn& when);
  void MaybeDone();

  const spec::Workload* workload_;
  int64_t run_deadline_ = INT64_MAX;
  std::vector<StepState> steps_;
  std::vector<std::vector<int>> deps_, dependents_;
  std::vector<int> open_deps_;  // dependencies not yet terminal
  std::map<std::string, int> index_;
  std::deque<int> candidates_;  // all deps terminal: evaluate
  std::set<int> ready_;
  std::set<std::pair<int64_t, int>> retry_due_;  // (time, step)
  std::set<std::pair<int64_t, int>> deadlines_;  // running steps' timeouts
  std::vector<StopRequest> stops_;
  std::vector<Transition> transitions_;
  std::set<int> dirty_;
  int terminal_ = 0;
  int running_ = 0;
  bool failing_ = false;  // an atomic run lost a step: start nothing new
  bool cancelled_ = false;
  bool timed_out_ = false;
  std::string cancelled_by_;
  int first_failure_ = -1;
  std::optional<RunOutcome> outcome_;
};

}  // namespace rsl::engine
