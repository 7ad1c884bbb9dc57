#include "store/retention.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/codes.h"
#include "base/sqlite.h"
#include "base/test_util.h"

namespace rsl::store {
namespace {

store::Run R(const std::string& id, const std::string& name, int64_t created, spec::RunPhase phase,
             int64_t finished) {
  store::Run r;
  r.id = id;
  r.workload_id = "wl-" + id;
  r.name = name;
  r.namespace_ = "risk";
  r.created_at = created;
  r.finished_at = finished;
  r.phase = phase;
  return r;
}

using P = spec::RunPhase;

TEST(RetentionTest, KeepsTheNewestNPerNameAndAlwaysTheNewestSucceeded) {
  std::vector<store::Run> runs = {
      R("a1", "a", 1, P::kSucceeded, 2), R("a2", "a", 3, P::kFailed, 4),
      R("a3", "a", 5, P::kSucceeded, 6), R("a4", "a", 7, P::kFailed, 8),
      R("a5", "a", 9, P::kFailed, 10),   R("b1", "b", 2, P::kSucceeded, 3),
  };
  RetentionPolicy keep2{2, 0};
  // a5, a4 are the newest two; a3 is the newest SUCCEEDED: it stays whole too.
  EXPECT_EQ(RunsToCollect(runs, keep2, 100), (std::vector<std::string>{"a1", "a2"}));
  RetentionPolicy keep1{1, 0};
  EXPECT_EQ(RunsToCollect(runs, keep1, 100), (std::vector<std::string>{"a1", "a2", "a4"}));
  EXPECT_TRUE(RunsToCollect(runs, RetentionPolicy{}, 100).empty()) << "no policy, nothing goes";
}

TEST(RetentionTest, NeverChoosesUnfinishedCommittingOrCollectedRuns) {
  std::vector<store::Run> runs = {
      R("a1", "a", 1, P::kRunning, 0),   R("a2", "a", 2, P::kSucceeded, 3),
      R("a3", "a", 4, P::kFailed, 5),    R("a4", "a", 6, P::kCancelled, 7),
      R("a5", "a", 8, P::kSucceeded, 9),
  };
  runs[1].commit_state = kCommitCommitting;  // decided, publishing half done: recovery's
  runs[2].collected_at = 50;
  EXPECT_EQ(RunsToCollect(runs, RetentionPolicy{1, 0}, 100), (std::vector<std::string>{"a4"}));
}

TEST(RetentionTest, AgeLimitCountsFromTheFinishTimeAndNamesAreApart) {
  std::vector<store::Run> runs = {
      R("a1", "a", 1, P::kFailed, 1000), R("a2", "a", 2, P::kFailed, 5000),
      R("a3", "a", 3, P::kFailed, 9000), R("b1", "b", 1, P::kFailed, 1000),
      R("c1", "c", 1, P::kFailed, 1000), R("c2", "c", 2, P::kSucceeded, 1000),
  };
  runs[5].namespace_ = "other";  // another namespace's "c" is another workload
  RetentionPolicy week{0, 4000};
  // now 9000: a1 (finished 1000) and a2 (5000) are 8000 and 4000 old; a3 is the newest of a;
  // b1 and c1 are the newest of theirs.
  EXPECT_EQ(RunsToCollect(runs, week, 9000), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(RunsToCollect(runs, week, 8999), (std::vector<std::string>{"a1"}));
}

// The store keeps what audit and outputs need and forgets the rest; the newest event's
// sequence number is never reused.
TEST(RetentionTest, CollectRunForgetsHistoryKeepsVersionRunArtifactsAndLineage) {
  rsl::testing::TempDir tmp("retention_store");
  auto store = OpenSqliteStore(tmp.Sub("state"));
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  auto batch = [](const std::string& vid, spec::RunPhase phase) {
    Batch b;
    WorkloadVersion v;
    v.id = vid;
    v.name = "fraud";
    v.namespace_ = "risk";
    v.spec_json = "{}";
    v.digest = "sha256:00";
    v.created_at = 1000;
    v.created_by = "alice";
    b.versions.push_back(v);
    store::Run r;
    r.id = RunIdFor(vid);
    r.workload_id = vid;
    r.name = "fraud";
    r.namespace_ = "risk";
    r.phase = phase;
    r.created_at = 1000;
    r.finished_at = spec::IsTerminal(phase) ? 2000 : 0;
    r.committed_uri = "file:///out";
    b.runs.push_back(r);
    for (const char* s : {"prep", "train"}) {
      Step st;
      st.run_id = r.id;
      st.name = s;
      b.steps.push_back(st);
      Attempt a;
      a.id = r.id + "/" + s + "/1";
      a.run_id = r.id;
      a.step = s;
      a.launch_json = "{}";
      b.attempts.push_back(a);
      Event e;
      e.run_id = r.id;
      e.step = s;
      e.reason = "Started";
      b.events.push_back(e);
    }
    b.artifacts.push_back(Artifact{r.id, "train", "file:///out/train", 42, "output", ""});
    b.lineage.push_back(LineageEdge{r.id, "file:///in", "file:///out/train", "input", ""});
    return b;
  };
  Batch running = batch("wl-20260101-00000001", spec::RunPhase::kRunning);
  Batch done = batch("wl-20260101-00000002", spec::RunPhase::kSucceeded);
  ASSERT_TRUE((*store)->Apply(&running).ok());
  ASSERT_TRUE((*store)->Apply(&done).ok());
  const std::string live = running.runs[0].id, old = done.runs[0].id;
  int64_t last_seq = (*store)->LastEventSeq();
  ASSERT_EQ(done.events.back().seq, last_seq) << "the finished run holds the newest event";

  Status busy = (*store)->CollectRun(live, 5000);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code, codes::kConflict) << busy.error().ToString();
  EXPECT_EQ((*store)->ListSteps(live)->size(), 2u) << "a refused collection changes nothing";

  ASSERT_TRUE((*store)->CollectRun(old, 5000).ok());
  ASSERT_TRUE((*store)->CollectRun(old, 6000).ok()) << "idempotent";
  auto run = (*store)->GetRun(old);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->collected_at, 5000) << "the first collection's time stays";
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  EXPECT_EQ(run->committed_uri, "file:///out");
  EXPECT_TRUE((*store)->GetVersion(done.versions[0].id).ok());
  EXPECT_TRUE((*store)->ListSteps(old)->empty());
  EXPECT_TRUE((*store)->ListAttempts(old)->empty());
  auto events = (*store)->ListEvents(old, 0);
  ASSERT_EQ(events->size(), 1u) << "only the store's newest event stays";
  EXPECT_EQ((*events)[0].seq, last_seq);
  EXPECT_EQ((*store)->ListArtifacts(old)->size(), 1u);
  EXPECT_EQ((*store)->ListLineage(old)->size(), 1u);
  EXPECT_EQ((*store)->ListSteps(live)->size(), 2u) << "another run is untouched";
  EXPECT_EQ((*store)->ListEvents(live, 0)->size(), 2u);
  // The attempts' launch records (a table of their own) go with them.
  auto db = Db::Open(StateDbPath(tmp.Sub("state")));
  ASSERT_TRUE(db.ok());
  auto launches = [&](const std::string& run_id) {
    auto n = (*db)->First(
        "SELECT COUNT(*) FROM store_launches WHERE attempt_id > ?1 || '/' AND attempt_id < ?1 "
        "|| '0'",
        [](const Stmt& row) { return row.Int(0); }, run_id);
    return n.ok() && n->has_value() ? **n : -1;
  };
  EXPECT_EQ(launches(old), 0);
  EXPECT_EQ(launches(live), 2);
  EXPECT_EQ((*store)->ListAttempts(live)->at(0).launch_json, "{}");

  Batch next;
  next.events.push_back(Event{0, live, "", "Normal", "Progress", "more", 7000});
  ASSERT_TRUE((*store)->Apply(&next).ok());
  EXPECT_GT(next.events[0].seq, last_seq) << "sequence numbers are never reused";

  // The engine writing the run row again (it never does once finished, but a recovery
  // might) keeps the collection mark.
  Batch again;
  again.runs.push_back(done.runs[0]);
  ASSERT_TRUE((*store)->Apply(&again).ok());
  EXPECT_EQ((*store)->GetRun(old)->collected_at, 5000);
}

TEST(RetentionTest, CollectRemovesRunDirectoriesBelowTheRunsDirOnly) {
  rsl::testing::TempDir tmp("retention_collect");
  auto store = OpenSqliteStore(tmp.Sub("state"));
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  std::string runs_dir = tmp.Sub("runs");
  std::string outside = tmp.Sub("elsewhere");
  std::filesystem::create_directories(outside + "/keep");
  std::vector<std::string> ids;
  for (int i = 1; i <= 4; ++i) {
    Batch b;
    WorkloadVersion v;
    v.id = "wl-20260101-0000000" + std::to_string(i);
    v.name = "fraud";
    v.namespace_ = "risk";
    v.spec_json = "{}";
    v.digest = "sha256:00";
    v.created_at = i;
    v.created_by = "alice";
    b.versions.push_back(v);
    store::Run r;
    r.id = RunIdFor(v.id);
    r.workload_id = v.id;
    r.name = "fraud";
    r.namespace_ = "risk";
    r.phase = spec::RunPhase::kFailed;
    r.created_at = i;
    r.finished_at = i;
    r.run_dir = i == 2 ? outside : runs_dir + "/" + r.id;  // a row pointing elsewhere
    if (i != 2) {
      std::filesystem::create_directories(r.run_dir + "/steps/train/logs");
      std::ofstream(r.run_dir + "/steps/train/logs/1.log") << std::string(1000, 'x');
    }
    b.runs.push_back(r);
    ASSERT_TRUE((*store)->Apply(&b).ok());
    ids.push_back(r.id);
  }
  RetentionPolicy keep1{1, 0};
  auto dry = Collect(store->get(), Env::Default(), runs_dir, keep1, /*dry_run=*/true);
  ASSERT_TRUE(dry.ok()) << dry.error().ToString();
  EXPECT_EQ(dry->run_ids, (std::vector<std::string>{ids[0], ids[1], ids[2]}));
  EXPECT_EQ(dry->bytes_freed, 2000);
  EXPECT_TRUE(std::filesystem::exists(runs_dir + "/" + ids[0])) << "a dry run removes nothing";
  EXPECT_EQ((*store)->GetRun(ids[0])->collected_at, 0);

  auto done = Collect(store->get(), Env::Default(), runs_dir, keep1);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_EQ(done->run_ids, dry->run_ids);
  EXPECT_FALSE(std::filesystem::exists(runs_dir + "/" + ids[0]));
  EXPECT_FALSE(std::filesystem::exists(runs_dir + "/" + ids[2]));
  EXPECT_TRUE(std::filesystem::exists(runs_dir + "/" + ids[3])) << "the newest stays";
  EXPECT_TRUE(std::filesystem::exists(outside + "/keep")) << "never outside the runs dir";
  EXPECT_GT((*store)->GetRun(ids[1])->collected_at, 0) << "its rows are collected all the same";

  auto twice = Collect(store->get(), Env::Default(), runs_dir, keep1);
  ASSERT_TRUE(twice.ok());
  EXPECT_TRUE(twice->run_ids.empty()) << "a second pass finds nothing more";
}

}  // namespace
}  // namespace rsl::store
