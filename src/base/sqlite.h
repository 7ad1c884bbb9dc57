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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl {

class Db;

//! A prepared statement. Bind with 1-based indices; Step() until it returns false.
class Stmt {
 public:
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
  //! Returns true when a row is available, false when done. Errors are recorded in status().
  bool Step();
  //! Runs to completion (for INSERT/UPDATE/DELETE).
  Status Run();
  void Reset();

  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  bool IsNull(int col) const;

  const Status& status() const { return status_; }

 private:
  friend class Db;
  Stmt(sqlite3* db, sqlite3_stmt* st) : db_(db), st_(st) {}
  sqlite3* db_ = nullptr;
  sqlite3_stmt* st_ = nullptr;
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
  Result<Stmt> Prepare(const std::string& sql);
  //! Applies, in order and each in its own transaction, the migrations of `component` that
  //! have not been applied yet (tracked in table schema_migrations).
  Status Migrate(const std::string& component, const std::vector<std::string>& migrations);

  //! BEGIN IMMEDIATE / COMMIT / ROLLBACK.
  Status Begin();
  Status Commit();
  Status Rollback();

  int64_t LastInsertId() const;
  int Changes() const;
  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Error SqlError(const std::string& what) const;
  sqlite3* db_;
  std::string path_;
};

//! The state directory's database path: <state_dir>/rsl.db.
std::string StateDbPath(const std::string& state_dir);

}  // namespace rsl
