#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "base/codes.h"
#include "store/store.h"

namespace rsl::store {
namespace {

std::string FreshDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "store_test_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

Batch NewRunBatch(const std::string& id, const std::string& name) {
  Batch b;
  WorkloadVersion v;
  v.id = id;
  v.name = name;
  v.namespace_ = "risk";
  v.spec_json = "{}";
  v.digest = "sha256:00";
  v.created_at = 1000;
  v.created_by = "alice";
  v.labels = {{"team", "risk"}};
  b.versions.push_back(v);
  Run r;
  r.id = RunIdFor(id);
  r.workload_id = id;
  r.name = name;
  r.namespace_ = "risk";
  r.created_at = 1000;
  b.runs.push_back(r);
  Step s;
  s.run_id = r.id;
  s.name = "train";
  b.steps.push_back(s);
  Event e;
  e.run_id = r.id;
  e.reason = "Admitted";
  e.message = "ok";
  b.events.push_back(e);
  return b;
}

TEST(StoreTest, ApplyIsDurableAndVersionsCount) {
  std::string dir = FreshDir("durable");
  {
    auto store = OpenSqliteStore(dir);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    Batch b1 = NewRunBatch("wl-20240615-00000001", "fraud");
    ASSERT_TRUE((*store)->Apply(&b1).ok());
    EXPECT_EQ(b1.versions[0].version, 1);
    EXPECT_GT(b1.events[0].seq, 0);
    Batch b2 = NewRunBatch("wl-20240615-00000002", "fraud");
    ASSERT_TRUE((*store)->Apply(&b2).ok());
    EXPECT_EQ(b2.versions[0].version, 2);
    EXPECT_EQ((*store)->LastEventSeq(), b2.events[0].seq);
  }
  auto store = OpenSqliteStore(dir);  // reopen: everything is still there
  ASSERT_TRUE(store.ok());
  auto versions = (*store)->ListVersions("risk", "fraud");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[1].labels.at("team"), "risk");
  auto run = (*store)->GetRun("wl-20240615-00000002");  // by version id
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->id, "run-20240615-00000002");
  auto steps = (*store)->ListSteps(run->id);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].phase, kPending);
  auto events = (*store)->ListEvents("", 0);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), 2u);
  auto unfinished = (*store)->ListRuns(RunFilter{"", "", true, 0});
  ASSERT_TRUE(unfinished.ok());
  EXPECT_EQ(unfinished->size(), 2u);
}

TEST(StoreTest, FailedBatchAppliesNothing) {
  std::string dir = FreshDir("atomic");
  auto store = OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok());
  Batch b1 = NewRunBatch("wl-20240615-00000001", "fraud");
  ASSERT_TRUE((*store)->Apply(&b1).ok());
  Batch dup = NewRunBatch("wl-20240615-00000001", "fraud");  // duplicate version id
  dup.events[0].reason = "Second";
  EXPECT_FALSE((*store)->Apply(&dup).ok());
  auto events = (*store)->ListEvents("", 0);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].reason, "Admitted");
}

TEST(StoreTest, UnknownRunIsNotFound) {
  auto store = OpenSqliteStore(FreshDir("notfound"));
  ASSERT_TRUE(store.ok());
  auto run = (*store)->GetRun("wl-20990101-deadbeef");
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().code, codes::kNotFound);
}

TEST(StoreTest, ConfigMapsAndSecretsAreSeparateWithHints) {
  auto store = OpenSqliteStore(FreshDir("cm"));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->PutConfigMap({"risk", "common-config", false, {{"A", "1"}}, 1}).ok());
  ASSERT_TRUE((*store)->PutConfigMap({"risk", "data-creds", true, {{"KEY", "s3cr3t"}}, 1}).ok());
  auto cm = (*store)->GetConfigMap("risk", "common-config", false);
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ(cm->data.at("A"), "1");
  auto missing = (*store)->GetConfigMap("risk", "common-confg", false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, codes::kNotFound);
  EXPECT_EQ(missing.error().hint, "did you mean \"common-config\"?");
  EXPECT_FALSE((*store)->GetConfigMap("risk", "data-creds", false).ok());  // not a configmap
  EXPECT_FALSE((*store)->GetConfigMap("other", "data-creds", true).ok());  // other namespace
  ASSERT_TRUE((*store)->DeleteConfigMap("risk", "data-creds", true).ok());
  EXPECT_EQ((*store)->DeleteConfigMap("risk", "data-creds", true).code(), codes::kNotFound);
}

TEST(StoreTest, VersionIdsHaveTheDocumentedShape) {
  std::string id = NewVersionId(1718409600000);  // 2024-06-15
  EXPECT_TRUE(std::regex_match(id, std::regex("wl-20240615-[0-9a-f]{8}"))) << id;
  EXPECT_NE(NewVersionId(1718409600000), id);
  EXPECT_EQ(RunIdFor("wl-20240615-7a8b9c0d"), "run-20240615-7a8b9c0d");
}

}  // namespace
}  // namespace rsl::store
