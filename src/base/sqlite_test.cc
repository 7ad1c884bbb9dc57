#include "base/sqlite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/test_util.h"

namespace rsl {

TEST(SqliteTest, MigratesOnceAndPersists) {
  testing::TempDir dir("sqlite_test");
  std::string path = StateDbPath(dir.path());
  std::vector<std::string> migrations = {
      "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)",
      "ALTER TABLE t ADD COLUMN w TEXT",
  };
  {
    auto db = Db::Open(path);
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    ASSERT_TRUE((*db)->Migrate("test", migrations).ok());
    auto ins = (*db)->Prepare("INSERT INTO t(k, v, w) VALUES (?1, ?2, ?3)");
    ASSERT_TRUE(ins.ok());
    ins->Bind(1, "a").Bind(2, int64_t{7}).Bind(3, "x");
    ASSERT_TRUE(ins->Run().ok());
  }
  auto db = Db::Open(path);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Migrate("test", migrations).ok());  // already applied: no-op
  auto q = (*db)->Prepare("SELECT v, w FROM t WHERE k = ?1");
  ASSERT_TRUE(q.ok());
  q->Bind(1, "a");
  ASSERT_TRUE(q->Step());
  EXPECT_EQ(q->Int(0), 7);
  EXPECT_EQ(q->Text(1), "x");
  EXPECT_FALSE((*db)->Exec("SELECT * FROM nope").ok());
}

struct Pair {
  std::string k;
  int64_t v = 0;
};

Pair ReadPair(const Stmt& row) { return Pair{row.Text(0), row.Int(1)}; }

class SqliteHelperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = OpenStateDb(dir_.Sub("state"), "test",
                          {"CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER, d REAL, b INTEGER)"});
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    db_ = std::move(*db);
  }
  testing::TempDir dir_{"sqlite_helper_test"};
  std::unique_ptr<Db> db_;  // closed before dir_ goes
};

TEST_F(SqliteHelperTest, OpenStateDbMakesTheDirectoryAndMigrates) {
  EXPECT_TRUE(std::filesystem::exists(StateDbPath(dir_.Sub("state"))));
  // Opening again applies nothing twice.
  auto again = OpenStateDb(dir_.Sub("state"), "test", {"CREATE TABLE t (k TEXT)"});
  EXPECT_TRUE(again.ok()) << again.error().ToString();
}

TEST_F(SqliteHelperTest, RunBindsEveryKindOfValueInOrder) {
  const char* literal = "c";
  ASSERT_TRUE(
      db_->Run("INSERT INTO t(k, v, d, b) VALUES (?1, ?2, ?3, ?4)", "a", 7, 2.5, true).ok());
  ASSERT_TRUE(db_->Run("INSERT INTO t(k, v, d, b) VALUES (?, ?, ?, ?)", std::string("b"),
                       int64_t{-3}, 0.0, false)
                  .ok());
  ASSERT_TRUE(db_->Run("INSERT INTO t(k, v, d, b) VALUES (?, ?, ?, ?)", literal, 1, 1.0, 1).ok());
  auto rows = db_->Rows("SELECT k, v, d, b FROM t ORDER BY k", [](const Stmt& row) {
    return row.Text(0) + ":" + std::to_string(row.Int(1)) + ":" +
           std::to_string(row.Double(2)).substr(0, 3) + ":" + std::to_string(row.Int(3));
  });
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  EXPECT_EQ(*rows, (std::vector<std::string>{"a:7:2.5:1", "b:-3:0.0:0", "c:1:1.0:1"}));
}

TEST_F(SqliteHelperTest, IntoReadsColumnsInOrderByFieldType) {
  ASSERT_TRUE(db_->Run("INSERT INTO t(k, v, d, b) VALUES (?, ?, ?, ?)", "a", 7, 2.5, true).ok());
  struct Row {
    std::string k;
    int v = 0;
    double d = 0;
    int64_t b = 0;
  };
  auto row = db_->First("SELECT k, v, d, b FROM t", [](const Stmt& st) {
    Row r;
    st.Into(&r.k, &r.v, &r.d, &r.b);
    return r;
  });
  ASSERT_TRUE(row.ok());
  ASSERT_TRUE(row->has_value());
  EXPECT_EQ((*row)->k, "a");
  EXPECT_EQ((*row)->v, 7);
  EXPECT_EQ((*row)->d, 2.5);
  EXPECT_EQ((*row)->b, 1);
}

// Statements the connection has prepared and not finalized (in use or cached).
size_t OpenStatements(Db* db) {
  size_t n = 0;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db->raw(), nullptr); s != nullptr;
       s = sqlite3_next_stmt(db->raw(), s)) {
    ++n;
  }
  return n;
}

TEST_F(SqliteHelperTest, AReusedStatementStartsUnboundAndFromItsFirstRow) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        db_->Run("INSERT INTO t(k, v) VALUES (?, ?)", "k" + std::to_string(i), i * 10).ok());
  }
  const std::string sql = "SELECT k, v FROM t WHERE v >= ?1 ORDER BY v";
  {
    auto st = db_->Query(sql, 10);
    ASSERT_TRUE(st.ok());
    ASSERT_TRUE(st->Step());  // left mid-way: the next user must start again
    EXPECT_EQ(st->Text(0), "k1");
  }
  const size_t open = OpenStatements(db_.get());
  {
    auto st = db_->Prepare(sql);  // the same statement again, reset and unbound
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(OpenStatements(db_.get()), open);
    EXPECT_FALSE(st->Step());  // ?1 unbound is NULL: no row
  }
  auto rows = db_->Rows(sql, ReadPair, 0);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 3u);
  EXPECT_EQ(OpenStatements(db_.get()), open);
  // Two statements of the same text at once are two statements.
  auto a = db_->Query(sql, 20);
  auto b = db_->Query(sql, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->Step());
  ASSERT_TRUE(b->Step());
  EXPECT_EQ(a->Text(0), "k2");
  EXPECT_EQ(b->Text(0), "k0");
}

TEST_F(SqliteHelperTest, AStatementMayOutliveItsDatabaseAndTheCacheStaysBounded) {
  auto st = db_->Query("SELECT COUNT(*) FROM t WHERE v > ?1", 0);
  ASSERT_TRUE(st.ok());
  // More distinct texts than the cache keeps, each released at once.
  for (size_t i = 0; i < 3 * kMaxCachedStatements; ++i) {
    auto r = db_->First("SELECT " + std::to_string(i), [](const Stmt& row) { return row.Int(0); });
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->value_or(-1), static_cast<int64_t>(i));
  }
  EXPECT_LE(OpenStatements(db_.get()), kMaxCachedStatements + 1);
  // The connection closes once its last statement goes; `st` goes after the Db (ASan checks
  // that nothing of the Db is touched then).
  db_.reset();
}

TEST_F(SqliteHelperTest, RowsReadsEveryRowAndFirstTheFirstOrNone) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        db_->Run("INSERT INTO t(k, v) VALUES (?, ?)", "k" + std::to_string(i), i * 10).ok());
  }
  auto rows = db_->Rows("SELECT k, v FROM t WHERE v >= ?1 ORDER BY v", ReadPair, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].k, "k1");
  EXPECT_EQ((*rows)[1].v, 20);

  auto first = db_->First("SELECT k, v FROM t WHERE k = ?", ReadPair, "k2");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->v, 20);
  auto none = db_->First("SELECT k, v FROM t WHERE k = ?", ReadPair, "nope");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // A statement bound by hand (a variable number of parameters) reads the same way.
  auto st = db_->Prepare("SELECT k, v FROM t WHERE k IN (?, ?) ORDER BY k");
  ASSERT_TRUE(st.ok());
  st->Bind(1, "k0").Bind(2, "k2");
  int seen = 0;
  ASSERT_TRUE(st->Each([&](const Stmt& row) { seen += static_cast<int>(row.Int(1)); }).ok());
  EXPECT_EQ(seen, 20);
}

TEST_F(SqliteHelperTest, ErrorsComeBackAsStatus) {
  EXPECT_FALSE(db_->Run("INSERT INTO nope VALUES (?)", 1).ok());
  auto rows = db_->Rows("SELECT x FROM nope", ReadPair);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.error().message.find("prepare"), std::string::npos);
  ASSERT_TRUE(db_->Run("INSERT INTO t(k, v) VALUES ('x', 1)").ok());
  Status dup = db_->Run("INSERT INTO t(k, v) VALUES ('x', 2)");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("UNIQUE"), std::string::npos);
}

TEST_F(SqliteHelperTest, TransactionCommitsOrRollsBack) {
  ASSERT_TRUE(
      db_->Transaction([&] { return db_->Run("INSERT INTO t(k, v) VALUES ('a', 1)"); }).ok());
  Status failed = db_->Transaction([&]() -> Status {
    RSL_RETURN_IF_ERROR(db_->Run("INSERT INTO t(k, v) VALUES ('b', 2)"));
    return Error("INTERNAL", "stop");
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "stop");
  auto keys = db_->Rows("SELECT k FROM t ORDER BY k", [](const Stmt& row) { return row.Text(0); });
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, std::vector<std::string>{"a"});
  // The connection is usable again after the rollback.
  EXPECT_TRUE(db_->Transaction([&] { return db_->Run("DELETE FROM t"); }).ok());
}

// A writer meeting another connection's transaction waits for it (the busy handler), gets
// in once it ends, and gives up only after kBusyTimeoutMs in all (the handler's short naps
// add up to the same timeout SQLite's own handler had).
TEST(SqliteTest, AWriterWaitsForAnotherTransactionThenGivesUpAfterTheBusyTimeout) {
  testing::TempDir dir("sqlite_busy_wait");
  auto holder = Db::Open(dir.Sub("rsl.db"));
  auto waiter = Db::Open(dir.Sub("rsl.db"));
  ASSERT_TRUE(holder.ok() && waiter.ok());
  ASSERT_TRUE((*holder)->Exec("CREATE TABLE t (x INTEGER)").ok());
  ASSERT_TRUE((*holder)->Begin().ok());
  std::thread commit_soon([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_TRUE((*holder)->Commit().ok());
  });
  EXPECT_TRUE((*waiter)->Run("INSERT INTO t VALUES (1)").ok());  // waited, then got in
  commit_soon.join();
  ASSERT_TRUE((*holder)->Begin().ok());  // now for longer than the timeout
  auto start = std::chrono::steady_clock::now();
  Status insert = (*waiter)->Run("INSERT INTO t VALUES (2)");
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(insert.code(), "CONFLICT");
  EXPECT_GE(waited, std::chrono::milliseconds(kBusyTimeoutMs));
  ASSERT_TRUE((*holder)->Commit().ok());
  auto n = (*waiter)->First("SELECT COUNT(*) FROM t", [](const Stmt& row) { return row.Int(0); });
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
}

TEST(SqliteTest, ADatabaseLockedTooLongIsAConflictNamingItNotInternal) {
  testing::TempDir dir("sqlite_busy");
  auto holder = Db::Open(dir.Sub("rsl.db"));
  auto waiter = Db::Open(dir.Sub("rsl.db"));
  ASSERT_TRUE(holder.ok() && waiter.ok());
  ASSERT_TRUE((*holder)->Exec("CREATE TABLE t (x INTEGER)").ok());
  ASSERT_TRUE((*waiter)->Exec("PRAGMA busy_timeout=20").ok());  // not 5 s in a test
  ASSERT_TRUE((*holder)->Begin().ok());  // another process writing, for longer than that
  Status begin = (*waiter)->Begin();
  ASSERT_FALSE(begin.ok());
  EXPECT_EQ(begin.code(), "CONFLICT");
  EXPECT_NE(begin.error().message.find(dir.Sub("rsl.db")), std::string::npos)
      << begin.error().message;
  EXPECT_NE(
      begin.error().hint.find("another seedctl run or rsl-controller writes to " + dir.path()),
      std::string::npos)
      << begin.error().hint;
  Status insert = (*waiter)->Run("INSERT INTO t VALUES (1)");
  EXPECT_EQ(insert.code(), "CONFLICT");
  ASSERT_TRUE((*holder)->Commit().ok());
  EXPECT_TRUE((*waiter)->Run("INSERT INTO t VALUES (1)").ok());  // one writer at a time
}

// Two processes opening one fresh state directory at once (two `seedctl run` in two
// terminals): the fresh file is in rollback-journal mode, and while one holds its write lock
// (switching it to WAL, or here a transaction), the other's switch to WAL gets SQLITE_BUSY at
// once, without the busy handler (SQLite: a read lock upgraded to write). Db::Open waits for
// it instead, within the busy timeout, and ends in WAL mode.
TEST(SqliteTest, OpeningAFreshDatabaseWaitsForAnotherConnectionsWriteLock) {
  testing::TempDir dir("sqlite_fresh");
  const std::string path = dir.Sub("rsl.db");
  sqlite3* other = nullptr;  // what another process's connection does before its switch
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other,
                         "CREATE TABLE t (x INTEGER); BEGIN IMMEDIATE; "
                         "INSERT INTO t VALUES (1)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  Result<std::unique_ptr<Db>> opened = Error("", "not yet");
  std::thread opener([&] { opened = Db::Open(path); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  opener.join();
  sqlite3_close(other);
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  auto mode = (*opened)->First("PRAGMA journal_mode", [](const Stmt& r) { return r.Text(0); });
  ASSERT_TRUE(mode.ok() && mode->has_value());
  EXPECT_EQ(**mode, "wal");
  auto rows = (*opened)->Rows("SELECT x FROM t", [](const Stmt& r) { return r.Int(0); });
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 1u);
}

// A state directory written by a newer RSL (more migrations than this binary knows) is
// refused with a clear code instead of being used with tables it would misread.
TEST(SqliteTest, ADatabaseOfANewerSchemaIsRefusedNamingBothVersions) {
  testing::TempDir dir("sqlite_newer");
  {
    auto db = OpenStateDb(dir.path(), "store",
                          {"CREATE TABLE t (x INTEGER)", "ALTER TABLE t ADD COLUMN y INTEGER"});
    ASSERT_TRUE(db.ok());
  }
  auto older = OpenStateDb(dir.path(), "store", {"CREATE TABLE t (x INTEGER)"});
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error().code, "STATE_SCHEMA_TOO_NEW");
  EXPECT_NE(older.error().message.find("store schema version 2; this RSL knows up to 1"),
            std::string::npos)
      << older.error().message;
  EXPECT_EQ(older.error().path, dir.Sub("rsl.db"));
  // Another component of the same file is not affected, and the same binary still opens it.
  EXPECT_TRUE(OpenStateDb(dir.path(), "model", {"CREATE TABLE m (x INTEGER)"}).ok());
  EXPECT_TRUE(OpenStateDb(dir.path(), "store",
                          {"CREATE TABLE t (x INTEGER)", "ALTER TABLE t ADD COLUMN y INTEGER"})
                  .ok());
}

// A full disk under the state directory (here: a page limit, which SQLite reports as it
// reports ENOSPC, SQLITE_FULL) is an IO_ERROR naming the database, never INTERNAL, and
// writing works again once there is room.
TEST(SqliteTest, AFullDiskIsAnIoErrorNamingTheDatabase) {
  testing::TempDir dir("sqlite_full");
  auto db = Db::Open(dir.Sub("rsl.db"));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (x BLOB)").ok());
  ASSERT_TRUE((*db)->Exec("PRAGMA max_page_count=20").ok());
  Status full = Status::Ok();
  for (int i = 0; i < 100 && full.ok(); ++i) {
    full = (*db)->Run("INSERT INTO t VALUES (zeroblob(4096))");
  }
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.code(), "IO_ERROR");
  EXPECT_EQ(full.error().message, "the state directory's database " + dir.Sub("rsl.db") +
                                      " cannot grow: the disk is full (sqlite: database or disk "
                                      "is full)");
  EXPECT_EQ(full.error().hint, "free space on the file system of " + dir.path());
  ASSERT_TRUE((*db)->Exec("PRAGMA max_page_count=100000").ok());
  EXPECT_TRUE((*db)->Run("INSERT INTO t VALUES (zeroblob(4096))").ok());
}

// One connection per state directory in a process, whatever the spelling of its path, and
// a fresh one once every holder has let it go; each component's migrations are applied.
TEST(SharedDbTest, OneConnectionPerStateDirectoryWhileHeld) {
  testing::TempDir dir("shared_db");
  const std::string a = dir.Sub("a"), b = dir.Sub("b");
  auto first = SharedDb::ForStateDir(a, "one", {"CREATE TABLE one (x INTEGER)"});
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  std::filesystem::create_symlink(a, dir.Sub("link"));
  auto again = SharedDb::ForStateDir(dir.Sub("link") + "/.", "two", {"CREATE TABLE two (y)"});
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(first->get(), again->get());
  auto other = SharedDb::ForStateDir(b, "one", {"CREATE TABLE one (x INTEGER)"});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(first->get(), other->get());
  {
    std::lock_guard<std::mutex> lock((*first)->mu());
    EXPECT_TRUE((*first)->db()->Run("INSERT INTO one VALUES (1)").ok());
    EXPECT_TRUE((*first)->db()->Run("INSERT INTO two VALUES (2)").ok());  // both migrated
  }
  first->reset();
  again->reset();
  auto fresh = SharedDb::ForStateDir(a, "one", {"CREATE TABLE one (x INTEGER)"});
  ASSERT_TRUE(fresh.ok());
  std::lock_guard<std::mutex> lock((*fresh)->mu());
  auto n =
      (*fresh)->db()->First("SELECT COUNT(*) FROM one", [](const Stmt& r) { return r.Int(0); });
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(**n, 1);
}

// A write queued for the committer's next commit: invisible to other connections until the
// committer's transaction commits it; one that fails is undone alone (the committer's own
// write and the other queued ones stay) and reported; with no committer, or once the last
// one is gone, queued writes are committed at once.
TEST(SharedDbTest, QueuedWritesCommitWithTheCommittersNextTransaction) {
  testing::TempDir dir("shared_db_queue");
  auto shared = SharedDb::ForStateDir(dir.path(), "t", {"CREATE TABLE t (x INTEGER)"});
  ASSERT_TRUE(shared.ok());
  SharedDb& db = **shared;
  auto other = Db::Open(StateDbPath(dir.path()));
  ASSERT_TRUE(other.ok());
  auto rows = [&] {
    auto n = (*other)->First("SELECT group_concat(x) FROM (SELECT x FROM t ORDER BY x)",
                             [](const Stmt& r) { return r.IsNull(0) ? "" : r.Text(0); });
    return n.ok() && n->has_value() ? **n : "?";
  };
  std::vector<std::string> failures;
  auto failed = [&](const Error& e) { failures.push_back(e.message); };
  auto insert = [](int x) { return [x](Db* d) { return d->Run("INSERT INTO t VALUES (?1)", x); }; };

  db.WriteWithNextCommit(insert(1), failed);  // no committer: at once
  EXPECT_EQ(rows(), "1");
  {
    std::lock_guard<std::mutex> lock(db.mu());
    ASSERT_TRUE(db.SetCommitter(true).ok());
  }
  db.WriteWithNextCommit(insert(2), failed);
  db.WriteWithNextCommit([](Db* d) { return d->Run("INSERT INTO nope VALUES (1)"); }, failed);
  db.WriteWithNextCommit(insert(3), failed);
  EXPECT_EQ(rows(), "1");  // queued
  {
    std::lock_guard<std::mutex> lock(db.mu());
    Status s = db.db()->Transaction([&] {
      db.RunQueuedWrites();
      return db.db()->Run("INSERT INTO t VALUES (10)");
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_EQ(rows(), "1,2,3,10");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("nope"), std::string::npos) << failures[0];
  // The committer goes: what it had not committed yet is committed then.
  db.WriteWithNextCommit(insert(4), failed);
  EXPECT_EQ(rows(), "1,2,3,10");
  {
    std::lock_guard<std::mutex> lock(db.mu());
    ASSERT_TRUE(db.SetCommitter(false).ok());
  }
  EXPECT_EQ(rows(), "1,2,3,4,10");
  db.WriteWithNextCommit(insert(5), failed);  // none left: at once
  EXPECT_EQ(rows(), "1,2,3,4,5,10");
  EXPECT_EQ(failures.size(), 1u);
}

}  // namespace rsl
