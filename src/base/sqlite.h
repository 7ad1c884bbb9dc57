// A thin RAII layer over SQLite for every component that keeps state in the state directory's
// database (<state-dir>/rsl.db). Each component owns its tables and registers its own
// migrations under its component name, so components stay independent while sharing one file.
//
// Threading: a Db is one connection; use it from one thread at a time (or guard it): it is
// opened without SQLite's own per-connection mutex (SQLITE_OPEN_NOMUTEX).
// Several Db objects (in one or more processes) may open the same file: WAL mode and a busy
// timeout make that safe.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status.h"

namespace rsl {

class Db;
struct StmtCache;  // sqlite.cc: a connection's idle prepared statements

//! How long a connection waits for another one (of any process) to finish writing before a
//! statement fails: many processes share one state directory (seedctl run beside the
//! controller), and SQLite's WAL lets only one of them write at a time.
inline constexpr int kBusyTimeoutMs = 5000;
//! Idle prepared statements a connection keeps for reuse (Db::Prepare).
inline constexpr size_t kMaxCachedStatements = 64;

//! A failed SQLite call as an Error: a database still locked after kBusyTimeoutMs is
//! CONFLICT naming the database and what to do; anything else is INTERNAL.
Error SqliteError(sqlite3* db, int rc, const std::string& message);

//! A prepared statement. Bind with 1-based indices; Step() until it returns false.
class Stmt {
 public:
  //! What `read(const Stmt&)` makes of a row: T, or T out of a Result<T>.
  template <class Read>
  using ReadResult = std::decay_t<std::invoke_result_t<Read, const Stmt&>>;
  template <class T>
  struct Unwrap {
    using type = T;
    static constexpr bool kCanFail = false;
  };
  template <class T>
  struct Unwrap<Result<T>> {
    using type = T;
    static constexpr bool kCanFail = true;
  };
  template <class Read>
  using RowOf = typename Unwrap<ReadResult<Read>>::type;
  template <class Read>
  static constexpr bool kReadCanFail = Unwrap<ReadResult<Read>>::kCanFail;

  Stmt(Stmt&&) noexcept;
  Stmt& operator=(Stmt&&) noexcept;
  ~Stmt();

  Stmt& Bind(int idx, int64_t v);
  Stmt& Bind(int idx, double v);
  Stmt& Bind(int idx, const std::string& v);
  Stmt& Bind(int idx, const char* v) { return Bind(idx, std::string(v)); }
  //! Binds without copying: `v` must stay alive and unchanged until Run() or Reset() (for
  //! hot paths that bind fields of a struct and run at once).
  Stmt& BindRef(int idx, const std::string& v);
  Stmt& BindNull(int idx);
  //! Binds `args` to ?1..?N in order: integers and bools as INTEGER, floating point as REAL,
  //! anything else that converts to std::string as TEXT.
  template <class... Args>
  Stmt& BindAll(const Args&... args) {
    int idx = 0;
    (BindValue(++idx, args), ...);
    return *this;
  }
  //! Returns true when a row is available, false when done. Errors are recorded in status().
  bool Step();
  //! Runs to completion (for INSERT/UPDATE/DELETE).
  Status Run();
  void Reset();

  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  bool IsNull(int col) const;
  //! Reads the current row's columns 0, 1, ... into `fields`, each by its type: std::string
  //! (TEXT), integers (INTEGER), floating point (REAL). A column to be converted (JSON) goes
  //! into a local string first.
  template <class... Fields>
  void Into(Fields*... fields) const {
    int col = 0;
    (ReadColumn(col++, fields), ...);
  }

  const Status& status() const { return status_; }

  //! Calls `fn(const Stmt&)` for each remaining row; returns the first error of stepping.
  template <class Fn>
  Status Each(Fn fn) {
    while (Step()) fn(static_cast<const Stmt&>(*this));
    return status_;
  }
  //! Every remaining row as `read(const Stmt&)` makes it, in order. A `read` that returns a
  //! Result<T> (a row that can be wrong, e.g. an unknown name) stops at the first error.
  template <class Read>
  auto Rows(Read read) -> Result<std::vector<RowOf<Read>>> {
    std::vector<RowOf<Read>> out;
    while (Step()) {
      auto row = read(static_cast<const Stmt&>(*this));
      if constexpr (kReadCanFail<Read>) {
        if (!row.ok()) return row.error();
        out.push_back(std::move(*row));
      } else {
        out.push_back(std::move(row));
      }
    }
    RSL_RETURN_IF_ERROR(status_);
    return out;
  }
  //! The next row as `read` makes it, or nullopt when there is none.
  template <class Read>
  auto First(Read read) -> Result<std::optional<RowOf<Read>>> {
    if (Step()) {
      auto row = read(static_cast<const Stmt&>(*this));
      if constexpr (kReadCanFail<Read>) {
        if (!row.ok()) return row.error();
        return std::optional<RowOf<Read>>(std::move(*row));
      } else {
        return std::optional<RowOf<Read>>(std::move(row));
      }
    }
    RSL_RETURN_IF_ERROR(status_);
    return std::optional<RowOf<Read>>();
  }

 private:
  friend class Db;
  template <class T>
  void ReadColumn(int col, T* out) const {
    if constexpr (std::is_same_v<T, std::string>) {
      *out = Text(col);
    } else if constexpr (std::is_integral_v<T>) {
      *out = static_cast<T>(Int(col));
    } else {
      static_assert(std::is_floating_point_v<T>, "a column reads into a string or a number");
      *out = static_cast<T>(Double(col));
    }
  }
  template <class T>
  void BindValue(int idx, const T& v) {
    if constexpr (std::is_integral_v<T>) {
      Bind(idx, static_cast<int64_t>(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      Bind(idx, static_cast<double>(v));
    } else {
      Bind(idx, std::string(v));
    }
  }
  Stmt(sqlite3* db, sqlite3_stmt* st, std::shared_ptr<StmtCache> cache)
      : db_(db), st_(st), cache_(std::move(cache)) {}
  //! Gives the statement back to its connection's cache (reset, unbound), or finalizes it.
  void Release();
  sqlite3* db_ = nullptr;
  sqlite3_stmt* st_ = nullptr;
  std::shared_ptr<StmtCache> cache_;
  Status status_;
};

class Db {
 public:
  //! Opens (creating) the database in WAL mode, synchronous=FULL, with a 5 s busy timeout.
  static Result<std::unique_ptr<Db>> Open(const std::string& path);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  //! Runs one or more statements without results.
  Status Exec(const std::string& sql);
  //! A statement of `sql`: a cached one when an earlier statement of the same text was
  //! released (a Stmt going out of scope is reset, unbound and kept, at most
  //! kMaxCachedStatements per connection), else newly prepared. Compiling SQL was a fifth of
  //! the controller's CPU under api_load.
  Result<Stmt> Prepare(const std::string& sql);
  //! Prepare() with `args` bound to ?1..?N (Stmt::BindAll).
  template <class... Args>
  Result<Stmt> Query(const std::string& sql, const Args&... args) {
    Result<Stmt> st = Prepare(sql);
    if (st.ok()) st->BindAll(args...);
    return st;
  }
  //! Runs one statement without results (INSERT/UPDATE/DELETE) with `args` bound.
  template <class... Args>
  Status Run(const std::string& sql, const Args&... args) {
    Result<Stmt> st = Query(sql, args...);
    if (!st.ok()) return st.error();
    return st->Run();
  }
  //! Every row of a query, each made by `read(const Stmt&)`: the prepare/bind/step loop of
  //! a typical SELECT in one call.
  template <class Read, class... Args>
  auto Rows(const std::string& sql, Read read, const Args&... args)
      -> Result<std::vector<Stmt::RowOf<Read>>> {
    Result<Stmt> st = Query(sql, args...);
    if (!st.ok()) return st.error();
    return st->Rows(read);
  }
  //! The first row of a query made by `read`, or nullopt when there is none.
  template <class Read, class... Args>
  auto First(const std::string& sql, Read read, const Args&... args)
      -> Result<std::optional<Stmt::RowOf<Read>>> {
    Result<Stmt> st = Query(sql, args...);
    if (!st.ok()) return st.error();
    return st->First(read);
  }
  //! Applies, in order and each in its own transaction, the migrations of `component` that
  //! have not been applied yet (tracked in table schema_migrations).
  Status Migrate(const std::string& component, const std::vector<std::string>& migrations);

  //! BEGIN IMMEDIATE / COMMIT / ROLLBACK.
  Status Begin();
  Status Commit();
  Status Rollback();
  //! Runs `body` inside BEGIN IMMEDIATE .. COMMIT; rolls back when it (or the commit) fails
  //! and returns that error.
  template <class Body>
  Status Transaction(Body body) {
    RSL_RETURN_IF_ERROR(Begin());
    Status s = body();
    if (s.ok()) s = Commit();
    if (!s.ok()) (void)Rollback();
    return s;
  }

  int64_t LastInsertId() const;
  int Changes() const;
  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  Db(sqlite3* db, std::string path);
  Error SqlError(const std::string& what) const;
  sqlite3* db_;
  std::string path_;
  std::shared_ptr<StmtCache> cache_;  // shared with its Stmts: one may outlive the Db
};

//! The state directory's database path: <state_dir>/rsl.db.
std::string StateDbPath(const std::string& state_dir);

//! Opens the state directory's database (creating the directory) and applies `component`'s
//! migrations: what every component that keeps state there does first.
Result<std::unique_ptr<Db>> OpenStateDb(const std::string& state_dir, const std::string& component,
                                        const std::vector<std::string>& migrations);

//! The one connection to a state directory's database that a process's frequent writers
//! share: the store's writer, the audit log and the step costs. SQLite drops a connection's
//! whole page cache when it finds the database written by another connection since its last
//! transaction; with three writers on three connections, the store's next transaction read
//! its pages again: under bench/api_load.sh the engine loop's page reads (pread64, strace)
//! fell from 68 to 14 per workload once they shared one.
//! Hold mu() for every use of db(), its statements' included.
class SharedDb {
 public:
  //! The process's shared connection to `state_dir`'s database, opened at the first call
  //! and closed when the last holder lets it go, with `component`'s migrations applied.
  //! Calls naming the directory differently (a symlink, a relative path) share too.
  static Result<std::shared_ptr<SharedDb>> ForStateDir(const std::string& state_dir,
                                                       const std::string& component,
                                                       const std::vector<std::string>& migrations);

  std::mutex& mu() { return mu_; }
  Db* db() const { return db_.get(); }  // REQUIRES: mu() held

  //! A write that needs no commit of its own: it goes into the next transaction of the
  //! connection's committer (the store, which commits every turn of the engine) and is
  //! durable, or lost, with that one. A step's cost, written while the engine builds the
  //! turn that ends the step, thus commits with the step's end, instead of alone: its own
  //! transaction wrote its table's pages and an fsync per ended attempt (5 % of the
  //! controller's CPU under bench/api_load.sh). With no committer, it is written at once in
  //! a transaction of its own. `write` runs under mu(), in a savepoint: a write that fails
  //! is undone alone and its error goes to `failed` (called under mu()).
  void WriteWithNextCommit(std::function<Status(Db*)> write,
                           std::function<void(const Error&)> failed);
  //! A committer says it is there (it calls RunQueuedWrites in each transaction) or gone:
  //! once none is, the writes still queued are committed at once. REQUIRES: mu() held.
  Status SetCommitter(bool present);
  //! The committer's part: REQUIRES mu() held, inside a transaction.
  void RunQueuedWrites();
  //! Whether a write waits for the next commit.
  bool HasQueuedWrites();

  explicit SharedDb(std::unique_ptr<Db> db) : db_(std::move(db)) {}

 private:
  struct QueuedWrite {
    std::function<Status(Db*)> write;
    std::function<void(const Error&)> failed;
  };
  std::mutex mu_;
  std::unique_ptr<Db> db_;           // GUARDED_BY(mu_)
  std::mutex queue_mu_;              // after mu_, when both are taken
  int committers_ = 0;               // GUARDED_BY(queue_mu_)
  std::vector<QueuedWrite> queued_;  // GUARDED_BY(queue_mu_)
};

}  // namespace rsl
