// The SQLite (WAL) implementation of Store. The writer is the process's shared connection to
// rsl.db (base/sqlite.h SharedDb, behind its mutex); the reader is a connection of its own,
// behind its own mutex, so readers (the controller's HTTP threads) see the last committed
// state while the engine writes the next batch. The schema is in sqlite_schema.cc.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/file.h"
#include "base/secret_box.h"
#include "base/sqlite.h"
#include "base/strings.h"
#include "store/log_store.h"
#include "store/sqlite_rows.h"
#include "store/sqlite_schema.h"
#include "store/store.h"

namespace rsl::store {

const std::vector<std::string>& StoreMigrationsForTest() { return SqliteStoreMigrations(); }

namespace {

using nlohmann::json;

// What a secret's sealed data is bound to (the context ResealColumn computes in SQL).
std::string SecretContext(const std::string& ns, const std::string& name) {
  return "secret:" + ns + "/" + name;
}

class SqliteStore : public Store {
 public:
  SqliteStore(std::shared_ptr<SharedDb> shared, std::unique_ptr<Db> reader,
              std::unique_ptr<Db> checkpointer, std::shared_ptr<const SecretBox> box,
              std::unique_ptr<SharedStoreLock> owner_lock, bool sync_full)
      : owner_lock_(std::move(owner_lock)),
        shared_(std::move(shared)),
        write_mu_(shared_->mu()),
        writer_(shared_->db()),
        checkpointer_(std::move(checkpointer)),
        reader_(std::move(reader)),
        box_(std::move(box)),
        sync_full_(sync_full) {}

  Status Init() {
    std::lock_guard<std::mutex> lock(write_mu_);
    auto prep = [&](const std::string& sql, std::optional<Stmt>* out) -> Status {
      auto st = writer_->Prepare(sql);
      if (!st.ok()) return st.status();
      out->emplace(std::move(*st));
      return Status::Ok();
    };
    // Upserts, not INSERT OR REPLACE: a row changes in place (REPLACE deletes and re-inserts
    // it, maintaining every index twice); this is the hot path of every transition.
    RSL_RETURN_IF_ERROR(prep(std::string("INSERT INTO store_runs (") + kRunCols +
                                 ") VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15) "
                                 "ON CONFLICT(id) DO UPDATE SET phase=excluded.phase, "
                                 "failure_code=excluded.failure_code, "
                                 "failure_message=excluded.failure_message, "
                                 "started_at=excluded.started_at, "
                                 "finished_at=excluded.finished_at, run_dir=excluded.run_dir, "
                                 "admission_report_json=excluded.admission_report_json, "
                                 "commit_state=excluded.commit_state, "
                                 "committed_uri=excluded.committed_uri",
                             &put_run_));
    steps_.head = std::string("INSERT INTO store_steps (") + kStepCols + ") VALUES ";
    steps_.cols = 22;
    steps_.tail =
        // The primary key: every writer gives a step its pipeline index (migration 8).
        " ON CONFLICT(run_id, idx, name) DO UPDATE SET phase=excluded.phase, "
        "attempts=excluded.attempts, retries_used=excluded.retries_used, "
        "attempt_id=excluded.attempt_id, node=excluded.node, exit_code=excluded.exit_code, "
        "signal=excluded.signal, wall_ms=excluded.wall_ms, cpu_ms=excluded.cpu_ms, "
        "peak_memory_bytes=excluded.peak_memory_bytes, started_at=excluded.started_at, "
        "finished_at=excluded.finished_at, next_attempt_at=excluded.next_attempt_at, "
        "failure_code=excluded.failure_code, message=excluded.message, "
        "metrics_json=excluded.metrics_json, progress=excluded.progress, "
        "output_dir=excluded.output_dir, peak_cpu_millicores=excluded.peak_cpu_millicores";
    attempts_.head =
        "INSERT INTO store_attempts (id, run_id, step, number, state, exit_kind, created_at, "
        "finished_at) VALUES ";
    attempts_.cols = 8;
    attempts_.tail =
        " ON CONFLICT(id) DO UPDATE SET state=excluded.state, exit_kind=excluded.exit_kind, "
        "created_at=excluded.created_at, finished_at=excluded.finished_at";
    // Only attempts written with a launch record: one written again with an empty one (its
    // exit) keeps the stored record.
    launches_.head = "INSERT INTO store_launches (attempt_id, launch_json) VALUES ";
    launches_.cols = 2;
    launches_.tail = " ON CONFLICT(attempt_id) DO UPDATE SET launch_json=excluded.launch_json";
    events_.head = "INSERT INTO store_events (run_id, step, type, reason, message, time) VALUES ";
    events_.cols = 6;
    // Events whose seq the transition log assigned (store/log_store.cc).
    events_seq_.head =
        "INSERT INTO store_events (seq, run_id, step, type, reason, message, time) VALUES ";
    events_seq_.cols = 7;
    // A run's commit writes an artifact and a lineage edge per step.
    artifacts_.head =
        "INSERT OR REPLACE INTO store_artifacts (run_id, step, uri, bytes, kind, digest) VALUES ";
    artifacts_.cols = 6;
    lineage_.head =
        "INSERT OR REPLACE INTO store_lineage (run_id, from_ref, to_ref, relation, from_json) "
        "VALUES ";
    lineage_.cols = 5;
    for (RowsWriter* w :
         {&steps_, &attempts_, &launches_, &events_, &events_seq_, &artifacts_, &lineage_}) {
      w->db = writer_;
    }
    if (checkpointer_) checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
    // Writes queued on the shared connection (the step costs) ride on Apply's commits.
    RSL_RETURN_IF_ERROR(shared_->SetCommitter(true));
    committer_ = true;
    return Status::Ok();
  }

  ~SqliteStore() override {
    {
      std::lock_guard<std::mutex> lock(ckpt_mu_);
      closing_ = true;
    }
    ckpt_cv_.notify_all();
    if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
    // The writer's statements go back to the shared connection under its mutex (another
    // component may be writing through it). Then the members go in reverse order; the
    // shared connection closes with its last holder (checkpointing the rest).
    std::lock_guard<std::mutex> lock(write_mu_);
    if (committer_) {
      Status s = shared_->SetCommitter(false);  // commits the writes queued for Apply
      if (!s.ok()) fprintf(stderr, "rsl store: queued writes: %s\n", s.ToString().c_str());
    }
    put_run_.reset();
    for (RowsWriter* w :
         {&steps_, &attempts_, &launches_, &events_, &events_seq_, &artifacts_, &lineage_}) {
      w->one.reset();
      w->many.reset();
    }
  }

  Status Apply(Batch* b) override {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (broken_sync_) {
      return Error(codes::kIoError, "the store cannot make its commits durable")
          .Hint("restart the process");
    }
    // While a process writes this store through its transition log, it alone may write runs
    // and events (it numbers the events itself); another process's writes wait for it to go.
    if (owner_lock_) RSL_RETURN_IF_ERROR(owner_lock_->Take());
    // A batch durable elsewhere commits without an fsync (Batch::defer_sync): the flag is the
    // connection's (and cannot change inside a transaction), set back before another writer
    // of it can take the lock. Writes queued for the next commit (the step costs of this very
    // turn) are durable with it alone: a commit that runs them is synced; one that is not
    // leaves what was queued meanwhile to the next.
    const bool defer = b->defer_sync && sync_full_ && !shared_->HasQueuedWrites();
    Status s = defer ? writer_->Exec("PRAGMA synchronous=NORMAL") : Status::Ok();
    if (s.ok()) {
      s = writer_->Transaction([&] {
        if (!defer) shared_->RunQueuedWrites();
        return ApplyLocked(b);
      });
    }
    if (defer) {
      Status back = writer_->Exec("PRAGMA synchronous=FULL");
      if (!back.ok()) {
        // Every later commit of the connection would go unsynced: this store stops writing.
        fprintf(stderr, "rsl store: cannot set synchronous=FULL again: %s\n",
                back.ToString().c_str());
        broken_sync_ = true;
        if (s.ok()) s = back;
      }
    }
    if (owner_lock_) owner_lock_->Release();
    if (!s.ok()) return s;
    if (checkpointer_) {
      {
        std::lock_guard<std::mutex> l(ckpt_mu_);
        ckpt_wanted_ = true;
      }
      ckpt_cv_.notify_one();
    }
    if (!b->events.empty()) {
      std::lock_guard<std::mutex> l(seq_mu_);
      last_seq_ = b->events.back().seq;
    }
    return s;
  }

  Result<WorkloadVersion> GetVersion(const std::string& id) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    auto v =
        reader_->First(std::string("SELECT ") + kVersionCols + " FROM store_versions WHERE id=?1",
                       ReadVersion, id);
    return FoundOr(std::move(v), [&] {
      return Error(codes::kNotFound, "workload version " + Quote(id) + " not found")
          .Value(id)
          .Hint("list versions with `seedctl workload list`");
    });
  }

  Result<std::vector<WorkloadVersion>> ListVersions(const std::string& ns,
                                                    const std::string& name) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    return reader_->Rows(std::string("SELECT ") + kVersionCols +
                             " FROM store_versions WHERE namespace=?1 AND name=?2 "
                             "ORDER BY version",
                         ReadVersion, ns, name);
  }

  Result<Run> GetRun(const std::string& id) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    auto run = reader_->First(
        std::string("SELECT ") + kRunCols + " FROM store_runs WHERE id=?1 OR workload_id=?1",
        ReadRun, id);
    return FoundOr(std::move(run), [&] {
      return Error(codes::kNotFound, "workload " + Quote(id) + " not found")
          .Value(id)
          .Hint("ids look like wl-20240615-7a8b9c0d; list them with `seedctl workload list`");
    });
  }

  Result<std::vector<Run>> ListRuns(const RunFilter& f) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    std::string sql = std::string("SELECT ") + kRunCols +
                      " FROM store_runs WHERE (?1='' OR namespace=?1) AND (?2='' OR name=?2)";
    if (f.unfinished_only) {
      sql += " AND (phase IN ('PENDING','RUNNING') OR commit_state='committing')";
    }
    sql += " ORDER BY created_at DESC, id DESC";
    if (f.limit > 0) sql += " LIMIT " + std::to_string(f.limit);
    return reader_->Rows(sql, ReadRun, f.namespace_, f.name);
  }

  Result<std::vector<Run>> ListRunsPage(const RunPageQuery& q) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    auto st = PageQuery(q, /*count=*/false);
    if (!st.ok()) return st.error();
    return st->Rows(ReadRun);
  }

  Result<int64_t> CountRuns(const RunPageQuery& q) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    auto st = PageQuery(q, /*count=*/true);
    if (!st.ok()) return st.error();
    auto n = st->First([](const Stmt& row) {
      int64_t v = 0;
      row.Into(&v);
      return v;
    });
    if (!n.ok()) return n.error();
    return n->value_or(0);
  }

  Result<PhaseCounts> CountPhases() override {
    std::lock_guard<std::mutex> lock(read_mu_);
    PhaseCounts out;
    auto count = [&](const char* sql, std::map<std::string, int64_t>* into) -> Status {
      auto st = reader_->Prepare(sql);
      if (!st.ok()) return st.error();
      return st->Each([&](const Stmt& row) { (*into)[row.Text(0)] = row.Int(1); });
    };
    // The runs by their phase index; the steps by one pass over their table.
    RSL_RETURN_IF_ERROR(count("SELECT phase, COUNT(*) FROM store_runs GROUP BY phase", &out.runs));
    RSL_RETURN_IF_ERROR(
        count("SELECT phase, COUNT(*) FROM store_steps GROUP BY phase", &out.steps));
    return out;
  }

  Result<std::vector<Step>> ListSteps(const std::string& run_id) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    return reader_->Rows(
        std::string("SELECT ") + kStepCols + " FROM store_steps WHERE run_id=?1 ORDER BY idx",
        ReadStep, run_id);
  }

  Result<std::vector<Step>> ListStepsPage(const StepPageQuery& q) override {
    // The steps' key is (run_id, idx, name): every condition is on one run's key range, read
    // in key order (or backwards) until LIMIT. Phases are the platform's own names.
    std::string sql = std::string("SELECT ") + kStepCols + " FROM store_steps WHERE run_id=?1";
    int bound = q.last_first ? q.before_index : q.after_index;
    if (bound >= 0) sql += q.last_first ? " AND idx < ?2" : " AND idx > ?2";
    if (!q.phases.empty()) {
      sql += " AND phase IN (";
      for (size_t i = 0; i < q.phases.size(); ++i) {
        sql += std::string(i ? "," : "") + "'" + spec::Name(q.phases[i]) + "'";
      }
      sql += ")";
    }
    if (q.started_only) sql += " AND started_at > 0";
    if (q.live_only) {  // StepAttemptLive
      sql +=
          " AND (phase='RUNNING' OR (phase IN ('PENDING','TIMED_OUT') AND attempts > 0 AND "
          "attempt_id != '' AND finished_at = 0))";
    }
    sql += q.last_first ? " ORDER BY idx DESC" : " ORDER BY idx";
    if (q.limit > 0) sql += " LIMIT " + std::to_string(q.limit);
    std::lock_guard<std::mutex> lock(read_mu_);
    if (bound >= 0) return reader_->Rows(sql, ReadStep, q.run_id, int64_t{bound});
    return reader_->Rows(sql, ReadStep, q.run_id);
  }

  Result<std::map<std::string, int64_t>> CountSteps(const std::string& run_id) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    std::map<std::string, int64_t> out;
    auto st =
        reader_->Prepare("SELECT phase, COUNT(*) FROM store_steps WHERE run_id=?1 GROUP BY phase");
    if (!st.ok()) return st.error();
    st->BindRef(1, run_id);
    RSL_RETURN_IF_ERROR(st->Each([&](const Stmt& row) { out[row.Text(0)] = row.Int(1); }));
    return out;
  }

  Result<int64_t> CountEvents(const std::string& run_id) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    auto n = reader_->First(
        "SELECT COUNT(*) FROM store_events WHERE run_id=?1",
        [](const Stmt& row) { return row.Int(0); }, run_id);
    if (!n.ok()) return n.error();
    return n->value_or(0);
  }

  Result<std::vector<Event>> ListLastEvents(const std::string& run_id, int limit) override {
    // Backwards on the (run_id, seq) index, stopping at LIMIT.
    std::string sql =
        "SELECT seq, run_id, step, type, reason, message, time FROM store_events "
        "WHERE run_id=?1 ORDER BY seq DESC";
    if (limit > 0) sql += " LIMIT " + std::to_string(limit);
    std::lock_guard<std::mutex> lock(read_mu_);
    auto events = reader_->Rows(sql, ReadEvent, run_id);
    if (!events.ok()) return events.error();
    std::reverse(events->begin(), events->end());
    return events;
  }

  Result<std::vector<Attempt>> ListAttempts(const std::string& run_id) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    return reader_->Rows(
        "SELECT a.id, a.run_id, a.step, a.number, a.state, a.exit_kind, a.created_at, "
        "a.finished_at, COALESCE(l.launch_json, '') FROM store_attempts a "
        "LEFT JOIN store_launches l ON l.attempt_id = a.id "
        "WHERE a.id > ?1 || '/' AND a.id < ?1 || '0' AND a.run_id=?1 "
        "ORDER BY a.created_at, a.id",
        ReadAttempt, run_id);
  }

  Result<std::vector<Event>> ListEvents(const std::string& run_id, int64_t after_seq,
                                        int limit) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    std::string sql =
        "SELECT seq, run_id, step, type, reason, message, time FROM store_events "
        "WHERE seq > ?1 AND (?2='' OR run_id=?2) ORDER BY seq";
    if (limit > 0) sql += " LIMIT " + std::to_string(limit);
    return reader_->Rows(sql, ReadEvent, after_seq, run_id);
  }

  int64_t LastEventSeq() override {
    {
      std::lock_guard<std::mutex> l(seq_mu_);
      if (last_seq_ >= 0) return last_seq_;
    }
    std::lock_guard<std::mutex> lock(read_mu_);
    auto q = reader_->Prepare("SELECT COALESCE(MAX(seq), 0) FROM store_events");
    int64_t seq = 0;
    if (q.ok() && q->Step()) seq = q->Int(0);
    std::lock_guard<std::mutex> l(seq_mu_);
    if (last_seq_ < seq) last_seq_ = seq;
    return last_seq_;
  }

  Result<std::vector<Artifact>> ListArtifacts(const std::string& run_id) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    return reader_->Rows(
        "SELECT run_id, step, uri, bytes, kind, digest FROM store_artifacts WHERE run_id=?1 "
        "ORDER BY step, uri",
        ReadArtifact, run_id);
  }

  Result<std::vector<LineageEdge>> ListLineage(const std::string& run_id) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    return reader_->Rows(
        "SELECT run_id, from_ref, to_ref, relation, from_json FROM store_lineage "
        "WHERE (?1='' OR run_id=?1) ORDER BY rowid",
        ReadLineageEdge, run_id);
  }

  Status CollectRun(const std::string& run_id, int64_t at) override {
    Result<Run> run = GetRun(run_id);
    if (!run.ok()) return run.error();
    if (!spec::IsTerminal(run->phase) || run->commit_state == kCommitCommitting) {
      return Error(codes::kConflict,
                   "run " + Quote(run->id) + " has not finished (" + spec::Name(run->phase) + ")")
          .Value(run->id)
          .Hint("retention collects finished runs only");
    }
    const std::string id = run->id;
    std::lock_guard<std::mutex> lock(write_mu_);
    return writer_->Transaction([&]() -> Status {
      RSL_RETURN_IF_ERROR(writer_->Run("DELETE FROM store_steps WHERE run_id=?1", id));
      RSL_RETURN_IF_ERROR(
          writer_->Run("DELETE FROM store_attempts WHERE id > ?1 || '/' AND id < ?1 || '0'", id));
      RSL_RETURN_IF_ERROR(writer_->Run(
          "DELETE FROM store_launches WHERE attempt_id > ?1 || '/' AND attempt_id < ?1 || '0'",
          id));
      // The store's newest event stays: seq is MAX(seq)+1 (no AUTOINCREMENT), and a watcher
      // resuming after it must never see a number used twice.
      RSL_RETURN_IF_ERROR(writer_->Run(
          "DELETE FROM store_events WHERE run_id=?1 AND seq < (SELECT MAX(seq) FROM store_events)",
          id));
      return writer_->Run("UPDATE store_runs SET collected_at=?2 WHERE id=?1 AND collected_at=0",
                          id, at);
    });
  }

  Status PutConfigMap(const ConfigMap& cm) override {
    std::string data = MapToJson(cm.data);
    if (cm.secret) data = box_->Seal(data, SecretContext(cm.namespace_, cm.name));
    std::lock_guard<std::mutex> lock(write_mu_);
    return writer_->Run(
        "INSERT OR REPLACE INTO store_configmaps (namespace, name, secret, data_json, "
        "updated_at) VALUES (?1,?2,?3,?4,?5)",
        cm.namespace_, cm.name, cm.secret, data, cm.updated_at);
  }

  // A row's data: a secret's is sealed (a row from before sealing, not yet migrated, is not).
  Result<ConfigMap> ReadConfigMap(const std::string& ns, const std::string& name, bool secret,
                                  const std::string& stored, int64_t updated_at) const {
    std::string data = stored;
    if (secret && SecretBox::IsSealed(stored)) {
      auto opened = box_->Open(stored, SecretContext(ns, name));
      if (!opened.ok()) return opened.error();
      data = std::move(*opened);
    }
    return ConfigMap{ns, name, secret, MapFromJson(data), updated_at};
  }

  Result<ConfigMap> GetConfigMap(const std::string& ns, const std::string& name,
                                 bool secret) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    auto found = reader_->First(
        "SELECT data_json, updated_at FROM store_configmaps WHERE namespace=?1 AND name=?2 "
        "AND secret=?3",
        [&](const Stmt& row) { return ReadConfigMap(ns, name, secret, row.Text(0), row.Int(1)); },
        ns, name, secret);
    if (!found.ok()) return found.error();
    if (found->has_value()) return std::move(**found);
    // Not found: suggest a close name in the same namespace.
    auto all = reader_->Rows("SELECT name FROM store_configmaps WHERE namespace=?1 AND secret=?2",
                             ReadText0, ns, secret);
    std::vector<std::string> names = all.ok() ? std::move(*all) : std::vector<std::string>();
    const char* what = secret ? "secret" : "configmap";
    return Error(codes::kNotFound,
                 std::string(what) + " " + Quote(name) + " not found in namespace " + Quote(ns))
        .Value(name)
        .Hint(ClosestHint(name, names,
                          std::string("create it with `seedctl ") + what + " create " + name +
                              " -n " + ns + " --from-literal KEY=VALUE`"));
  }

  Result<std::vector<ConfigMap>> ListConfigMaps(const std::string& ns, bool secret) override {
    std::lock_guard<std::mutex> lock(read_mu_);
    return reader_->Rows(
        "SELECT namespace, name, data_json, updated_at FROM store_configmaps WHERE "
        "(?1='' OR namespace=?1) AND secret=?2 ORDER BY namespace, name",
        [&](const Stmt& row) {
          return ReadConfigMap(row.Text(0), row.Text(1), secret, row.Text(2), row.Int(3));
        },
        ns, secret);
  }

  Status DeleteConfigMap(const std::string& ns, const std::string& name, bool secret) override {
    std::lock_guard<std::mutex> lock(write_mu_);
    RSL_RETURN_IF_ERROR(
        writer_->Run("DELETE FROM store_configmaps WHERE namespace=?1 AND name=?2 AND secret=?3",
                     ns, name, secret));
    if (writer_->Changes() == 0) {
      return Error(codes::kNotFound, std::string(secret ? "secret " : "configmap ") + Quote(name) +
                                         " not found in namespace " + Quote(ns))
          .Value(name);
    }
    return Status::Ok();
  }

 private:
  // REQUIRES: write_mu_ held, inside a transaction.
  Status ApplyLocked(Batch* b) {
    for (auto& v : b->versions) {
      // Inside the write transaction: no other process can take the id before the insert.
      auto taken = writer_->First(
          "SELECT 1 FROM store_versions WHERE id=?1", [](const Stmt& row) { return row.Int(0); },
          v.id);
      if (!taken.ok()) return taken.error();
      if (taken->has_value()) {
        return Error(codes::kConflict, "workload id " + v.id + " is taken")
            .Value(v.id)
            .Hint("another process drew it in the same second: submit again");
      }
      auto next = writer_->First(
          "SELECT COALESCE(MAX(version), 0) + 1 FROM store_versions WHERE namespace=?1 AND "
          "name=?2",
          [](const Stmt& row) { return row.Int(0); }, v.namespace_, v.name);
      if (!next.ok()) return next.error();
      if (!next->has_value()) return Error(codes::kInternal, "no version");
      v.version = **next;
      RSL_RETURN_IF_ERROR(writer_->Run(std::string("INSERT INTO store_versions (") + kVersionCols +
                                           ") VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
                                       v.id, v.name, v.namespace_, v.spec_json, v.digest,
                                       v.created_at, v.created_by, MapToJson(v.labels), v.version,
                                       v.rollback_of));
    }
    for (const Run& r : b->runs) {
      Stmt& q = *put_run_;
      q.BindRef(1, r.id).BindRef(2, r.workload_id).BindRef(3, r.name).BindRef(4, r.namespace_);
      q.Bind(5, spec::Name(r.phase)).BindRef(6, r.failure_code).BindRef(7, r.failure_message);
      q.Bind(8, r.created_at).Bind(9, r.started_at).Bind(10, r.finished_at).BindRef(11, r.run_dir);
      q.BindRef(12, r.admission_report_json)
          .BindRef(13, r.commit_state)
          .BindRef(14, r.committed_uri)
          .Bind(15, r.collected_at);
      RSL_RETURN_IF_ERROR(q.Run());
    }
    RSL_RETURN_IF_ERROR(steps_.Write(b->steps, [](Stmt& q, int o, const Step& s) {
      q.BindRef(o + 1, s.run_id).BindRef(o + 2, s.name).Bind(o + 3, int64_t{s.index});
      q.Bind(o + 4, spec::Name(s.phase)).Bind(o + 5, int64_t{s.attempts});
      q.Bind(o + 6, int64_t{s.retries_used}).BindRef(o + 7, s.attempt_id);
      q.BindRef(o + 8, s.node).Bind(o + 9, int64_t{s.exit_code}).Bind(o + 10, int64_t{s.signal});
      q.Bind(o + 11, s.wall_ms).Bind(o + 12, s.cpu_ms).Bind(o + 13, s.peak_memory_bytes);
      q.Bind(o + 14, s.started_at).Bind(o + 15, s.finished_at).Bind(o + 16, s.next_attempt_at);
      q.BindRef(o + 17, s.failure_code).BindRef(o + 18, s.message);
      q.BindRef(o + 19, s.metrics_json).BindRef(o + 20, s.progress);
      q.BindRef(o + 21, s.output_dir).Bind(o + 22, s.peak_cpu_millicores);
    }));
    RSL_RETURN_IF_ERROR(attempts_.Write(b->attempts, [](Stmt& q, int o, const Attempt& a) {
      q.BindRef(o + 1, a.id).BindRef(o + 2, a.run_id).BindRef(o + 3, a.step);
      q.Bind(o + 4, int64_t{a.number}).Bind(o + 5, spec::Name(a.state));
      q.BindRef(o + 6, a.exit_kind).Bind(o + 7, a.created_at).Bind(o + 8, a.finished_at);
    }));
    std::vector<const Attempt*> launched;
    for (const Attempt& a : b->attempts) {
      if (!a.launch_json.empty()) launched.push_back(&a);
    }
    RSL_RETURN_IF_ERROR(launches_.Write(launched, [](Stmt& q, int o, const Attempt* a) {
      q.BindRef(o + 1, a->id).BindRef(o + 2, a->launch_json);
    }));
    // A statement's rows get consecutive seqs (INTEGER PRIMARY KEY: max + 1 each, and this
    // transaction is the only writer), so the last insert id gives them all.
    static const std::vector<Event> kNone;
    // Only the transition log's store (which owns the store) numbers events itself.
    bool numbered = !owner_lock_ && !b->events.empty() && b->events.front().seq > 0;
    if (numbered) {
      RSL_RETURN_IF_ERROR(events_seq_.Write(b->events, [](Stmt& q, int o, const Event& e) {
        q.Bind(o + 1, e.seq).BindRef(o + 2, e.run_id).BindRef(o + 3, e.step);
        q.BindRef(o + 4, e.type).BindRef(o + 5, e.reason).BindRef(o + 6, e.message);
        q.Bind(o + 7, e.time);
      }));
    }
    RSL_RETURN_IF_ERROR(events_.Write(
        numbered ? kNone : b->events,
        [](Stmt& q, int o, const Event& e) {
          q.BindRef(o + 1, e.run_id).BindRef(o + 2, e.step).BindRef(o + 3, e.type);
          q.BindRef(o + 4, e.reason).BindRef(o + 5, e.message).Bind(o + 6, e.time);
        },
        [&](size_t first, size_t n) {
          int64_t last = writer_->LastInsertId();
          for (size_t k = 0; k < n; ++k) b->events[first + k].seq = last - int64_t(n - 1 - k);
        }));
    // INSERT OR REPLACE: a key repeated within one statement ends as its last row, as it
    // would one statement per row.
    RSL_RETURN_IF_ERROR(artifacts_.Write(b->artifacts, [](Stmt& q, int o, const Artifact& a) {
      q.BindRef(o + 1, a.run_id).BindRef(o + 2, a.step).BindRef(o + 3, a.uri);
      q.Bind(o + 4, a.bytes).BindRef(o + 5, a.kind).BindRef(o + 6, a.digest);
    }));
    RSL_RETURN_IF_ERROR(lineage_.Write(b->lineage, [](Stmt& q, int o, const LineageEdge& e) {
      q.BindRef(o + 1, e.run_id).BindRef(o + 2, e.from).BindRef(o + 3, e.to);
      q.BindRef(o + 4, e.relation).BindRef(o + 5, e.from_json);
    }));
    for (const auto& write : b->also) RSL_RETURN_IF_ERROR(write(writer_));
    return Status::Ok();
  }

  // Checkpoints the WAL into the database on its own connection and thread, so that most of
  // the copying is done off the engine's loop. PASSIVE: never waits for readers or the
  // writer; at most one per kCheckpointEveryMs. It cannot finish while commits keep coming,
  // so the writer checkpoints too (wal_autocheckpoint, see OpenSqliteStore).
  void CheckpointLoop() {
    std::unique_lock<std::mutex> lock(ckpt_mu_);
    while (true) {
      ckpt_cv_.wait(lock, [&] { return ckpt_wanted_ || closing_; });
      if (closing_) return;
      ckpt_wanted_ = false;
      lock.unlock();
      Status s = checkpointer_->Exec("PRAGMA wal_checkpoint(PASSIVE)");
      if (!s.ok()) fprintf(stderr, "rsl store: checkpoint: %s\n", s.ToString().c_str());
      lock.lock();
      ckpt_cv_.wait_for(lock, std::chrono::milliseconds(kCheckpointEveryMs),
                        [&] { return closing_; });
    }
  }

  static constexpr int64_t kCheckpointEveryMs = 200;

  // <state-dir>/store.lock, held shared for each Apply of a store without a transition log
  // (GUARDED_BY(write_mu_)); the store with one holds it exclusively (OpenLogStore).
  // null = this store is the log's.
  std::unique_ptr<SharedStoreLock> owner_lock_;

  // The writer is the process's shared connection (base/sqlite.h SharedDb): the audit log
  // and the step costs write through it too, under the same mutex, so that their writes do
  // not empty its page cache.
  std::shared_ptr<SharedDb> shared_;
  bool committer_ = false;    // registered with shared_ (Init)
  bool broken_sync_ = false;  // GUARDED_BY(write_mu_): FULL could not be set back
  std::mutex& write_mu_;
  Db* writer_;  // GUARDED_BY(write_mu_)
  // Rows of the tables every transition writes go in multi-row statements: a statement's
  // fixed cost (a third of a one-row upsert) is paid once per kRowsPerStatement rows.
  static constexpr int kRowsPerStatement = 32;
  struct RowsWriter {
    std::string head, tail;  // "INSERT ... VALUES ", " ON CONFLICT ..."
    int cols = 0;
    Db* db = nullptr;
    std::optional<Stmt> one, many;  // prepared at first use: opening a store stays cheap
    std::string Sql(int rows) const {
      std::string sql = head;
      for (int r = 0; r < rows; ++r) {
        sql += r ? ",(" : "(";
        for (int c = 1; c <= cols; ++c) {
          if (c > 1) sql += ',';
          sql += '?' + std::to_string(r * cols + c);
        }
        sql += ')';
      }
      return sql + tail;
    }
    //! bind(stmt, param offset, row); after(first row, rows) once each statement ran.
    template <class T, class Bind, class After = void (*)(size_t, size_t)>
    Status Write(
        const std::vector<T>& rows, Bind bind, After after = [](size_t, size_t) {}) {
      size_t i = 0;
      while (i < rows.size()) {
        bool batch = rows.size() - i >= size_t(kRowsPerStatement);
        size_t n = batch ? size_t(kRowsPerStatement) : 1;
        std::optional<Stmt>& st = batch ? many : one;
        if (!st) {
          auto prepared = db->Prepare(Sql(int(n)));
          if (!prepared.ok()) return prepared.status();
          st.emplace(std::move(*prepared));
        }
        Stmt& q = *st;
        for (size_t k = 0; k < n; ++k) bind(q, int(k) * cols, rows[i + k]);
        RSL_RETURN_IF_ERROR(q.Run());
        after(i, n);
        i += n;
      }
      return Status::Ok();
    }
  };
  RowsWriter steps_, attempts_, launches_, events_, events_seq_, artifacts_,
      lineage_;                       // GUARDED_BY(write_mu_)
  std::optional<Stmt> put_run_;       // GUARDED_BY(write_mu_)
  std::unique_ptr<Db> checkpointer_;  // used by checkpoint_thread_ only
  std::mutex ckpt_mu_;
  std::condition_variable ckpt_cv_;
  bool ckpt_wanted_ = false;  // GUARDED_BY(ckpt_mu_)
  bool closing_ = false;      // GUARDED_BY(ckpt_mu_)
  // REQUIRES: read_mu_ held. The statement of ListRunsPage (or, with `count`, its COUNT(*)):
  // only the conditions the query has, so SQLite walks the index that fits (created_at,
  // namespace + created_at or namespace + name + created_at) backwards and stops at LIMIT.
  Result<Stmt> PageQuery(const RunPageQuery& q, bool count) {
    static const std::string cols = [] {
      std::string out;
      for (const auto& c : Split(kRunCols, ','))
        out += (out.empty() ? "r." : ", r.") + std::string(Trim(c));
      return out;
    }();
    std::string sql = "SELECT " + (count ? std::string("COUNT(*)") : cols) + " FROM store_runs r";
    std::vector<std::string> where;
    std::vector<std::function<void(Stmt&, int)>> binds;
    if (!q.label_key.empty()) {
      sql += " JOIN store_versions v ON v.id = r.workload_id";
      // A JSON path naming the key as a quoted member ($."app.kubernetes.io/name").
      std::string path = "$.\"";
      for (char ch : q.label_key) {
        if (ch == '"' || ch == '\\') path += '\\';
        path += ch;
      }
      path += '"';
      where.push_back("json_extract(v.labels_json, ?) = ?");
      binds.push_back([path](Stmt& s, int i) { s.Bind(i, path); });
      binds.push_back([&q](Stmt& s, int i) { s.BindRef(i, q.label_value); });
    }
    auto equal = [&](const char* column, const std::string& value) {
      if (value.empty()) return;
      where.push_back(std::string("r.") + column + " = ?");
      binds.push_back([&value](Stmt& s, int i) { s.BindRef(i, value); });
    };
    equal("namespace", q.namespace_);
    equal("name", q.name);
    equal("phase", q.phase);
    if (!count && !q.before_workload_id.empty()) {
      where.push_back("(r.created_at, r.workload_id) < (?, ?)");
      binds.push_back([&q](Stmt& s, int i) { s.Bind(i, q.before_created_at); });
      binds.push_back([&q](Stmt& s, int i) { s.BindRef(i, q.before_workload_id); });
    }
    for (size_t i = 0; i < where.size(); ++i) sql += (i == 0 ? " WHERE " : " AND ") + where[i];
    if (!count) {
      sql += " ORDER BY r.created_at DESC, r.workload_id DESC";
      if (q.limit > 0) sql += " LIMIT " + std::to_string(q.limit);
    }
    auto st = reader_->Prepare(sql);
    if (!st.ok()) return st.error();
    for (size_t i = 0; i < binds.size(); ++i) binds[i](*st, static_cast<int>(i) + 1);
    return st;
  }

  std::thread checkpoint_thread_;
  std::mutex read_mu_;
  std::unique_ptr<Db> reader_;  // GUARDED_BY(read_mu_)
  std::mutex seq_mu_;
  int64_t last_seq_ = -1;  // GUARDED_BY(seq_mu_)
  std::shared_ptr<const SecretBox> box_;
  const bool sync_full_;  // synchronous=FULL (StoreOptions::sync_full)
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& state_dir,
                                               const StoreOptions& options) {
  if (options.transition_log) return OpenLogStore(state_dir, options);
  RSL_RETURN_IF_ERROR(ApplyLeftoverLog(state_dir, options));
  return OpenSqliteStoreAs(state_dir, options, /*owned=*/false);
}

Result<std::unique_ptr<Store>> OpenSqliteStoreAs(const std::string& state_dir,
                                                 const StoreOptions& options, bool owned) {
  auto box = SecretBox::ForStateDir(state_dir);
  if (!box.ok()) return box.error();
  auto shared = SharedDb::ForStateDir(state_dir, "store", SqliteStoreMigrations());
  if (!shared.ok()) return shared.error();
  std::unique_lock<std::mutex> lock((*shared)->mu());
  Db* writer = (*shared)->db();
  // Secrets written before values were sealed, or sealed with a key being rotated out.
  auto resealed = ResealColumn(*writer, **box, "store_configmaps", "data_json",
                               "'secret:' || namespace || '/' || name", "secret = 1");
  if (!resealed.ok()) return resealed.error();
  if (!options.sync_full) RSL_RETURN_IF_ERROR(writer->Exec("PRAGMA synchronous=NORMAL"));
  // A transaction of a big run's turn must not spill dirty pages mid-way (64 MiB of cache).
  // The writer checkpoints itself once the WAL holds 1,000 pages (SQLite's default), right
  // after its commit: only a checkpoint that catches up with the last commit lets the next
  // transaction start the WAL again from its beginning. Without it (autocheckpoint off, only
  // CheckpointLoop's passive ones, which never catch up while a run commits every turn) the
  // WAL grew without bound, 47 MB/s under a 4,000-step run, and every commit appended to it:
  // on ext4 an fdatasync after appending 11 pages costs 218-248 us against 133-141 us after
  // overwriting them (python probe). 4,000-step tree, rsl-engine-driver, A/B in one script:
  // 2.46-2.72 s against 2.59-2.91 s; the WAL stays at about 4 MB.
  const int autocheckpoint =
      options.wal_autocheckpoint_pages > 0 ? options.wal_autocheckpoint_pages : 1000;
  RSL_RETURN_IF_ERROR(writer->Exec("PRAGMA cache_size=-65536; PRAGMA wal_autocheckpoint=" +
                                   std::to_string(autocheckpoint)));
  lock.unlock();
  auto reader = Db::Open(StateDbPath(state_dir));
  if (!reader.ok()) return reader.error();
  auto checkpointer = Db::Open(StateDbPath(state_dir));
  if (!checkpointer.ok()) return checkpointer.error();
  auto store = std::make_unique<SqliteStore>(
      std::move(*shared), std::move(*reader), std::move(*checkpointer), std::move(*box),
      owned ? nullptr : std::make_unique<SharedStoreLock>(StoreOwnerLockPath(state_dir)),
      options.sync_full);
  RSL_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace rsl::store
