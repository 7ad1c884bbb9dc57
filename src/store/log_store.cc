// The store with a transition log (StoreOptions::transition_log). Apply of an engine turn
// numbers its events, appends the turn's rows to the log (store/transition_log.h, encoded
// by store/batch_codec.h) and returns once the record is durable; the indexer thread then
// writes the records' rows into SQLite's tables (handed over in memory, as the batch had
// them: the log is decoded only when a store is opened after an unclean stop), the records
// that queued while it wrote go together into one transaction, each row once (a step's
// launched, running and ended rows of three turns become one upsert), with the LSN of the
// last record in the same transaction (store_log.applied_lsn), committed without an fsync
// (Batch::defer_sync: the log holds the records; a segment goes only once a synced commit
// covers it, and a clean close or an open makes one before it empties the log). Reads wait
// until the tables hold everything enqueued before them, so a reader sees what was
// acknowledged.
// Opening the store applies the records past applied_lsn: nothing acknowledged is lost when
// the process dies at any instant.
//
// Submissions (versions, `also` writes such as audit entries) are not logged: they go into
// the indexer's queue in order with the records and are applied to SQLite in a transaction
// of their own, their caller waiting for it (the version number is assigned there).
#include "store/log_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "base/codes.h"
#include "base/env.h"
#include "base/sqlite.h"
#include "store/batch_codec.h"
#include "store/sqlite_schema.h"
#include "store/transition_log.h"

namespace rsl::store {

std::string StoreOwnerLockPath(const std::string& state_dir) { return state_dir + "/store.lock"; }

SharedStoreLock::~SharedStoreLock() {
  if (fd_ >= 0) ::close(fd_);
}

Status SharedStoreLock::Take() {
  if (fd_ < 0) fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) return OsError(codes::kIoError, "cannot open", path_, errno);
  while (::flock(fd_, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return OsError(codes::kIoError, "cannot lock", path_, errno);
    return Error(codes::kConflict,
                 "another process owns this state directory's store (rsl-controller writes it "
                 "through its transition log)")
        .Value(path_)
        .Hint("submit through that process (seedctl --server), or stop it first");
  }
  return Status::Ok();
}

void SharedStoreLock::Release() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

namespace {

// Rows of several records, each row once: the last of its key, in the place of its first
// (steps stay roughly in pipeline order, the order their pages are in). An attempt written
// again without its launch record keeps the one written before, unless that row is its exit:
// only recovery reads a launch record, for an attempt still running, so one that ends in
// the same transaction gets none. A lone record's rows are kept as they are (SQLite applies
// a batch's rows in order): its keys are mapped only once a second record may repeat them.
class Coalescer {
 public:
  void Add(Batch&& b) {
    if (records_++ == 0) {
      out_ = std::move(b);
      return;
    }
    if (records_ == 2) {
      Batch first = std::move(out_);
      out_ = Batch();
      Index(std::move(first));
    }
    Index(std::move(b));
  }
  Batch Take() {
    runs_.clear(), steps_.clear(), attempts_.clear();
    records_ = 0;
    Batch taken = std::move(out_);
    out_ = Batch();
    return taken;
  }

 private:
  void Index(Batch&& b) {
    for (Run& r : b.runs) Put(&runs_, &out_.runs, r.id, std::move(r));
    for (Step& s : b.steps) Put(&steps_, &out_.steps, s.run_id + '\0' + s.name, std::move(s));
    for (Attempt& a : b.attempts) {
      auto [it, fresh] = attempts_.try_emplace(a.id, out_.attempts.size());
      if (fresh) {
        out_.attempts.push_back(std::move(a));
        continue;
      }
      Attempt& kept = out_.attempts[it->second];
      if (a.launch_json.empty() && a.state != spec::AttemptPhase::kExited) {
        a.launch_json = std::move(kept.launch_json);
      }
      kept = std::move(a);
    }
    AppendRows(&b.events, &out_.events);
    AppendRows(&b.artifacts, &out_.artifacts);
    AppendRows(&b.lineage, &out_.lineage);
  }
  template <class T>
  static void Put(std::unordered_map<std::string, size_t>* index, std::vector<T>* rows,
                  std::string key, T&& row) {
    auto [it, fresh] = index->try_emplace(std::move(key), rows->size());
    if (fresh) {
      rows->push_back(std::move(row));
    } else {
      (*rows)[it->second] = std::move(row);
    }
  }
  template <class T>
  static void AppendRows(std::vector<T>* from, std::vector<T>* to) {
    to->insert(to->end(), std::make_move_iterator(from->begin()),
               std::make_move_iterator(from->end()));
  }
  Batch out_;
  size_t records_ = 0;  // added since the last Take
  std::unordered_map<std::string, size_t> runs_, steps_, attempts_;
};

std::function<Status(Db*)> SetApplied(uint64_t lsn) {
  return [lsn](Db* db) {
    return db->Run("UPDATE store_log SET applied_lsn=?1 WHERE id=1", static_cast<int64_t>(lsn));
  };
}

// A synced commit that sets store_log.applied_lsn to `lsn`: with it, every commit before it
// is durable too (a synced commit syncs the whole WAL), so the log's records through `lsn`
// may go. A commit that changes nothing writes no page and syncs nothing (nor does a
// checkpoint that a reader's snapshot holds back): the row is changed and set back.
Status SyncedCommit(Store* store, uint64_t lsn) {
  Batch sync;
  sync.also.push_back(
      [](Db* db) { return db->Run("UPDATE store_log SET applied_lsn=applied_lsn+1 WHERE id=1"); });
  sync.also.push_back(SetApplied(lsn));
  return store->Apply(&sync);
}

class LogStore : public StoreWrapper {
 public:
  //! `wrapper` (may be null) wraps `inner`: the indexer writes through it (tests).
  LogStore(std::unique_ptr<Store> inner, std::unique_ptr<Store> wrapper,
           std::unique_ptr<TransitionLog> log, std::unique_ptr<FileLock> owner)
      : StoreWrapper(inner.get()),
        inner_(std::move(inner)),
        wrapper_(std::move(wrapper)),
        writer_(wrapper_ ? wrapper_.get() : inner_.get()),
        log_(std::move(log)),
        owner_(std::move(owner)) {
    last_seq_ = acked_seq_ = inner_->LastEventSeq();
    indexer_ = std::thread([this] { IndexLoop(); });
  }

  ~LogStore() override {
    {
      std::lock_guard<std::mutex> lock(q_mu_);
      closing_ = true;
    }
    q_cv_.notify_all();
    indexer_.join();
    // Everything indexed: once a synced commit makes it durable in SQLite (the indexer's
    // are not synced), the next open starts from an empty log.
    if (!failed_ && queue_.empty()) {
      const uint64_t lsn = log_->last_lsn();
      Status s = SyncedCommit(writer_, lsn);
      if (s.ok()) s = log_->Reset(lsn);
      if (!s.ok()) fprintf(stderr, "rsl store: transition log: %s\n", s.ToString().c_str());
    }
  }

  Status Apply(Batch* b) override {
    if (!b->versions.empty() || !b->also.empty()) return ApplyDirect(b);
    std::lock_guard<std::mutex> append(append_mu_);
    WaitForRoom();
    int64_t seq = last_seq_;
    for (Event& e : b->events) e.seq = ++seq;
    // The record is built in place behind its frame; sized as the last one was, a turn's
    // megabytes of rows are not copied again and again as the string grows.
    std::string record;
    record.reserve(std::max<size_t>(record_hint_, 4096));
    record.assign(TransitionLog::kFrameBytes, '\0');
    EncodeBatchRows(*b, &record);
    record_hint_ = record.size() + record.size() / 8;
    auto lsn = log_->AppendFramed(&record);
    if (!lsn.ok()) {
      for (Event& e : b->events) e.seq = 0;
      return lsn.status();
    }
    last_seq_ = seq;
    // Durable: the indexer takes the rows as they are instead of decoding the record back.
    // The caller keeps its events (numbered now) and nothing else (Store::Apply); a failed
    // append above left the batch whole, for the caller's retry.
    Batch rows;
    std::swap(rows, *b);  // no versions or `also` here (ApplyDirect's); *b left empty
    b->events = rows.events;
    {
      std::lock_guard<std::mutex> lock(q_mu_);
      acked_seq_ = std::max(acked_seq_, seq);
      // With the indexer stopped the record waits in the log alone, for the next open.
      if (!failed_) {
        pending_bytes_ += record.size();
        queue_.push_back(Entry{*lsn, record.size(), std::move(rows)});
        ++enqueued_;
      }
    }
    q_cv_.notify_all();
    return Status::Ok();
  }

  int64_t LastEventSeq() override {
    std::lock_guard<std::mutex> lock(q_mu_);
    return acked_seq_;
  }

  // Every read waits for the rows acknowledged before it.
  Result<WorkloadVersion> GetVersion(const std::string& id) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->GetVersion(id);
  }
  Result<std::vector<WorkloadVersion>> ListVersions(const std::string& ns,
                                                    const std::string& name) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListVersions(ns, name);
  }
  Result<Run> GetRun(const std::string& id) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->GetRun(id);
  }
  Result<std::vector<Run>> ListRuns(const RunFilter& filter) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListRuns(filter);
  }
  Result<std::vector<Run>> ListRunsPage(const RunPageQuery& query) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListRunsPage(query);
  }
  Result<int64_t> CountRuns(const RunPageQuery& query) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->CountRuns(query);
  }
  Result<PhaseCounts> CountPhases() override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->CountPhases();
  }
  Result<std::vector<Step>> ListSteps(const std::string& run_id) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListSteps(run_id);
  }
  Result<std::vector<Attempt>> ListAttempts(const std::string& run_id) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListAttempts(run_id);
  }
  Result<std::vector<Step>> ListStepsPage(const StepPageQuery& query) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListStepsPage(query);
  }
  Result<std::map<std::string, int64_t>> CountSteps(const std::string& run_id) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->CountSteps(run_id);
  }
  Result<int64_t> CountEvents(const std::string& run_id) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->CountEvents(run_id);
  }
  Result<std::vector<Event>> ListLastEvents(const std::string& run_id, int limit) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListLastEvents(run_id, limit);
  }
  Result<std::vector<Event>> ListEvents(const std::string& run_id, int64_t after_seq,
                                        int limit) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListEvents(run_id, after_seq, limit);
  }
  Result<std::vector<Artifact>> ListArtifacts(const std::string& run_id) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListArtifacts(run_id);
  }
  Result<std::vector<LineageEdge>> ListLineage(const std::string& run_id) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->ListLineage(run_id);
  }
  Status CollectRun(const std::string& run_id, int64_t at) override {
    RSL_RETURN_IF_ERROR(Caught());
    return target()->CollectRun(run_id, at);
  }

 private:
  struct Entry {
    uint64_t lsn = 0;    // a log record, or 0: a batch applied directly
    uint64_t bytes = 0;  // the record's size in the log
    Batch rows;          // the record's rows
    Batch* direct = nullptr;
    Status* result = nullptr;  // direct: its outcome, set before `done`
    bool* done = nullptr;
  };

  // A submission: applied to SQLite in its own transaction, in order with the log's records.
  Status ApplyDirect(Batch* b) {
    Status result;
    bool done = false;
    {
      std::lock_guard<std::mutex> append(append_mu_);
      std::lock_guard<std::mutex> lock(q_mu_);
      // Behind records SQLite refuses (a full disk), a submission would wait as long as they
      // do: it fails now, with their error, as it would have without the log.
      if (retrying_ || failed_) {
        return Error(codes::kIoError, "the store cannot write its tables")
            .Value(last_error_)
            .Hint(
                "free space under the state directory; the engine's transitions wait in its "
                "log meanwhile");
      }
      int64_t seq = last_seq_;
      for (Event& e : b->events) e.seq = ++seq;
      last_seq_ = seq;  // a failed batch leaves a gap in the numbers, which is harmless
      queue_.push_back(Entry{0, 0, {}, b, &result, &done});
      ++enqueued_;
    }
    q_cv_.notify_all();
    std::unique_lock<std::mutex> lock(q_mu_);
    done_cv_.wait(lock, [&] { return done; });
    if (result.ok() && !b->events.empty()) acked_seq_ = std::max(acked_seq_, b->events.back().seq);
    if (!result.ok()) {
      for (Event& e : b->events) e.seq = 0;
    }
    return result;
  }

  // REQUIRES: append_mu_ held. The indexer holds at most kMaxPendingBytes of records not yet
  // in SQLite: beyond that the engine's turns wait for it instead of growing its queue.
  void WaitForRoom() {
    std::unique_lock<std::mutex> lock(q_mu_);
    done_cv_.wait(lock, [&] { return pending_bytes_ < kMaxPendingBytes || failed_; });
  }

  // OK once SQLite holds every entry enqueued before the call.
  Status Caught() {
    std::unique_lock<std::mutex> lock(q_mu_);
    uint64_t target = enqueued_;
    if (indexed_ >= target) return Status::Ok();
    bool caught = done_cv_.wait_for(lock, std::chrono::milliseconds(kReadWaitMs),
                                    [&] { return indexed_ >= target || failed_; });
    if (caught && !failed_) return Status::Ok();
    return Error(codes::kIoError, "the store's tables are behind its transition log")
        .Value(last_error_)
        .Hint(failed_ ? "restart the process: opening the store applies the log"
                      : "SQLite is not keeping up (a full disk?); retry");
  }

  void IndexLoop() {
    std::vector<Entry> work;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(q_mu_);
        q_cv_.wait(lock, [&] { return !queue_.empty() || closing_; });
        if (queue_.empty()) return;  // closing, everything written
        // The whole queue: records that came in while the last transaction ran go together.
        work.clear();
        while (!queue_.empty() && work.size() < kMaxEntriesPerTransaction) {
          work.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
      size_t i = 0;
      while (i < work.size()) {
        if (work[i].lsn == 0) {
          Status s = writer_->Apply(work[i].direct);
          Finish(1, 0, &work[i], s);
          ++i;
          continue;
        }
        size_t j = i;
        uint64_t bytes = 0;
        for (; j < work.size() && work[j].lsn != 0; ++j) bytes += work[j].bytes;
        uint64_t last = work[j - 1].lsn;
        Coalescer rows;
        for (size_t k = i; k < j; ++k) rows.Add(std::move(work[k].rows));
        Batch merged = rows.Take();
        merged.also.push_back(SetApplied(last));
        // The log holds these records: SQLite commits them without an fsync, unless this
        // transaction completes a segment that no longer grows (dropped segments are gone
        // from the log: ClosedThrough is 0 until another closes), which goes once a synced
        // commit (this one, which also makes every unsynced one before it durable) holds it.
        const uint64_t closed = log_->ClosedThrough();
        const bool drop = closed != 0 && closed <= last;
        merged.defer_sync = !drop;
        if (!WriteRetrying(&merged))
          return Abandon(&work, i, Status(Error(codes::kIoError, "closing")));
        if (drop) {
          Status dropped = log_->DropThrough(closed);
          if (!dropped.ok()) fprintf(stderr, "rsl store: %s\n", dropped.ToString().c_str());
        }
        Finish(j - i, bytes, nullptr, Status::Ok());
        i = j;
      }
    }
  }

  // Records already acknowledged must reach SQLite: a failing write (a full disk) is retried
  // until it succeeds or the store closes (the log keeps them for the next open).
  bool WriteRetrying(Batch* b) {
    int delay_ms = 10;
    while (true) {
      // Nothing in it is changed by Apply: no versions, and its events are numbered.
      Status s = writer_->Apply(b);
      if (s.ok()) {
        std::lock_guard<std::mutex> lock(q_mu_);
        retrying_ = false;
        return true;
      }
      fprintf(stderr, "rsl store: writing the transition log into SQLite (will retry): %s\n",
              s.ToString().c_str());
      std::unique_lock<std::mutex> lock(q_mu_);
      last_error_ = s.ToString();
      retrying_ = true;
      if (closing_) {
        failed_ = true;
        done_cv_.notify_all();
        return false;
      }
      q_cv_.wait_for(lock, std::chrono::milliseconds(delay_ms), [&] { return closing_; });
      delay_ms = std::min(delay_ms * 2, 1000);
    }
  }

  void Finish(size_t entries, uint64_t bytes, Entry* direct, const Status& s) {
    {
      std::lock_guard<std::mutex> lock(q_mu_);
      indexed_ += entries;
      pending_bytes_ -= bytes;
      if (direct) {
        *direct->result = s;
        *direct->done = true;
      }
    }
    done_cv_.notify_all();
  }

  // The indexer stops: the records it could not write stay in the log for the next open;
  // every submission still waiting (in `work` from `from` on, or queued) fails with `s`.
  void Abandon(std::vector<Entry>* work, size_t from, const Status& s) {
    fprintf(stderr, "rsl store: transition log: %s\n", s.ToString().c_str());
    std::lock_guard<std::mutex> lock(q_mu_);
    failed_ = true;
    if (last_error_.empty()) last_error_ = s.ToString();
    Status failed = Error(codes::kIoError, "the store cannot write its tables").Value(last_error_);
    auto fail = [&](Entry& e) {
      if (e.lsn != 0) return;
      *e.result = failed;
      *e.done = true;
    };
    for (size_t k = from; k < work->size(); ++k) fail((*work)[k]);
    for (Entry& e : queue_) fail(e);
    done_cv_.notify_all();
  }

  static constexpr uint64_t kMaxPendingBytes = 64ull << 20;
  static constexpr size_t kMaxEntriesPerTransaction = 4096;
  static constexpr int kReadWaitMs = 30000;

  std::unique_ptr<Store> inner_;
  std::unique_ptr<Store> wrapper_;  // over inner_, or null
  Store* writer_;                   // what the indexer writes through
  std::unique_ptr<TransitionLog> log_;
  std::unique_ptr<FileLock> owner_;  // store.lock, exclusively
  std::mutex append_mu_;             // before q_mu_: one Apply numbers and appends at a time
  int64_t last_seq_ = 0;             // GUARDED_BY(append_mu_): the last event number given
  size_t record_hint_ = 0;           // GUARDED_BY(append_mu_): room for the next record
  std::mutex q_mu_;
  std::condition_variable q_cv_;     // the indexer: work, or closing
  std::condition_variable done_cv_;  // readers, submitters, turns waiting for room
  std::deque<Entry> queue_;          // GUARDED_BY(q_mu_)
  uint64_t enqueued_ = 0;            // GUARDED_BY(q_mu_): entries ever queued
  uint64_t indexed_ = 0;             // GUARDED_BY(q_mu_): entries written to SQLite
  uint64_t pending_bytes_ = 0;       // GUARDED_BY(q_mu_)
  int64_t acked_seq_ = 0;            // GUARDED_BY(q_mu_)
  bool closing_ = false;             // GUARDED_BY(q_mu_)
  bool failed_ = false;              // GUARDED_BY(q_mu_)
  bool retrying_ = false;            // GUARDED_BY(q_mu_): the last SQLite write failed
  std::string last_error_;           // GUARDED_BY(q_mu_)
  std::thread indexer_;
};

}  // namespace

Status ApplyLeftoverLog(const std::string& state_dir, const StoreOptions& options) {
  std::error_code ec;
  bool records = false;
  for (const auto& e : std::filesystem::directory_iterator(state_dir + "/translog", ec)) {
    std::error_code size_ec;
    if (e.path().extension() == ".tlog" && e.file_size(size_ec) > 0 && !size_ec) records = true;
  }
  if (!records) return Status::Ok();
  // A live owner indexes its own log.
  if (!Env::Default()->LockFile(StoreOwnerLockPath(state_dir), 0).ok()) return Status::Ok();
  auto owner = OpenLogStore(state_dir, options);  // applies the records, then closes
  return owner.ok() ? Status::Ok() : Status(owner.error());
}

Result<std::unique_ptr<Store>> OpenLogStore(const std::string& state_dir,
                                            const StoreOptions& options) {
  return OpenLogStoreWrapped(state_dir, options, nullptr);
}

Result<std::unique_ptr<Store>> OpenLogStoreWrapped(const std::string& state_dir,
                                                   const StoreOptions& options,
                                                   const WrapStoreFn& wrap) {
  // The indexer's transactions grow the WAL by more than a turn's: its own checkpoints
  // (SQLite's, after a commit) start at 10,000 pages; the store's checkpoint thread keeps it
  // short meanwhile. 15 % off a 10,000-step run through the log, together with the commits
  // that defer their fsync (bench/README.md, session 39).
  StoreOptions tables = options;
  if (tables.wal_autocheckpoint_pages <= 0) tables.wal_autocheckpoint_pages = 10000;
  auto inner = OpenSqliteStoreAs(state_dir, tables, /*owned=*/true);  // creates state_dir
  if (!inner.ok()) return inner.error();
  // Shared holders (another process's Apply) let go within milliseconds; an owner does not.
  auto owner = Env::Default()->LockFile(StoreOwnerLockPath(state_dir), 2000);
  if (!owner.ok()) {
    if (owner.error().code != codes::kConflict) return owner.error();
    return Error(codes::kConflict, "another process writes this state directory's store")
        .Value(StoreOwnerLockPath(state_dir))
        .Hint("stop the other rsl-controller or seedctl run on it, or use another --state-dir");
  }
  auto shared = SharedDb::ForStateDir(state_dir, "store", SqliteStoreMigrations());
  if (!shared.ok()) return shared.error();
  uint64_t applied = 0;
  {
    std::lock_guard<std::mutex> lock((*shared)->mu());
    auto row = (*shared)->db()->First("SELECT applied_lsn FROM store_log WHERE id=1",
                                      [](const Stmt& r) { return r.Int(0); });
    if (!row.ok()) return row.error();
    if (row->has_value()) applied = static_cast<uint64_t>(**row);
  }
  // Records past `applied`: written in groups, each with the LSN it reaches.
  Coalescer rows;
  size_t grouped = 0;
  uint64_t reached = applied;
  auto flush = [&]() -> Status {
    if (grouped == 0) return Status::Ok();
    Batch b = rows.Take();
    b.also.push_back(SetApplied(reached));
    grouped = 0;
    return (*inner)->Apply(&b);
  };
  TransitionLog::Options lo;
  lo.sync = options.sync_full;
  if (options.log_segment_bytes > 0) lo.segment_bytes = options.log_segment_bytes;
  auto log = TransitionLog::Open(state_dir + "/translog", lo, applied,
                                 [&](uint64_t lsn, std::string_view payload) {
                                   Batch b;
                                   RSL_RETURN_IF_ERROR(DecodeBatchRows(payload, &b));
                                   rows.Add(std::move(b));
                                   reached = lsn;
                                   if (++grouped >= 1024) return flush();
                                   return Status::Ok();
                                 });
  if (!log.ok()) return log.error();
  RSL_RETURN_IF_ERROR(flush());
  if (reached > applied) {
    fprintf(stderr, "rsl store: applied %llu transition log records after an unclean stop\n",
            static_cast<unsigned long long>(reached - applied));
  }
  // The commits of a process that died may be SQLite's without a sync (the indexer's): made
  // durable before the records they hold go.
  RSL_RETURN_IF_ERROR(SyncedCommit(inner->get(), reached));
  RSL_RETURN_IF_ERROR((*log)->Reset(reached));
  std::unique_ptr<Store> wrapper = wrap ? wrap(inner->get()) : nullptr;
  return std::unique_ptr<Store>(
      new LogStore(std::move(*inner), std::move(wrapper), std::move(*log), std::move(*owner)));
}

}  // namespace rsl::store
