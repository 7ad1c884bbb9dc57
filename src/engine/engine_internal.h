// Internals of the Engine shared by engine.cc (the loop), engine_api.cc (the public calls),
// handle.cc (the facts the loop takes in: messages, exits, progress), reserve.cc (placement
// bookkeeping), admit.cc (admission, recovery), launch.cc (building an attempt's LaunchSpec)
// and commit.cc (publishing and discarding outputs). Per-run state: run_state.h.
// Not a public header.
#pragma once

#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "base/commit_manifest.h"
#include "base/group_commit.h"
#include "engine/engine.h"
#include "engine/object_root.h"
#include "engine/plan.h"
#include "engine/post_process.h"
#include "engine/run_state.h"
#include "expr/expr.h"
#include "sched/ledger.h"
#include "sched/node.h"
#include "sched/placement.h"

namespace rsl::engine {

//! Metrics files above this size are refused (a step's metrics are a small JSON object).
inline constexpr int64_t kMaxMetricsBytes = 1 << 20;
//! One transaction records at most this many submissions, and more than one only while their
//! PENDING step rows stay under kMaxSubmitStepsPerCommit: a submission never waits behind an
//! unbounded transaction. Under api_load (4 clients) a group holds 2-4.
inline constexpr size_t kMaxSubmitsPerCommit = 128;
inline constexpr size_t kMaxSubmitStepsPerCommit = 8192;
//! A new submission's id is drawn again while the store already has it, at most this many
//! times. NewVersionId only grows, so the ids an earlier process drew in the same second (a
//! restart right after a burst of submissions) are walked past: a few hundred at most at
//! 20,000 submissions a minute.
inline constexpr int kMaxVersionIdDraws = 65536;
//! A submission whose id another process committed first (after the lookup) is drawn and
//! committed again, at most this many times in all.
inline constexpr int kMaxSubmitTries = 8;

struct ExitMsg {
  backend::AttemptExit exit;
};
struct EventMsg {
  backend::AttemptEvent event;
};
struct AdmittedMsg {
  std::string run_id;
  Status status;
  std::string reason;   // event reason on failure
  std::string message;  // Admitted event message
  std::string report_json;
  std::vector<std::string> descriptors;
  PreviousResults previous;  // when the workload reads previous.*
  std::shared_ptr<const spec::Workload> workload;
  store::WorkloadVersion version;
  int owner_fd = -1;  // the run's owner lock, handed to its RunState
  //! Its claim of an object-store output root (ObjectClaim), when it has one.
  std::unique_ptr<ObjectClaim> object_claim;
};
struct CancelMsg {
  std::string run_id;
  std::string by;
  std::shared_ptr<std::promise<Status>> done;
};
struct StopStepMsg {
  std::string run_id, step, reason, message;
  bool as_success;
  std::shared_ptr<std::promise<Status>> done;
};
struct EmitMsg {
  std::string run_id, step, reason, message;
};
struct RecoverMsg {
  std::unique_ptr<RunState> ctx;
  std::vector<store::Attempt> live;
  std::unique_ptr<ObjectClaim> object_claim;  // resumed: its object-store root's claim
};
struct LaunchFailedMsg {
  std::string run_id;
  int step;
  std::string attempt_id;
  Error error;
};
struct NodesMsg {
  std::vector<sched::Node> nodes;  // the backend's inventory anew (on_nodes)
};
struct PostProcessDoneMsg {
  Delivery delivery;
  DeliveryResult result;
};
//! Fulfilled once everything posted before it is durable (DrainPostProcess).
struct BarrierMsg {
  std::shared_ptr<std::promise<void>> done;
};
//! The output commits of runs handed to the committer thread are done (FinishRunFiles):
//! their terminal records and events, to join the turn's transaction.
struct RunFilesDoneMsg {
  std::vector<std::string> run_ids;
  store::Batch batch;
};
using Msg =
    std::variant<ExitMsg, EventMsg, AdmittedMsg, CancelMsg, StopStepMsg, EmitMsg, RecoverMsg,
                 LaunchFailedMsg, NodesMsg, PostProcessDoneMsg, BarrierMsg, RunFilesDoneMsg>;

//! The run of the newest version of the workload's name before `version` that SUCCEEDED,
//! when the workload reads previous.* anywhere (else nothing is read: `loaded` stays false).
PreviousResults LoadPrevious(store::Store* store, const spec::Workload& w,
                             const store::WorkloadVersion& version);

//! TEST_ fault injection: when $RSL_TEST_CRASH_AT names this point, the process kills
//! itself with SIGKILL there (crash tests reach "mid-commit" exactly). Points:
//! after-launch-record, after-commit-decided, mid-publish, before-committed-record.
void CrashPoint(const char* point);

//! The local directory behind a data URI: file:///x and bare paths as written, URIs a `local`
//! datasource serves through `publisher` (may be null), "" for anything else. One rule for
//! RSL_INPUT and for output commits.
std::string LocalPathOf(const std::string& uri, OutputPublisher* publisher);

//! What every attempt of one run shares, left out of its launch records (LaunchToJson) and
//! put back when one is read (LaunchFromJson): the run's identity and labels, its directory
//! (paths under it are stored relative to it) and the variables every attempt gets alike (the
//! inherited ones, EngineOptions::inherited_env with the engine's values, PATH defaulted, and
//! RSL_RUN_ID, RSL_WORKLOAD_ID). A field of an attempt that differs from its base is stored
//! whole.
struct LaunchBase {  // views of the run's strings: it lives no longer than its run
  std::string_view run_id;
  std::string_view version_id;
  std::string_view workload_name;
  std::string_view namespace_;
  std::string_view run_dir;
  const std::map<std::string, std::string>* labels = nullptr;  //!< null = none shared
  const std::map<std::string, std::string>* env = nullptr;     //!< null = none shared
};

//! The LaunchSpec as stored with an attempt (secret values are never in it: secret env
//! values are replaced by "***" and secret_values dropped), less what `base` holds: about
//! 400-500 bytes for a step of a 10,000-step tree, where the whole spec was 1.4 KB (and what
//! SQLite spends on an attempt grows with its record). Its form: docs/engine.md.
std::string LaunchToJson(const backend::LaunchSpec& spec, const LaunchBase& base);
//! Reads a record of LaunchToJson with the base it was written with (the same run's), or one
//! written before records had a base (every field whole; `base` unused).
Result<backend::LaunchSpec> LaunchFromJson(const std::string& json, const LaunchBase& base);

class Engine::Impl : public RunControl {
 public:
  Impl(store::Store* store, backend::Backend* backend, Hooks hooks, EngineOptions options);
  ~Impl() override;

  Status Start();
  void Stop(bool stop_steps);
  Result<std::string> Submit(std::shared_ptr<const spec::Workload> w, const std::string& by,
                             const SubmitOptions& opts);
  //! One try of Submit: an id, the transaction, the admission started.
  Result<std::string> SubmitOnce(const std::shared_ptr<const spec::Workload>& w,
                                 const std::string& by, const SubmitOptions& opts);
  Status Cancel(const std::string& id, const std::string& by);
  Status Recover();
  Result<store::Run> Wait(const std::string& id, int64_t timeout_ms);
  int Subscribe(Subscriber fn);
  void Unsubscribe(int token);
  int64_t WaitForEvents(int64_t after_seq, int64_t timeout_ms);
  Result<std::string> ResolveRunId(const std::string& id);
  Stats stats();
  std::optional<backend::AttemptUsage> LiveUsage(const std::string& attempt_id);
  bool DrainPostProcess(int64_t timeout_ms);

  // RunControl
  Status StopStep(const std::string& run_id, const std::string& step, const std::string& reason,
                  const std::string& message, bool as_success) override;
  void EmitEvent(const std::string& run_id, const std::string& step, const std::string& reason,
                 const std::string& message) override;

 private:
  // Work to do once the current batch is durable.
  struct Actions {
    std::vector<std::pair<RunState*, int>> launches;
    std::vector<std::pair<std::string, bool>> stops;  // attempt id, timed out
    // Run ids to finish (commit/discard); DecideFinishes leaves the non-atomic ones here.
    std::vector<std::string> finished_runs;
    // Atomic runs whose end was decided in this turn's batch (DecideFinishes), their output
    // roots held: handed to a committer once the batch is durable.
    std::vector<RunState*> decided_runs;
    std::vector<std::string> ended_runs;  // terminal records in this turn's batch: forget them
    std::vector<std::pair<RunState*, int>> publish_steps;  // non-atomic: publish on success
    std::vector<std::tuple<RunState*, int, backend::LaunchSpec>> started;  // OnStepStarted
    std::vector<Delivery> deliveries;  // postProcess hooks of steps that ended
    std::vector<std::shared_ptr<std::promise<void>>> barriers;
  };

  void Post(Msg m);
  void Loop();
  void Handle(Msg& m, store::Batch* b, Actions* a, std::set<RunState*>* touched);
  void HandleExit(const backend::AttemptExit& e, store::Batch* b, std::set<RunState*>* touched);
  //! The rest of an attempt's exit, once its required postProcess hooks are done (or at
  //! once when it has none): the step record, the plan's decision, the attempt record.
  void ApplyExit(RunState* r, int i, const backend::AttemptExit& exit, const std::string& metrics,
                 bool never_ran, Status hook_error, store::Batch* b, std::set<RunState*>* touched);
  void HandlePostProcessDone(PostProcessDoneMsg& m, store::Batch* b, std::set<RunState*>* touched);
  //! The deliveries of step i's postProcess hooks for an end in `phase` (conditions
  //! evaluated, bodies rendered; PostProcessSkipped/Failed events for those not sent).
  //! `required_stage`: only required on-success hooks, for an attempt that succeeded (a
  //! hook that cannot be rendered then sets `error`); otherwise every hook but those.
  std::vector<Delivery> BuildDeliveries(RunState* r, int i, spec::StepPhase phase,
                                        const std::string& metrics, int exit_code, int attempt,
                                        const std::string& failure_code, bool required_stage,
                                        store::Batch* b, Status* error);
  void HandleAdmitted(AdmittedMsg& m, store::Batch* b, std::set<RunState*>* touched);
  void HandleRecover(RecoverMsg& m, store::Batch* b, std::set<RunState*>* touched);
  //! A backend event; on a queueing backend, kRunning starts the queued attempt (its node,
  //! its timeout) and kPending tells why it still waits.
  void HandleEvent(const backend::AttemptEvent& e, store::Batch* b, std::set<RunState*>* touched);
  //! The backend's inventory anew: node states and, for admission, what exists.
  void HandleNodes(NodesMsg& m, std::set<RunState*>* touched);
  //! Advances a run's plan and turns its decisions into records, events and actions.
  void Drive(RunState* r, store::Batch* b, Actions* a);
  //! After a Drive: files the run under its next timer and, when it has ready steps left
  //! unplaced, among the waiting runs (oldest first). A turn drives the runs its messages
  //! touched, those whose timer is due, then the waiting ones while capacity lasts: it does
  //! not visit every active run (a backlog of thousands of admitted runs made each turn
  //! cost them all).
  void Reschedule(RunState* r);
  //! Forgets the run's schedule (before it leaves runs_).
  void Unschedule(RunState* r);
  //! Files r among the waiting runs as `now` says (not at all, loud or quiet): in waiting_,
  //! loud_waiting_ and quiet_requests_.
  void FileWaiting(RunState* r, RunState::Waiting now);
  //! True when driving any of the waiting runs would change nothing: every one is quiet
  //! while full (RunState::quiet_when_full) and no node has the smallest of their
  //! min_cpu_requests free. A turn then stops walking them: with a backlog of thousands
  //! queued behind a full node, the walk was 12 % of the loop thread under api_load.
  bool NoWaitingRunFits() const;
  //! Moves the plan's pending transitions into the batch as events, in the plan's order.
  void RecordTransitions(RunState* r, store::Batch* b);
  void PollProgress(store::Batch* b);
  //! Applies the batch, retrying every kStoreRetryMs while the store fails (a full disk may
  //! come back), then tells the subscribers. False only when the engine stops before the
  //! batch is durable: then the caller must not act on it.
  bool Commit(store::Batch* b);
  void Perform(Actions* a);
  //! The atomic runs of a->finished_runs whose output root can be taken now: the decision
  //! to commit a succeeded one (commit_state kCommitCommitting) goes into the turn's own
  //! batch `b`, not a transaction of its own after it (one fsync fewer for every turn that
  //! ends a run), and the run into a->decided_runs. Non-atomic runs stay in finished_runs:
  //! their end waits for this turn's publications (Perform).
  void DecideFinishes(Actions* a, store::Batch* b);
  //! The runs that ended this turn, once its transaction is durable: `decided` (atomic,
  //! their decision to commit in that transaction, DecideFinishes) and `non_atomic` (their
  //! outputs published step by step: nothing to decide, their output root taken here).
  //! Their files go to a committer thread (CommitterLoop), and the loop goes on with every
  //! other run meanwhile: an output commit is renames, a manifest and their fsyncs (or
  //! uploads), which held up every launch while they ran on the loop. Their terminal
  //! records come back as a RunFilesDoneMsg and join a turn's transaction; EndRuns forgets
  //! them once it is durable.
  void FinishRuns(std::vector<RunState*> decided, const std::vector<RunState*>& non_atomic);
  //! A committer thread: FinishRunFiles of each run of a job, then their terminal records
  //! in one message (one transaction for the runs that ended in one turn).
  void CommitterLoop();
  //! Runs whose terminal record is durable: claims released, AfterRun, forgotten.
  void EndRuns(const std::vector<std::string>& run_ids);
  //! One run's outputs committed or discarded; its terminal record and events into `b`.
  //! REQUIRES: a succeeded atomic run's commit_state kCommitCommitting is durable.
  // Takes the output root a run's end needs (a local root's lock, an object-store root's
  // lease) without waiting. False while another commit holds it: the run's end is tried
  // again later (100 ms, doubling to 2 s), and the loop goes on with the other runs. After
  // kOutputLockWaitMs of waiting, true with r->root_error set (the run fails with it). The
  // event that says a run waits goes into `b` (the turn's batch), or a transaction of its
  // own when null.
  bool TakeOutputRoot(RunState* r, store::Batch* b = nullptr);
  void FinishRunFiles(RunState* r, store::Batch* b);

  // launch.cc
  //! What the launch records of r's attempts share (LaunchToJson, LaunchFromJson).
  static LaunchBase LaunchBaseOf(const RunState* r);
  Result<backend::LaunchSpec> BuildLaunch(RunState* r, int i, const std::string& node,
                                          const std::vector<int>& gpus);
  std::string OutputDirFor(RunState* r, int i);  // what dependents get as RSL_INPUT_<DEP>
  // commit.cc
  //! Publishes step i's successful staging (`published` left empty when it has none; set,
  //! even on an error, once the output is in place).
  //! `sync`: make the output root and fsync it now; a whole-run commit makes it before and
  //! syncs it once after every step is renamed.
  //! `whole`: the entries of the run's staging that CommitStagingWhole moved into root (null:
  //! unknown, look for the step's staging and its published output).
  Status PublishStep(RunState* r, int i, std::string* published, int64_t* bytes, bool sync = true,
                     const std::set<std::string>* whole = nullptr);
  //! `renamed`: set when staging became `root` just now (then it holds step outputs only).
  //! `whole`: set to the entries now under root that came from staging (the succeeded steps'
  //! last attempts that staged something), or to none when there was no staging and no root.
  //! `manifest` (run and workload ids set): when every output already had its step's name
  //! in staging (each step succeeded at its first attempt), its outputs and commit time are
  //! filled in and it is written into staging before the rename (committed_at != 0 says so):
  //! root appears with its manifest, and the step entries and the manifest are durable with
  //! one fsync of the directory (three fsyncs a run instead of four).
  Status CommitStagingWhole(RunState* r, const std::string& root, bool* renamed,
                            std::optional<std::set<std::string>>* whole, CommitManifest* manifest);
  Status DiscardRun(RunState* r, std::vector<std::string>* kept);
  //! Makes `root` and removes its manifest (and temporary manifests a crash left): from here
  //! on readers take it as not committed. Errors: the manifest cannot be removed.
  Status UnpublishManifest(const std::string& root);
  //! After a failed atomic commit: removes the manifest and what the commit published under
  //! the local `root` (all of it when root is the run's own outputs/) if it `touched` root
  //! (an older commit it never got to change stays whole), then discards staging. Returns
  //! the OutputDiscarded message (what was kept, what could not be removed).
  std::string UndoCommit(RunState* r, const std::string& root, bool touched,
                         const std::vector<std::string>& published_dirs);
  //! Where a run publishes: its data.output root (OutputBase), or <base>/<run id> with
  //! policy versioned, or the run's own outputs/ (then `fallback` says whether a
  //! data.output.uri had no storage here).
  std::string OutputRoot(RunState* r, bool* fallback);
  //! The root data.output.uri names, as a local directory or a URI a publisher serves; ""
  //! without data.output or when nothing serves it (`fallback` set then).
  std::string OutputBase(const spec::Workload& w, bool* fallback = nullptr);
  //! data.output.policy versioned, on a root that is served.
  bool Versioned(RunState* r);
  //! Sets `previous` to the manifest at `root` when another run's commit wrote it. Errors:
  //! a manifest that is there and cannot be read.
  Status ReadPreviousCommit(const std::string& root, const std::string& run_id,
                            std::optional<CommitManifest>* previous);
  //! The object-store version of UnpublishManifest, under the root's lease: reads the
  //! manifest at `root` (into `previous` when another run wrote it and `replace`), then
  //! removes it. Errors: the store's.
  Status UnpublishObjectManifest(const std::string& root, const std::string& run_id, bool replace,
                                 std::optional<CommitManifest>* previous);
  //! Removes a local path (Env) or an object prefix (the publisher).
  Status RemoveOutput(const std::string& path);
  //! Removes the step directories `previous` published under `root` that `current` does not
  //! hold: the root then holds one run's outputs only.
  Status RemoveReplacedOutputs(const std::string& root, const CommitManifest& previous,
                               const CommitManifest& current);
  //! An object-store root whose commits take turns through a lease (conditional writes).
  bool SharedObjectRoot(const std::string& base);
  //! The file that remembers run `run_id`'s claim of an object-store root (its body: the
  //! claim's URI) from admission until the claim is removed, so that a claim left by a crash
  //! after the run ended is removed by recovery: <state dir>/object-claims/<run id>.
  std::string ClaimMarkerPath(const std::string& run_id);
  std::string ClaimMarkerDir();  //!< <state dir>/object-claims (state_dir set)
  //! Loop: keeps `claim` for run `run_id` and renews it from now on.
  void KeepObjectClaim(const std::string& run_id, std::unique_ptr<ObjectClaim> claim);
  //! Removes run `run_id`'s object-store claim (`claim`, or the one kept), then its marker.
  void ReleaseObjectClaim(const std::string& run_id, ObjectClaim* claim = nullptr);
  //! Loop: renews the claims that are due (events for those that cannot be renewed).
  void RenewObjectClaims(store::Batch* b);
  //! Recovery: removes the claims (and markers) of runs that ended before a crash let them go.
  void RemoveEndedRunsClaims();
  //! Adds to `b` what replacing `previous` means: the event and lineage on the replaced run
  //! (when this store holds it) and the lineage of this one; extends the commit's `msg`.
  void RecordSuperseded(RunState* r, const std::string& base, const CommitManifest& previous,
                        store::Batch* b, std::string* msg);

  // Placement bookkeeping (loop thread).
  //! Places step i (holds its node and devices); on false, `why` (when not null) says why
  //! nothing fits now.
  bool Reserve(RunState* r, int i, std::string* node, std::vector<int>* gpus, std::string* why);
  void Release(RunState* r, int i);
  sched::Request RequestFor(const spec::Step& s) const;
  //! A serving step's admission: maxReplicas fit the nodes, the backend can serve it (proxy,
  //! port). Errors: INSUFFICIENT_RESOURCES, and the backend's (SERVING_*).
  Status CheckServing(const spec::Workload& w, size_t i);

  //! `reason` as a string: a hook's or a policy's own reason (the event log is open to them).
  void AddEvent(store::Batch* b, const std::string& run_id, const std::string& step,
                const std::string& reason, const std::string& message, bool warning);
  void AddEvent(store::Batch* b, const std::string& run_id, const std::string& step,
                spec::EventReason reason, const std::string& message, bool warning) {
    AddEvent(b, run_id, step, std::string(spec::Name(reason)), message, warning);
  }
  void SyncRecord(RunState* r, int i);
  void Admit(std::shared_ptr<const spec::Workload> w, store::WorkloadVersion v, store::Run run,
             int owner_fd);
  int64_t NowMs() { return env_->NowMs(); }
  //! The nodes as last listed, for admission on other threads (shared, never copied).
  std::shared_ptr<const std::vector<sched::Node>> Inventory() {
    std::lock_guard<std::mutex> lock(inventory_mu_);
    return inventory_;
  }
  void PublishInventory() {
    auto inv = std::make_shared<const std::vector<sched::Node>>(ledger_.nodes());
    std::lock_guard<std::mutex> lock(inventory_mu_);
    inventory_ = std::move(inv);
  }

  store::Store* store_;
  backend::Backend* backend_;
  Hooks hooks_;
  EngineOptions opts_;
  Env* env_;  // opts_.env or Env::Default()
  //! opts_.inherited_env with this process's values, read once at construction (PATH
  //! defaulted): the start of every launch's environment, and its records' base.
  std::map<std::string, std::string> inherited_env_;
  sched::Ledger ledger_;  // loop thread (after Start): the nodes with what steps hold
  //! The backend queues attempts (QueuesAttempts): it, not the engine, knows what is in use;
  //! the ledger then holds nothing and placement only checks that a node could take it.
  bool backend_queues_ = false;  // const after Start
  std::mutex inventory_mu_;
  std::shared_ptr<const std::vector<sched::Node>> inventory_ =  // GUARDED_BY(inventory_mu_)
      std::make_shared<const std::vector<sched::Node>>();
  int64_t default_cpu_millis_ = 1000;  // const after Start: DefaultCpuMillis

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Msg> inbox_;  // GUARDED_BY(mu_)
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::thread loop_;
  // The committer threads (CommitterLoop) and the runs handed to them, one job per turn's
  // FinishRuns. A run handed over is a committer's until its RunFilesDoneMsg: the loop does
  // not drive it (committing). Several, so that one slow upload holds up no other run's end;
  // two jobs never share an output root (FinishRuns hands over a run whose shared root it
  // holds, by its lock or lease).
  static constexpr int kCommitterThreads = 4;
  std::vector<std::thread> committers_;
  std::mutex commit_mu_;
  std::condition_variable commit_cv_;
  std::deque<std::vector<RunState*>> commit_queue_;  // GUARDED_BY(commit_mu_)
  bool commit_stop_ = false;  // GUARDED_BY(commit_mu_): drain the queue, then end
  // Admission runs on threads of its own (it may wait on an object store or a data check for
  // minutes), kept a while for the next workloads as a cached thread pool keeps its workers:
  // a submission waits for no other's admission (a job goes to an idle worker, else to a new
  // one), and a thread, its stack's memory map and its unmapping are not paid per workload.
  // A worker idle for kAdmissionIdleMs ends.
  static constexpr int64_t kAdmissionIdleMs = 10000;
  std::vector<std::thread> admissions_;               // GUARDED_BY(mu_)
  std::deque<std::function<void()>> admission_jobs_;  // GUARDED_BY(mu_)
  size_t admission_idle_ = 0;                         // GUARDED_BY(mu_): workers waiting
  int64_t admission_threads_ = 0;                     // GUARDED_BY(mu_): workers started
  std::condition_variable admission_cv_;
  // Admission threads that returned, to be joined: an exited thread that is never joined
  // keeps its stack (80 KB each, and a memory map each).
  std::vector<std::thread::id> admissions_done_;  // GUARDED_BY(mu_)
  void AdmissionWorker();
  //! Group commit of submissions (base/group_commit.h): one submission's batch (its version,
  //! run and PENDING steps) shares ONE store transaction with those queued beside it, and
  //! returns once it is durable (or failed: then all of the group fail). On success the
  //! batch's version has the number the store assigned.
  Status CommitSubmit(store::Batch* submission);
  GroupCommit<store::Batch> submits_{kMaxSubmitsPerCommit};
  //! Starts Admit on an idle admission worker or a new one, joining those that ended.
  //! REQUIRES: mu_ held.
  void StartAdmission(std::shared_ptr<const spec::Workload> w, store::WorkloadVersion v,
                      store::Run run, int owner_fd);

  // Loop-owned.
  std::map<std::string, std::unique_ptr<RunState>> runs_;
  std::map<std::string, std::pair<RunState*, int>> attempts_;  // live attempt -> (run, step)
  std::set<std::pair<int64_t, RunState*>> timers_;             // (NextWakeup, run), soonest first
  std::map<uint64_t, RunState*> waiting_;  // runs with unplaced ready steps, by seq
  int loud_waiting_ = 0;                   // of them, those not quiet_when_full
  std::multiset<int64_t> quiet_requests_;  // the others' min_cpu_request
  uint64_t next_run_seq_ = 0;
  int64_t next_progress_poll_ = 0;
  bool launches_capped_ = false;  // a run hit max_launches_per_run_per_turn: turn again now
  std::vector<std::string> ended_unadmitted_;  // rejected/cancelled in admission this turn
  //! The claims of the active runs whose output root is on an object store, by run id, and
  //! when the next of them is due for renewal.
  std::map<std::string, std::unique_ptr<ObjectClaim>> object_claims_;
  int64_t next_claim_renewal_ms_ = INT64_MAX;
  store::Batch* current_batch_ = nullptr;  // the turn being built (EmitEvent)

  // Notification.
  std::mutex ev_mu_;
  std::condition_variable ev_cv_;
  int64_t durable_seq_ = 0;                // GUARDED_BY(ev_mu_)
  std::map<int, Subscriber> subscribers_;  // GUARDED_BY(ev_mu_)
  int next_token_ = 1;                     // GUARDED_BY(ev_mu_)
  // Runs ended here, the newest kRememberFinished of them (Wait() reads the store for an
  // older one): memory does not grow with the history.
  static constexpr size_t kRememberFinished = 256;
  void RememberFinished(const std::string& run_id);  // REQUIRES: ev_mu_ held
  std::set<std::string> finished_;                   // GUARDED_BY(ev_mu_)
  std::deque<std::string> finished_order_;           // GUARDED_BY(ev_mu_): finished_, oldest first
  std::condition_variable finish_cv_;                // finished_ grew (Wait), with ev_mu_
  Stats stats_;                                      // GUARDED_BY(ev_mu_)

  std::unique_ptr<PostProcessSender> sender_;  // set in Start

  // Live usage samples of running attempts (backend thread writes, API readers read).
  std::mutex usage_mu_;
  std::map<std::string, backend::AttemptUsage> live_usage_;  // GUARDED_BY(usage_mu_)

  //! What the backend's callbacks reach. They are set once (Start) and never reassigned
  //! while backend threads may call them (a std::function written while another thread
  //! calls it is a data race); Stop detaches the engine here instead, so a call from a
  //! backend thread after Stop, or after this Impl is gone, reaches nothing.
  struct CallbackSink {
    std::mutex mu;
    Impl* impl = nullptr;  // GUARDED_BY(mu)
  };
  std::shared_ptr<CallbackSink> sink_ = std::make_shared<CallbackSink>();
};

}  // namespace rsl::engine
