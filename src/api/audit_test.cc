// The audit log's group commit: concurrent appends share one transaction and each returns
// once it is durable; a failed transaction fails every append in it. TEST_HoldWrites holds
// the head of the queue, so which appends share a transaction is decided here, not by timing.
#include "api/audit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "base/codes.h"
#include "base/sqlite.h"

namespace rsl::api {
namespace {

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "rsl-audit-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    audit_ = std::move(AuditLog::Open(dir_).value());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Appends `n` entries from n threads while writes are held; returns once all n wait.
  void AppendHeld(int n) {
    audit_->TEST_HoldWrites(true);
    results_.assign(size_t(n), Status::Ok());
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this, i] {
        AuditEntry e;
        e.subject = "ada";
        e.verb = "submit";
        e.resource = "workloads";
        e.namespace_ = "risk";
        e.object_id = "wl-" + std::to_string(i);
        e.result = "OK";
        results_[size_t(i)] = audit_->Append(e);
      });
    }
    // The queue is a fact, polled: no time bound a loaded machine could break.
    for (int k = 0; k < 60000 && audit_->queued() < n; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(audit_->queued(), n);
  }
  void ReleaseAndJoin() {
    audit_->TEST_HoldWrites(false);
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  std::string dir_;
  std::unique_ptr<AuditLog> audit_;
  std::vector<std::thread> threads_;
  std::vector<Status> results_;
};

TEST_F(AuditLogTest, ConcurrentAppendsShareOneTransaction) {
  constexpr int kAppends = 8;
  AppendHeld(kAppends);
  ReleaseAndJoin();
  for (const auto& s : results_) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(audit_->commits(), 1);
  EXPECT_EQ(audit_->queued(), 0);
  auto entries = audit_->List({});
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), size_t(kAppends));
  std::set<std::string> ids;
  for (const auto& e : *entries) ids.insert(e.object_id);
  EXPECT_EQ(ids.size(), size_t(kAppends));
  // A lone append afterwards is a transaction of its own.
  EXPECT_TRUE(audit_->Append({0, 0, "ada", "cancel", "workloads", "risk", "wl-0", "OK", ""}).ok());
  EXPECT_EQ(audit_->commits(), 2);
}

TEST_F(AuditLogTest, AFailedTransactionFailsEveryAppendInIt) {
  // The table goes (from another connection): the transaction holding the group fails.
  auto other = Db::Open(StateDbPath(dir_));
  ASSERT_TRUE(other.ok());
  AppendHeld(5);
  ASSERT_TRUE((*other)->Exec("DROP TABLE api_audit").ok());
  ReleaseAndJoin();
  for (const auto& s : results_) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("api_audit"), std::string::npos) << s.ToString();
  }
  EXPECT_EQ(audit_->commits(), 0);
  EXPECT_EQ(audit_->queued(), 0);
}

// The third migration drops AUTOINCREMENT: entries written under the old table keep their
// seqs and order, and the next one gets the seq after the last.
TEST(AuditLogMigrationTest, EntriesKeepTheirSeqs) {
  const std::string dir = ::testing::TempDir() + "rsl-audit-migrate-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    auto db = Db::Open(StateDbPath(dir));
    ASSERT_TRUE(db.ok());
    const std::vector<std::string> v2 = {
        "CREATE TABLE api_audit ("
        "  seq INTEGER PRIMARY KEY AUTOINCREMENT, time_ms INTEGER NOT NULL, subject TEXT NOT "
        "NULL, verb TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,"
        "  object_id TEXT NOT NULL, result TEXT NOT NULL, message TEXT NOT NULL)",
        "CREATE INDEX api_audit_object ON api_audit(object_id)",
    };
    ASSERT_TRUE((*db)->Migrate("api_audit", v2).ok());
    for (int i = 1; i <= 3; ++i) {
      ASSERT_TRUE((*db)
                      ->Run("INSERT INTO api_audit VALUES(?1, ?1, 'ada', 'submit', 'workloads',"
                            " 'risk', 'wl-' || ?1, 'OK', '')",
                            int64_t{i * 10})
                      .ok());
    }
  }
  auto audit = AuditLog::Open(dir);
  ASSERT_TRUE(audit.ok()) << audit.error().ToString();
  ASSERT_TRUE(
      (*audit)->Append({0, 0, "ada", "cancel", "workloads", "risk", "wl-x", "OK", ""}).ok());
  auto entries = (*audit)->List({});
  ASSERT_TRUE(entries.ok());
  std::vector<int64_t> seqs;
  for (const auto& e : *entries) seqs.push_back(e.seq);
  EXPECT_EQ(seqs, (std::vector<int64_t>{10, 20, 30, 31}));
  EXPECT_EQ(entries->front().object_id, "wl-10");
  AuditQuery q;
  q.object_id = "wl-20";
  auto one = (*audit)->List(q);  // the index came back too
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  audit->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rsl::api
