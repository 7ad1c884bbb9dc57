#include "base/sqlite.h"

#include <chrono>
#include <climits>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/codes.h"
#include "base/file.h"

namespace rsl {

// A connection's idle statements by their SQL text. Its own mutex: a Stmt may be released on
// another thread than the one using the Db (each under the caller's lock of that Db, as every
// use of a connection is).
struct StmtCache {
  std::mutex mu;
  bool closed = false;                                       // GUARDED_BY(mu): the Db is gone
  std::unordered_multimap<std::string, sqlite3_stmt*> idle;  // GUARDED_BY(mu)
};

Stmt::Stmt(Stmt&& o) noexcept
    : db_(o.db_), st_(o.st_), cache_(std::move(o.cache_)), status_(std::move(o.status_)) {
  o.st_ = nullptr;
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    Release();
    db_ = o.db_;
    st_ = o.st_;
    cache_ = std::move(o.cache_);
    status_ = std::move(o.status_);
    o.st_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() { Release(); }

void Stmt::Release() {
  if (!st_) return;
  if (cache_) {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
    std::vector<sqlite3_stmt*> evicted;
    {
      std::lock_guard<std::mutex> lock(cache_->mu);
      if (!cache_->closed) {
        // Full (a caller building many distinct texts): start again rather than keep the
        // first ones forever.
        if (cache_->idle.size() >= kMaxCachedStatements) {
          for (auto& [sql, st] : cache_->idle) evicted.push_back(st);
          cache_->idle.clear();
        }
        cache_->idle.emplace(sqlite3_sql(st_), st_);
        st_ = nullptr;
      }
    }
    for (sqlite3_stmt* st : evicted) sqlite3_finalize(st);
  }
  if (st_) sqlite3_finalize(st_);
  st_ = nullptr;
}

Stmt& Stmt::Bind(int idx, int64_t v) {
  sqlite3_bind_int64(st_, idx, v);
  return *this;
}
Stmt& Stmt::Bind(int idx, double v) {
  sqlite3_bind_double(st_, idx, v);
  return *this;
}
Stmt& Stmt::Bind(int idx, const std::string& v) {
  sqlite3_bind_text(st_, idx, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindRef(int idx, const std::string& v) {
  sqlite3_bind_text(st_, idx, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  return *this;
}
Stmt& Stmt::BindNull(int idx) {
  sqlite3_bind_null(st_, idx);
  return *this;
}

Error SqliteError(sqlite3* db, int rc, const std::string& message) {
  int primary = rc & 0xff;
  const char* file = sqlite3_db_filename(db, "main");
  std::string path = file && *file ? file : "the database";
  std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  if (primary == SQLITE_FULL) {
    // ENOSPC on the state directory (or a page limit): the caller decides whether to retry.
    return Error(codes::kIoError, "the state directory's database " + path +
                                      " cannot grow: the disk is full (sqlite: " + message + ")")
        .Path(path)
        .Hint("free space on the file system of " +
              (dir.empty() ? std::string("the state directory") : dir));
  }
  if (primary == SQLITE_IOERR) {
    return Error(codes::kIoError, "cannot read or write the state directory's database " + path +
                                      " (sqlite: " + message + ")")
        .Path(path)
        .Hint("check the disk and the file system of " +
              (dir.empty() ? std::string("the state directory") : dir));
  }
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    // The extended code tells which lock: SQLITE_BUSY_SNAPSHOT (517) and _RECOVERY (261) come
    // back at once, without the busy handler's wait.
    return Error(codes::kConflict, "the state directory's database " + path +
                                       " stayed locked by another process for " +
                                       std::to_string(kBusyTimeoutMs / 1000) +
                                       "s (sqlite: " + message + ", code " +
                                       std::to_string(sqlite3_extended_errcode(db)) + ")")
        .Hint("another seedctl run or rsl-controller writes to " +
              (dir.empty() ? std::string("this state directory") : dir) +
              "; retry, or give this one its own --state-dir");
  }
  return Error(codes::kInternal, "sqlite: " + message);
}

bool Stmt::Step() {
  int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) status_ = SqliteError(db_, rc, sqlite3_errmsg(db_));
  return false;
}

Status Stmt::Run() {
  while (Step()) {
  }
  Status s = status_;
  Reset();
  return s;
}

void Stmt::Reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

int64_t Stmt::Int(int col) const { return sqlite3_column_int64(st_, col); }
double Stmt::Double(int col) const { return sqlite3_column_double(st_, col); }
std::string Stmt::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, col));
  int n = sqlite3_column_bytes(st_, col);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}
bool Stmt::IsNull(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }

namespace {

// The naps of a wait for a locked database, in turn: SQLite's own handler
// (sqlite3_busy_timeout) naps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 and 100 ms. The writers
// that meet here are mostly the controller's own connections to its state database (the
// store's, the audit log's, the cost and model records'), whose transactions last well under
// a millisecond, yet each wait for one of them cost a nap of 1-25 ms: under
// bench/api_load.sh, 942 of a submission's 14,765 context switches were such naps (perf,
// sched_switch), the tail of its answer (p99 40-60 ms against a p50 of 4-5 ms). Short naps
// first, within the same kBusyTimeoutMs in all.
struct BusyNaps {
  int times;  // how many naps of this length, in turn
  int64_t micros;
};
constexpr BusyNaps kBusyNaps[] = {{20, 50}, {40, 250}, {INT_MAX, 2000}};

// `count`: the waits before this one. 0 (SQLITE_BUSY to the caller) once the naps so far add
// up to kBusyTimeoutMs.
int BusyHandler(void* /*unused*/, int count) {
  int64_t waited_us = 0;
  for (const BusyNaps& naps : kBusyNaps) {
    if (count >= naps.times) {
      waited_us += naps.times * naps.micros;
      count -= naps.times;
      continue;
    }
    waited_us += count * naps.micros;
    if (waited_us >= int64_t{kBusyTimeoutMs} * 1000) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(naps.micros));
    return 1;
  }
  return 0;
}

}  // namespace

Result<std::unique_ptr<Db>> Db::Open(const std::string& path) {
  // Before SQLite's first use: no global allocation statistics (each sqlite3_malloc would
  // take a global mutex for them). Refused harmlessly if SQLite was already initialised.
  static const int kConfigured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)kConfigured;
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : "out of memory";
    if (raw) sqlite3_close(raw);
    return Error(codes::kIoError, "cannot open database " + path + ": " + msg);
  }
  std::unique_ptr<Db> db(new Db(raw, path));
  sqlite3_busy_handler(raw, BusyHandler, nullptr);  // kBusyTimeoutMs, in short naps first
  // A fresh database starts in rollback-journal mode, and its switch to WAL reads the header
  // and then upgrades that read lock to write it: when another process is switching the same
  // fresh file at that moment (two `seedctl run` started together on a new state directory),
  // SQLite returns SQLITE_BUSY at once rather than call the busy handler (waiting could
  // deadlock the two). Retried here, within the same busy timeout.
  for (int waited_ms = 0;;) {
    Status wal = db->Exec("PRAGMA journal_mode=WAL");
    if (wal.ok()) break;
    if ((sqlite3_errcode(raw) & 0xff) != SQLITE_BUSY || waited_ms >= kBusyTimeoutMs) return wal;
    sqlite3_sleep(10);
    waited_ms += 10;
  }
  RSL_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  return db;
}

Db::Db(sqlite3* db, std::string path)
    : db_(db), path_(std::move(path)), cache_(std::make_shared<StmtCache>()) {}

Db::~Db() {
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    cache_->closed = true;
    for (auto& [sql, st] : cache_->idle) sqlite3_finalize(st);
    cache_->idle.clear();
  }
  sqlite3_close_v2(db_);  // a Stmt still alive keeps the connection until it is finalized
}

Error Db::SqlError(const std::string& what) const {
  return SqliteError(db_, sqlite3_errcode(db_), what + ": " + sqlite3_errmsg(db_));
}

Status Db::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return SqliteError(db_, rc, msg);
  }
  return Status::Ok();
}

Result<Stmt> Db::Prepare(const std::string& sql) {
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto it = cache_->idle.find(sql);
    if (it != cache_->idle.end()) {
      sqlite3_stmt* cached = it->second;
      cache_->idle.erase(it);
      return Stmt(db_, cached, cache_);
    }
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &st, nullptr) !=
      SQLITE_OK) {
    return SqlError("prepare");
  }
  return Stmt(db_, st, cache_);
}

Status Db::Begin() { return Exec("BEGIN IMMEDIATE"); }
Status Db::Commit() { return Exec("COMMIT"); }
Status Db::Rollback() { return Exec("ROLLBACK"); }
int64_t Db::LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
int Db::Changes() const { return sqlite3_changes(db_); }

Status Db::Migrate(const std::string& component, const std::vector<std::string>& migrations) {
  RSL_RETURN_IF_ERROR(Exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations ("
      " component TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (component, version))"));
  // A newer RSL's state: refuse it rather than write rows its tables no longer mean.
  auto newest = First(
      "SELECT MAX(version) FROM schema_migrations WHERE component=?1",
      [](const Stmt& r) { return r.IsNull(0) ? int64_t{0} : r.Int(0); }, component);
  if (!newest.ok()) return newest.error();
  const int64_t known = static_cast<int64_t>(migrations.size());
  if (newest->value_or(0) > known) {
    return Error(codes::kStateSchemaTooNew, "the state directory's database " + path_ + " holds " +
                                                component + " schema version " +
                                                std::to_string(**newest) +
                                                "; this RSL knows up to " + std::to_string(known))
        .Path(path_)
        .Value(std::to_string(**newest))
        .Hint(
            "a newer RSL wrote this state directory: run that version (or newer), or give "
            "this one another --state-dir; downgrading the state is not supported");
  }
  for (size_t i = 0; i < migrations.size(); ++i) {
    const int64_t version = static_cast<int64_t>(i + 1);
    RSL_RETURN_IF_ERROR(Transaction([&]() -> Status {
      auto applied = First(
          "SELECT 1 FROM schema_migrations WHERE component=?1 AND version=?2",
          [](const Stmt&) { return true; }, component, version);
      if (!applied.ok()) return applied.error();
      if (applied->has_value()) return Status::Ok();
      RSL_RETURN_IF_ERROR(Exec(migrations[i]));
      return Run("INSERT INTO schema_migrations(component, version) VALUES (?1, ?2)", component,
                 version);
    }));
  }
  return Status::Ok();
}

std::string StateDbPath(const std::string& state_dir) { return state_dir + "/rsl.db"; }

Result<std::unique_ptr<Db>> OpenStateDb(const std::string& state_dir, const std::string& component,
                                        const std::vector<std::string>& migrations) {
  RSL_RETURN_IF_ERROR(MakeDirs(state_dir));
  auto db = Db::Open(StateDbPath(state_dir));
  if (!db.ok()) return db.error();
  RSL_RETURN_IF_ERROR((*db)->Migrate(component, migrations));
  return db;
}

Result<std::shared_ptr<SharedDb>> SharedDb::ForStateDir(
    const std::string& state_dir, const std::string& component,
    const std::vector<std::string>& migrations) {
  static std::mutex registry_mu;
  static auto* registry = new std::map<std::string, std::weak_ptr<SharedDb>>();
  RSL_RETURN_IF_ERROR(MakeDirs(state_dir));
  std::error_code ec;
  std::string key = std::filesystem::canonical(state_dir, ec).string();
  if (ec) key = std::filesystem::absolute(state_dir).lexically_normal().string();
  std::shared_ptr<SharedDb> shared;
  {
    std::lock_guard<std::mutex> lock(registry_mu);
    auto it = registry->find(key);
    if (it != registry->end()) shared = it->second.lock();
    if (!shared) {
      auto db = Db::Open(StateDbPath(state_dir));
      if (!db.ok()) return db.error();
      shared = std::make_shared<SharedDb>(std::move(*db));
      (*registry)[key] = shared;
      // Forget the directories whose connection has closed (a test opens thousands).
      for (auto e = registry->begin(); e != registry->end();)
        e = e->second.expired() ? registry->erase(e) : std::next(e);
    }
  }
  std::lock_guard<std::mutex> lock(shared->mu());
  RSL_RETURN_IF_ERROR(shared->db()->Migrate(component, migrations));
  return shared;
}

void SharedDb::WriteWithNextCommit(std::function<Status(Db*)> write,
                                   std::function<void(const Error&)> failed) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (committers_ > 0) {
      queued_.push_back({std::move(write), std::move(failed)});
      return;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Status s = db_->Transaction([&] { return write(db_.get()); });
  if (!s.ok()) failed(s.error());
}

Status SharedDb::SetCommitter(bool present) {
  bool left;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    committers_ += present ? 1 : -1;
    left = committers_ == 0 && !queued_.empty();
  }
  if (!left) return Status::Ok();
  return db_->Transaction([&] {
    RunQueuedWrites();
    return Status::Ok();
  });
}

bool SharedDb::HasQueuedWrites() {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return !queued_.empty();
}

void SharedDb::RunQueuedWrites() {
  std::vector<QueuedWrite> writes;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    writes.swap(queued_);
  }
  for (QueuedWrite& q : writes) {
    Status s = db_->Exec("SAVEPOINT queued_write");
    if (s.ok()) {
      s = q.write(db_.get());
      if (!s.ok()) (void)db_->Exec("ROLLBACK TO queued_write");
      Status released = db_->Exec("RELEASE queued_write");
      if (s.ok()) s = released;
    }
    if (!s.ok()) q.failed(s.error());
  }
}

}  // namespace rsl
