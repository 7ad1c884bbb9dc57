// The Engine runs workloads: it admits a submitted version (hooks, resources), drives each
// run's RunPlan (plan.h: the pure decisions) against a Backend (the doing), records every
// transition durably in the Store before acting on it, commits or discards outputs, and
// recovers unfinished runs after a crash. rsl-controller embeds one Engine; `seedctl run`
// embeds one for a single run.
//
// Threading: all public methods are thread-safe. The engine owns one loop thread that makes
// every decision and every store write (so transitions of one run are totally ordered),
// one admission thread per run being admitted, and whatever threads the backend uses.
// Subscriber callbacks are called on the loop thread after the batch they belong to is
// durable; they must be quick and must not call back into the Engine.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "base/env.h"
#include "base/status.h"
#include "engine/hooks.h"
#include "spec/names.h"
#include "spec/workload.h"
#include "store/store.h"

namespace rsl::engine {

struct EngineOptions {
  std::string state_dir;  //!< the controller's own (0700): steps never see it
  //! Where run directories live (<runs_dir>/<run id>), apart from the state directory so
  //! that steps can reach their own directories in it and nothing of the state directory.
  //! "" = "<state_dir>-runs". Made 0711: passable, not listable.
  std::string runs_dir;
  //! SIGTERM -> SIGKILL grace for timeouts and cancellation.
  int64_t stop_grace_ms = 10'000;
  //! How often running steps' RSL_PROGRESS_FILE is read (progress only; never the hot path).
  int64_t progress_poll_ms = 1'000;
  //! One run launches at most this many steps per loop turn; the rest stay ready for the next
  //! turn, which follows at once. A turn's transaction and the launch records it holds stay
  //! bounded (100,000 ready steps in one turn made one 300 MB transaction and a 1.3 GB peak),
  //! and exits and other runs are served between the chunks.
  int max_launches_per_run_per_turn = 2048;
  //! Environment variables passed from the engine's environment to every step (PATH, HOME...).
  std::vector<std::string> inherited_env = spec::EngineBasicEnvNames();
  //! The clock, and the file system of the runs directory and of output commits (tests: a
  //! fake clock, injected faults). nullptr: Env::Default(). Must outlive the Engine.
  Env* env = nullptr;
};

struct SubmitOptions {
  std::string rollback_of;  //!< set by `rollback --id`: the version being re-run
  //! Written in the transaction that records the submission (store::Batch::also), given the
  //! new version's id and name: the API's audit entry of an accepted submission, which thus
  //! never exists without it nor it without one. Its failure fails the submission.
  std::function<Status(Db*, const std::string& id, const std::string& name)> commit_also;
};

//! Layout of a run directory (docs/engine.md "Runs directory"). Flat, one entry per
//! attempt in three per-run directories, so an attempt costs no directory creation but its
//! working directory and staging (made by the backend, off the engine's loop):
//!   attempts/<step>.<n>.log (only if written; attempts/ is the controller's alone)
//!   attempts/exits (the local supervisor's exit journal; "<step>.<n>.exit" names a record)
//!   work/<step>.<n>/   staging/<step>/ (attempt 1), staging/<step>.<n>/ (attempt n > 1)
//!   work/<step>.<n>/.rsl-metrics.json, .rsl-progress: what the step reports (RSL_METRICS_FILE,
//!   RSL_PROGRESS_FILE), in the one directory besides its staging that an isolated step can
//!   write
//! Step names are DNS-1123 labels (no '.'), so "<step>.<n>" is unambiguous. A first attempt's
//! staging already has its output's name, so a run whose steps all succeeded at once commits
//! its whole staging directory in one rename (commit.cc).
std::string RunDir(const std::string& runs_dir, const std::string& run_id);
//! options.runs_dir, or DefaultRunsDir(options.state_dir) when that is empty.
std::string RunsDirOf(const EngineOptions& options);
//! "<state_dir>-runs" (trailing slashes dropped).
std::string DefaultRunsDir(const std::string& state_dir);
//! The attempt's file prefix: <run_dir>/attempts/<step>.<n> (+ ".log", ".exit", ...; the
//! local backend keeps ".exit" as a record of attempts/exits, not as a file).
std::string AttemptPath(const std::string& run_dir, const std::string& step, int attempt);
std::string AttemptLogPath(const std::string& run_dir, const std::string& step, int attempt);
std::string AttemptWorkDir(const std::string& run_dir, const std::string& step, int attempt);
std::string StagingDir(const std::string& run_dir, const std::string& step, int attempt);
//! RSL_INPUT_<DEP>: upper-case, every character outside A-Z0-9 -> '_' (spec::StepInputVariable;
//! validation refuses the step name that would collide with RSL_INPUT_URI).
std::string DepEnvName(const std::string& step);

class RunPlan;

class Engine {
 public:
  //! `store` and `backend` must outlive the Engine. The backend's callbacks are taken over
  //! by the engine. Call Start() before Submit/Recover.
  Engine(store::Store* store, backend::Backend* backend, Hooks hooks, EngineOptions options);
  ~Engine();  //!< Stop()s.
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  //! Starts the loop thread.
  Status Start();
  //! Stops the loop and admission threads. Running steps keep running (a later engine on
  //! the same state dir adopts them through Recover); pass `stop_steps` to stop them first.
  void Stop(bool stop_steps = false);

  //! Records a new immutable version and its run (PENDING) durably, then admits and runs it
  //! asynchronously. Returns the version id (wl-YYYYMMDD-<8 hex>). The workload must have
  //! passed spec validation. Thread-safe: concurrent submissions share one store transaction
  //! (group commit, see docs/engine.md), and each returns only once the transaction holding
  //! it is durable. Errors: IO/INTERNAL from the store; when that transaction fails, every
  //! submission in it fails with the store's code and none of them is recorded. The
  //! workload is taken by value: a caller done with it moves it in instead of a copy.
  Result<std::string> Submit(spec::Workload workload, const std::string& created_by,
                             const SubmitOptions& options = {});
  //! The same, sharing the caller's workload (never copied: the engine only reads it). The
  //! controller keeps that object as the new version's snapshot.
  Result<std::string> Submit(std::shared_ptr<const spec::Workload> workload,
                             const std::string& created_by, const SubmitOptions& options = {});

  //! Cancels a run (version or run id): running steps are stopped (SIGTERM, grace, SIGKILL),
  //! pending ones cancelled, outputs discarded. Errors: NOT_FOUND; CONFLICT when finished.
  Status Cancel(const std::string& id, const std::string& by);

  //! Picks up every unfinished run in the store: adopts attempts whose processes still run,
  //! reconciles attempts that ended while no engine was there (exit files), reschedules
  //! lost ones without spending a retry, re-admits runs that were never admitted, and
  //! completes half-done commits. Call once after Start(), before serving.
  Status Recover();

  //! Blocks until the run (version or run id) is terminal or `timeout_ms` passes (< 0: no
  //! limit). Returns the run as stored. Errors: NOT_FOUND; CONFLICT on timeout.
  Result<store::Run> Wait(const std::string& id, int64_t timeout_ms = -1);

  //! Notification for watchers: `fn` gets every event after it is durable.
  using Subscriber = std::function<void(const store::Event&)>;
  int Subscribe(Subscriber fn);
  void Unsubscribe(int token);
  //! Blocks until an event with seq > after_seq is durable or `timeout_ms` passes; returns
  //! the last durable event seq (for long-polling `--watch` / server-sent events).
  int64_t WaitForEvents(int64_t after_seq, int64_t timeout_ms);

  //! Lets hooks (cost policies) and the controller act on running runs.
  RunControl* control();

  //! The latest live sample of a running attempt's resource use (from backends that sample:
  //! the local one, about every second), or nothing. Kept in memory only, never written to
  //! the store: the attempt's exit records the totals.
  std::optional<backend::AttemptUsage> LiveUsage(const std::string& attempt_id);

  //! Waits until every postProcess webhook handed to the sender was sent (or gave up) and
  //! its event is durable, at most `timeout_ms`; false on timeout. `seedctl run` calls it
  //! before Stop(); a controller that stops leaves what is unsent to its next start.
  bool DrainPostProcess(int64_t timeout_ms);
  //! Resolves a version id or run id to the run id. Errors: NOT_FOUND.
  Result<std::string> ResolveRunId(const std::string& id);

  //! Counters for /metrics and benchmarks.
  struct Stats {
    int64_t batches = 0;      //!< store transactions written by the loop
    int64_t transitions = 0;  //!< step/run records written
    int64_t launches = 0;
    int64_t running_runs = 0;         //!< runs held in memory (unfinished ones only)
    int64_t finished_remembered = 0;  //!< ended runs Wait() knows without the store (bounded)
    int64_t submits = 0;              //!< submissions recorded durably
    int64_t submit_commits = 0;       //!< store transactions that recorded them (group commit)
    int64_t submits_queued = 0;       //!< submissions waiting for their transaction, now
    int64_t admission_threads = 0;    //!< admission workers started (kept and reused a while)
  };
  Stats stats();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rsl::engine
