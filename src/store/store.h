// Durable state of the platform: immutable workload versions, their runs, steps, attempts,
// events (append-only), artifacts, lineage edges, and per-namespace configmaps and secrets.
//
// The engine writes through Apply(): a Batch of changes applied in ONE transaction (group
// commit), durable when Apply returns OK. Everything else reads. The SQLite implementation
// (OpenSqliteStore) keeps its tables in <state-dir>/rsl.db under the migration component
// "store"; other components open their own connections to the same file.
//
// Threading: every method is thread-safe. Reads never block on a running Apply for long
// (WAL: readers see the last committed state).
//
// Times are milliseconds since the Unix epoch; 0 means "not yet".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "spec/phase.h"

namespace rsl {
class Db;  // base/sqlite.h
}  // namespace rsl

namespace rsl::store {

//! One immutable submission of a workload.
struct WorkloadVersion {
  std::string id;  //!< wl-YYYYMMDD-<8 hex>
  std::string name;
  std::string namespace_;
  std::string spec_json;  //!< canonical JSON (spec::CanonicalJson)
  std::string digest;     //!< "sha256:<64 hex>" of spec_json
  int64_t created_at = 0;
  std::string created_by;
  std::map<std::string, std::string> labels;
  int64_t version = 0;      //!< 1, 2, ... per (namespace, name), assigned by the store
  std::string rollback_of;  //!< the version id this one re-runs ("" if none)
};

//! Phases are spec::RunPhase / StepPhase / AttemptPhase (spec/phase.h); the store keeps
//! their names (spec::Name) in its rows and answers a row with an unknown name with an error.

//! Commit states of a run's outputs.
inline constexpr char kCommitNone[] = "";
inline constexpr char kCommitCommitting[] = "committing";  //!< decided; publishing may be half done
inline constexpr char kCommitCommitted[] = "committed";
inline constexpr char kCommitDiscarded[] = "discarded";

//! One run of one version (exactly one run per version).
struct Run {
  std::string id;  //!< run-YYYYMMDD-<8 hex> (the version id's suffix)
  std::string workload_id;
  std::string name;  //!< copied from the version, for listing
  std::string namespace_;
  spec::RunPhase phase = spec::RunPhase::kPending;
  std::string failure_code;  //!< stable code when phase is not SUCCEEDED
  std::string failure_message;
  int64_t created_at = 0;
  int64_t started_at = 0;
  int64_t finished_at = 0;
  std::string run_dir;                //!< <state-dir>/runs/<run id>
  std::string admission_report_json;  //!< JSON object: {check name: report}
  std::string commit_state;           //!< kCommit*
  std::string committed_uri;          //!< where outputs were published
  //! When retention collected the run's history (steps, attempts, events, run directory);
  //! 0 = not collected. Set only by Store::CollectRun.
  int64_t collected_at = 0;
};

//! One step of a run (its latest attempt's facts).
struct Step {
  std::string run_id;
  std::string name;
  //! Position in the pipeline. A step's rows are keyed by (run_id, index, name): every row
  //! of a step carries the same index (a row with another one is another row).
  int index = 0;
  spec::StepPhase phase = spec::StepPhase::kPending;
  int attempts = 0;        //!< attempts launched so far
  int retries_used = 0;    //!< attempts that counted against retryPolicy
  std::string attempt_id;  //!< the live (or last) attempt
  std::string node;
  int exit_code = -1;
  int signal = 0;
  int64_t wall_ms = 0;
  int64_t cpu_ms = 0;
  int64_t peak_memory_bytes = 0;
  int64_t peak_cpu_millicores = 0;  //!< the highest CPU rate between two usage samples
  int64_t started_at = 0;
  int64_t finished_at = 0;
  int64_t next_attempt_at = 0;  //!< RETRYING: when the next attempt may start
  std::string failure_code;
  std::string message;
  std::string metrics_json = "{}";
  std::string progress;  //!< "done/total" as the step last reported it
  //! A succeeded step of a non-atomic run: where its output is published. "" in an atomic
  //! run: its output is in its staging directory (StagingDir of its last attempt) until the
  //! run's commit, and the commit's artifact rows (kind "output") say where it went.
  std::string output_dir;
};

//! True while the step's attempt is alive: RUNNING, PENDING with a launched attempt and no
//! finish time (it waits in a scheduler's queue, e.g. Slurm's), or TIMED_OUT without a
//! finish time yet (its timeout fired and the attempt is being stopped: SIGKILL after the
//! grace period).
bool StepAttemptLive(const Step& step);

//! One attempt: what was launched (for recovery) and how it ended.
struct Attempt {
  std::string id;  //!< <run_id>/<step>/<n> (must begin with "<run_id>/")
  std::string run_id;
  std::string step;
  int number = 1;
  std::string launch_json;  //!< the backend::LaunchSpec (secrets masked out); written
                            //!< again empty (an exit), the stored one is kept
  spec::AttemptPhase state = spec::AttemptPhase::kLaunching;
  std::string exit_kind;  //!< backend::ExitKindName, when exited
  int64_t created_at = 0;
  int64_t finished_at = 0;
};

struct Event {
  int64_t seq = 0;  //!< global, increasing; assigned by the store
  std::string run_id;
  std::string step;             //!< "" for run-level events
  std::string type = "Normal";  //!< Normal | Warning
  std::string reason;           //!< Kubernetes-style: Scheduled, Started, ...
  std::string message;
  int64_t time = 0;
};

struct Artifact {
  std::string run_id;
  std::string step;
  std::string uri;
  int64_t bytes = 0;
  std::string kind = "output";  //!< output | model | ...
  std::string digest;           //!< optional "sha256:..."
};

//! A lineage edge: `from` was used to produce `to` (URIs, workload ids, artifact URIs).
struct LineageEdge {
  std::string run_id;
  std::string from;
  std::string to;
  std::string relation;   //!< input | output | produced-by | ...
  std::string from_json;  //!< optional DataDescriptor/ModelArtifact JSON of `from`
};

//! A configmap or secret: string data per key, per namespace.
struct ConfigMap {
  std::string namespace_;
  std::string name;
  bool secret = false;
  std::map<std::string, std::string> data;
  int64_t updated_at = 0;
};

//! Changes applied together in one transaction. Upserts replace the whole row by key
//! (run id; run id + step name; attempt id).
struct Batch {
  std::vector<WorkloadVersion> versions;  //!< inserted; `version` is assigned
  std::vector<Run> runs;
  std::vector<Step> steps;
  std::vector<Attempt> attempts;
  std::vector<Event> events;  //!< appended; seq assigned
  std::vector<Artifact> artifacts;
  std::vector<LineageEdge> lineage;
  //! Rows of other components of the same database, written in this batch's transaction
  //! after its own (on the SQLite store's connection, under its lock): an accepted
  //! submission's audit entry commits with it, or neither does (api/audit.h). A write that
  //! fails fails the whole batch.
  std::vector<std::function<Status(Db*)>> also;
  //! The rows are durable elsewhere already (the transition log's indexer writes records the
  //! log holds until a synced commit covers them): the SQLite store may commit this batch
  //! without an fsync (WAL synchronous=NORMAL for this one commit), unless writes of other
  //! components ride on it (SharedDb::WriteWithNextCommit), which are durable with it alone.
  //! A synced commit later makes it durable too, as does a checkpoint.
  bool defer_sync = false;
  bool empty() const {
    return versions.empty() && runs.empty() && steps.empty() && attempts.empty() &&
           events.empty() && artifacts.empty() && lineage.empty() && also.empty();
  }
};

//! Appends `from`'s changes after `to`'s (applied later within the one transaction: a row
//! written by both ends as `from` wrote it; events keep their order, `from`'s last).
void AppendBatch(Batch&& from, Batch* to);

struct RunFilter {
  std::string namespace_;  //!< "" = all
  std::string name;        //!< "" = all
  bool unfinished_only = false;
  int limit = 0;  //!< 0 = no limit; newest first
};

//! One page of runs for lists that page through many (the workloads list): newest first by
//! (created_at, workload_id), read by keyset on an index, so a page costs the same however
//! deep it is and however many runs there are.
struct RunPageQuery {
  std::string namespace_;  //!< "" = all
  std::string name;        //!< "" = all
  std::string phase;       //!< a RunPhase name; "" = all
  //! Only runs whose version has label `label_key` = `label_value` ("" key = any).
  std::string label_key, label_value;
  //! The cursor: only runs strictly older than (before_created_at, before_workload_id) in the
  //! order above; none when before_workload_id is "".
  int64_t before_created_at = 0;
  std::string before_workload_id;
  int limit = 0;  //!< 0 = no limit
};

//! A page of one run's steps, read by keyset on the steps' key (run id, pipeline index), so a
//! page costs the same at any depth and its cursor stays valid while steps change phase (a
//! step keeps its index for good).
struct StepPageQuery {
  std::string run_id;
  //! The cursor: only steps with index > after_index (-1: from the first step). With
  //! last_first, only steps with index < before_index instead (-1: from the last step).
  int after_index = -1;
  int before_index = -1;
  bool last_first = false;              //!< pipeline order reversed
  std::vector<spec::StepPhase> phases;  //!< only these phases; empty = every phase
  bool started_only = false;            //!< only steps with started_at > 0
  bool live_only = false;               //!< only steps whose attempt is live (StepAttemptLive)
  int limit = 0;                        //!< 0 = no limit
};

//! How many runs and how many steps are in each phase (by phase name; phases with none are
//! absent).
struct PhaseCounts {
  std::map<std::string, int64_t> runs;
  std::map<std::string, int64_t> steps;
};

class Store {
 public:
  virtual ~Store() = default;

  //! Applies the batch atomically and durably. On error nothing of it is applied and the
  //! batch is as it was. On success its events are numbered (seq) and its versions numbered;
  //! a store may have taken its other rows (runs, steps, attempts, artifacts, lineage: left
  //! empty), so a caller reads only versions and events of it afterwards.
  virtual Status Apply(Batch* batch) = 0;

  //! Errors: NOT_FOUND.
  virtual Result<WorkloadVersion> GetVersion(const std::string& id) = 0;
  //! Versions of one workload name in a namespace, oldest first.
  virtual Result<std::vector<WorkloadVersion>> ListVersions(const std::string& namespace_,
                                                            const std::string& name) = 0;
  //! Errors: NOT_FOUND. Accepts a run id or its version id.
  virtual Result<Run> GetRun(const std::string& id) = 0;
  virtual Result<std::vector<Run>> ListRuns(const RunFilter& filter) = 0;
  //! A page of runs (RunPageQuery). The default reads ListRuns and the versions' labels and
  //! filters in memory; SqliteStore reads only the page.
  virtual Result<std::vector<Run>> ListRunsPage(const RunPageQuery& query);
  //! How many runs match `query` (its cursor and limit ignored).
  virtual Result<int64_t> CountRuns(const RunPageQuery& query);
  //! Runs and steps per phase, counted where they are kept (what /metrics and the cluster
  //! status show): nothing of the runs is read into memory. The default reads every run's
  //! steps; SqliteStore counts by SQL.
  virtual Result<PhaseCounts> CountPhases();
  //! In pipeline order.
  virtual Result<std::vector<Step>> ListSteps(const std::string& run_id) = 0;
  virtual Result<std::vector<Attempt>> ListAttempts(const std::string& run_id) = 0;
  //! A page of one run's steps (StepPageQuery). The default filters ListSteps in memory;
  //! SqliteStore reads the page only.
  virtual Result<std::vector<Step>> ListStepsPage(const StepPageQuery& query);
  //! How many steps of one run are in each phase (by phase name; phases with none are absent),
  //! counted where they are kept. The default reads ListSteps.
  virtual Result<std::map<std::string, int64_t>> CountSteps(const std::string& run_id);
  //! How many events one run has. The default reads ListEvents.
  virtual Result<int64_t> CountEvents(const std::string& run_id);
  //! The last `limit` events of one run (0 = all), oldest first: what a summary shows of a
  //! long history. The default reads ListEvents.
  virtual Result<std::vector<Event>> ListLastEvents(const std::string& run_id, int limit);
  //! Events with seq > after_seq, oldest first; run_id "" = every run; limit 0 = all.
  virtual Result<std::vector<Event>> ListEvents(const std::string& run_id, int64_t after_seq,
                                                int limit = 0) = 0;
  virtual int64_t LastEventSeq() = 0;
  virtual Result<std::vector<Artifact>> ListArtifacts(const std::string& run_id) = 0;
  virtual Result<std::vector<LineageEdge>> ListLineage(const std::string& run_id) = 0;

  //! Retention (store/retention.h): forgets a finished run's history in one transaction:
  //! its steps, attempts and events go; the version, the run row (now with collected_at =
  //! `at`), its artifacts and lineage stay. Idempotent. The newest event of the whole store
  //! is kept whatever run it belongs to, so event sequence numbers are never reused.
  //! Errors: NOT_FOUND; CONFLICT when the run has not finished.
  virtual Status CollectRun(const std::string& run_id, int64_t at) = 0;

  //! Configmaps and secrets (kept apart from the run batches; one transaction each).
  virtual Status PutConfigMap(const ConfigMap& cm) = 0;
  //! Errors: NOT_FOUND (with a "did you mean" hint when a close name exists).
  virtual Result<ConfigMap> GetConfigMap(const std::string& namespace_, const std::string& name,
                                         bool secret) = 0;
  virtual Result<std::vector<ConfigMap>> ListConfigMaps(const std::string& namespace_,
                                                        bool secret) = 0;
  virtual Status DeleteConfigMap(const std::string& namespace_, const std::string& name,
                                 bool secret) = 0;
};

//! Forwards every call to `target` (which must outlive it): a subclass overrides what it
//! changes (a benchmark's store that drops rows, a test's store that fails on demand).
class StoreWrapper : public Store {
 public:
  explicit StoreWrapper(Store* target) : target_(target) {}
  Store* target() const { return target_; }

  Status Apply(Batch* batch) override { return target_->Apply(batch); }
  Result<WorkloadVersion> GetVersion(const std::string& id) override {
    return target_->GetVersion(id);
  }
  Result<std::vector<WorkloadVersion>> ListVersions(const std::string& namespace_,
                                                    const std::string& name) override {
    return target_->ListVersions(namespace_, name);
  }
  Result<Run> GetRun(const std::string& id) override { return target_->GetRun(id); }
  Result<std::vector<Run>> ListRuns(const RunFilter& filter) override {
    return target_->ListRuns(filter);
  }
  Result<std::vector<Run>> ListRunsPage(const RunPageQuery& query) override {
    return target_->ListRunsPage(query);
  }
  Result<int64_t> CountRuns(const RunPageQuery& query) override {
    return target_->CountRuns(query);
  }
  Result<std::vector<Step>> ListSteps(const std::string& run_id) override {
    return target_->ListSteps(run_id);
  }
  Result<std::vector<Attempt>> ListAttempts(const std::string& run_id) override {
    return target_->ListAttempts(run_id);
  }
  Result<std::vector<Step>> ListStepsPage(const StepPageQuery& query) override {
    return target_->ListStepsPage(query);
  }
  Result<std::map<std::string, int64_t>> CountSteps(const std::string& run_id) override {
    return target_->CountSteps(run_id);
  }
  Result<int64_t> CountEvents(const std::string& run_id) override {
    return target_->CountEvents(run_id);
  }
  Result<std::vector<Event>> ListLastEvents(const std::string& run_id, int limit) override {
    return target_->ListLastEvents(run_id, limit);
  }
  Result<std::vector<Event>> ListEvents(const std::string& run_id, int64_t after_seq,
                                        int limit = 0) override {
    return target_->ListEvents(run_id, after_seq, limit);
  }
  int64_t LastEventSeq() override { return target_->LastEventSeq(); }
  Result<std::vector<Artifact>> ListArtifacts(const std::string& run_id) override {
    return target_->ListArtifacts(run_id);
  }
  Result<std::vector<LineageEdge>> ListLineage(const std::string& run_id) override {
    return target_->ListLineage(run_id);
  }
  Status CollectRun(const std::string& run_id, int64_t at) override {
    return target_->CollectRun(run_id, at);
  }
  Status PutConfigMap(const ConfigMap& cm) override { return target_->PutConfigMap(cm); }
  Result<ConfigMap> GetConfigMap(const std::string& namespace_, const std::string& name,
                                 bool secret) override {
    return target_->GetConfigMap(namespace_, name, secret);
  }
  Result<std::vector<ConfigMap>> ListConfigMaps(const std::string& namespace_,
                                                bool secret) override {
    return target_->ListConfigMaps(namespace_, secret);
  }
  Status DeleteConfigMap(const std::string& namespace_, const std::string& name,
                         bool secret) override {
    return target_->DeleteConfigMap(namespace_, name, secret);
  }

 private:
  Store* target_;
};

struct StoreOptions {
  //! true: fsync on every commit (survives power loss). false: WAL synchronous=NORMAL
  //! (survives any process crash, may lose the last commits on power loss).
  bool sync_full = true;
  //! true: the engine's transitions are made durable by appending them to a transition log
  //! (<state-dir>/translog/, one record and one fdatasync per Apply) and written into
  //! SQLite's tables by a thread of their own; reads wait until the tables hold everything
  //! acknowledged before them (docs/architecture.md, "The transition log"). The process then
  //! owns the store: it takes <state-dir>/store.lock exclusively, and another process's
  //! Apply on the same state directory fails with CONFLICT until it closes the store.
  //! Submissions (batches with versions or `also` writes) are written to SQLite directly, in
  //! order with the log's records. false: every Apply is a SQLite transaction.
  bool transition_log = false;
  //! With transition_log: a new log segment once the current one is past this many bytes
  //! (0: 32 MiB). Small ones are for tests of when segments go.
  uint64_t log_segment_bytes = 0;
  //! The SQLite writer checkpoints the WAL itself, right after its commit, once the WAL holds
  //! this many pages (SQLite's wal_autocheckpoint); the store's checkpoint thread does it
  //! passively meanwhile. 0: 1,000 (10,000 for the tables behind a transition log).
  int wal_autocheckpoint_pages = 0;
};

//! Opens (creating and migrating) the store in <state_dir>/rsl.db; with
//! options.transition_log, applies what the log holds first. Errors: CONFLICT (another
//! process owns the store), IO_ERROR (a damaged log record that is not its last).
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& state_dir,
                                               const StoreOptions& options = {});

//! A new version id for `now_ms`: wl-YYYYMMDD-<8 hex>, the hex being the second of the UTC
//! day (the high 17 bits) and a sequence within it (the low kVersionIdSequenceBits, from
//! an offset the process draws once, below 2^14). A process's ids only grow
//! (NextVersionIdValue), so it never draws one twice, and they follow the clock: more than
//! its share of one second borrow the next second's, and a clock set back keeps them
//! growing. An id another process drew in the same second can come again: the engine draws
//! anew while the store has it, and when the store refuses it at the commit (CONFLICT with
//! the id as its value, Engine::Submit). The run id is RunIdFor(id).
std::string NewVersionId(int64_t now_ms);
inline constexpr int kVersionIdSequenceBits = 15;
inline constexpr uint32_t kVersionIdOffsetMask = (1u << (kVersionIdSequenceBits - 1)) - 1;
//! The value of the id after `last` (the day since 1970 in the high 32 bits, then the hex
//! of the id): the larger of last + 1 and the first of now_ms's second (its sequence
//! starting at offset & kVersionIdOffsetMask).
uint64_t NextVersionIdValue(uint64_t last, int64_t now_ms, uint32_t offset = 0);
//! wl-<the day's date>-<the low 32 bits in hex>.
std::string VersionIdOf(uint64_t value);
std::string RunIdFor(const std::string& version_id);

}  // namespace rsl::store
