#include "base/sqlite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace rsl {

TEST(SqliteTest, MigratesOnceAndPersists) {
  std::string dir = ::testing::TempDir() + "sqlite_test_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string path = StateDbPath(dir);
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
  std::filesystem::remove_all(dir);
}

}  // namespace rsl
