#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <thread>
#include <unordered_set>

#include "base/codes.h"
#include "base/sqlite.h"
#include "base/test_util.h"
#include "store/failing_store.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace rsl::store {

const std::vector<std::string>& StoreMigrationsForTest();  // sqlite_store.cc

namespace {

using testing::NewRunBatch;
using testing::StartedEvent;
using testing::StepRow;

TEST(StoreTest, ApplyIsDurableAndVersionsCount) {
  rsl::testing::TempDir tmp("store_test_durable");
  std::string dir = tmp.Sub("state");
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
  EXPECT_EQ((*steps)[0].phase, spec::StepPhase::kPending);
  auto events = (*store)->ListEvents("", 0);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), 2u);
  auto unfinished = (*store)->ListRuns(RunFilter{"", "", true, 0});
  ASSERT_TRUE(unfinished.ok());
  EXPECT_EQ(unfinished->size(), 2u);
}

TEST(StoreTest, FailedBatchAppliesNothing) {
  rsl::testing::TempDir tmp("store_test_atomic");
  std::string dir = tmp.Sub("state");
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

TEST(StoreTest, FailingStoreFailsTheNthApplyAndForwardsTheRest) {
  rsl::testing::TempDir tmp("store_test_failing");
  auto store = OpenSqliteStore(tmp.Sub("state"));
  ASSERT_TRUE(store.ok());
  FailingStore failing(store->get());
  failing.FailNthApply(2);
  Batch b1 = NewRunBatch("wl-20240615-00000001", "fraud");
  ASSERT_TRUE(failing.Apply(&b1).ok());
  Batch b2 = NewRunBatch("wl-20240615-00000002", "fraud");
  Status s = failing.Apply(&b2);
  EXPECT_EQ(s.code(), codes::kIoError);
  EXPECT_FALSE(failing.GetRun("wl-20240615-00000002").ok());  // nothing of it applied
  ASSERT_TRUE(failing.Apply(&b2).ok());                       // once: the retry goes through
  EXPECT_EQ(failing.GetRun("wl-20240615-00000002")->id, "run-20240615-00000002");
  failing.FailNthApply(1, /*sticky=*/true);
  Batch b3 = NewRunBatch("wl-20240615-00000003", "fraud");
  EXPECT_FALSE(failing.Apply(&b3).ok());
  EXPECT_FALSE(failing.Apply(&b3).ok());
  failing.Heal();
  EXPECT_TRUE(failing.Apply(&b3).ok());
  EXPECT_EQ(failing.applies(), 6);
  EXPECT_EQ(failing.failures(), 3);
  EXPECT_EQ(failing.ListVersions("risk", "fraud")->size(), 3u);
  EXPECT_EQ(failing.LastEventSeq(), (*store)->LastEventSeq());
}

TEST(StoreTest, UnknownRunIsNotFound) {
  rsl::testing::TempDir tmp("store_test_notfound");
  auto store = OpenSqliteStore(tmp.Sub("state"));
  ASSERT_TRUE(store.ok());
  auto run = (*store)->GetRun("wl-20990101-deadbeef");
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().code, codes::kNotFound);
}

TEST(StoreTest, ConfigMapsAndSecretsAreSeparateWithHints) {
  rsl::testing::TempDir tmp("store_test_cm");
  auto store = OpenSqliteStore(tmp.Sub("state"));
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
  std::string id = NewVersionId(1718409600000);  // 2024-06-15 (or later: ids only grow)
  EXPECT_TRUE(std::regex_match(id, std::regex("wl-20[0-9]{6}-[0-9a-f]{8}"))) << id;
  std::string next = NewVersionId(1718409600000);
  EXPECT_LT(id, next);  // the same date and width: they sort as drawn
  EXPECT_EQ(RunIdFor("wl-20240615-7a8b9c0d"), "run-20240615-7a8b9c0d");
}

// The second of the UTC day, then a sequence within it: ids sort by time, and a process's
// only grow, whatever its clock does.
TEST(StoreTest, VersionIdsFollowTheClockAndOnlyGrow) {
  const int64_t day = 1718409600000;  // 2024-06-15 00:00:00 UTC
  uint64_t v = NextVersionIdValue(0, day);
  EXPECT_EQ(VersionIdOf(v), "wl-20240615-00000000");
  uint64_t noon = NextVersionIdValue(v, day + 43'200'500);  // 12:00:00.5: second 43,200
  EXPECT_EQ(VersionIdOf(noon), "wl-20240615-" + std::string("54600000"));  // 43,200 << 15
  EXPECT_EQ(NextVersionIdValue(noon, day + 43'200'900), noon + 1);         // the same second
  EXPECT_EQ(NextVersionIdValue(noon, day + 1000), noon + 1);               // a clock set back
  EXPECT_EQ(VersionIdOf(NextVersionIdValue(noon, day + 43'201'000)), "wl-20240615-54608000");
  // More than 2^15 in one second borrow the next second's.
  uint64_t last = noon + (1u << kVersionIdSequenceBits) - 1;
  EXPECT_EQ(VersionIdOf(last), "wl-20240615-54607fff");
  EXPECT_EQ(VersionIdOf(NextVersionIdValue(last, day + 43'200'999)), "wl-20240615-54608000");
  // The next day starts at its own first id; its date is the day's.
  uint64_t late = NextVersionIdValue(noon, day + 86'399'999);
  EXPECT_EQ(VersionIdOf(late), "wl-20240615-a8bf8000");  // 86,399 << 15
  EXPECT_EQ(VersionIdOf(NextVersionIdValue(late, day + 86'400'000)), "wl-20240616-00000000");
  // A process's offset starts each of its seconds (below 2^14: the upper half is what its
  // bursts borrow before the next second).
  EXPECT_EQ(VersionIdOf(NextVersionIdValue(0, day + 43'200'000, 0x1234)), "wl-20240615-54601234");
  EXPECT_EQ(VersionIdOf(NextVersionIdValue(0, day + 43'200'000, 0xffffffff)),
            "wl-20240615-54603fff");
  // A clock before 1970 counts as 1970's first second (after 0, the value of none yet).
  EXPECT_EQ(VersionIdOf(NextVersionIdValue(0, -1000)), "wl-19700101-00000001");
}

// A version whose id the store has is refused whole: CONFLICT naming the id, nothing of the
// batch written (another process committed it first).
TEST(StoreTest, AVersionIdTheStoreHasIsRefusedWithNothingWritten) {
  rsl::testing::TempDir tmp("store_test_taken");
  auto store = OpenSqliteStore(tmp.Sub("state"));
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch first = NewRunBatch("wl-20240615-54600000", "first");
  ASSERT_TRUE((*store)->Apply(&first).ok());
  Batch again = NewRunBatch("wl-20240615-54600000", "second");
  Status s = (*store)->Apply(&again);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, codes::kConflict);
  EXPECT_EQ(s.error().value, "wl-20240615-54600000");
  EXPECT_EQ((*store)->GetVersion("wl-20240615-54600000")->name, "first");
  auto versions = (*store)->ListVersions("risk", "second");
  ASSERT_TRUE(versions.ok());
  EXPECT_TRUE(versions->empty());
}

// A process's ids only grow (NextVersionIdValue): 300,000 drawn at one instant, nine times
// a second's 32,768, borrow the seconds after it and never repeat.
TEST(StoreTest, AProcesssVersionIdsNeverRepeat) {
  std::unordered_set<std::string> seen;
  for (int i = 0; i < 300000; ++i) {
    std::string id = NewVersionId(1718409600000);
    ASSERT_TRUE(seen.insert(id).second) << "repeated after " << i << " ids: " << id;
  }
}

// Rows go in multi-row statements of 32: check sizes around the chunk boundary, a key
// written twice in one batch (the later row wins), and each event's seq naming its own row.
TEST(StoreTest, LargeBatchesKeepEveryRowAndItsSeq) {
  rsl::testing::TempDir tmp("store_test_large");
  std::string dir = tmp.Sub("state");
  auto store = OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch b0 = NewRunBatch("wl-20240615-0000000a", "big");
  ASSERT_TRUE((*store)->Apply(&b0).ok());
  std::string run = b0.runs[0].id;
  for (int n : {1, 31, 32, 33, 70}) {
    Batch b;
    for (int i = 0; i < n; ++i) {
      b.steps.push_back(StepRow(run, "s" + std::to_string(i), i, spec::StepPhase::kRunning));
      b.events.push_back(StartedEvent(run, "s" + std::to_string(i),
                                      "n=" + std::to_string(n) + " i=" + std::to_string(i)));
      Attempt a;
      a.id = run + "/s" + std::to_string(i) + "/" + std::to_string(n);
      a.run_id = run;
      a.step = "s" + std::to_string(i);
      a.number = n;
      a.launch_json = "{\"n\":" + std::to_string(n) + "}";
      b.attempts.push_back(a);
    }
    b.steps.push_back(
        StepRow(run, "s0", 0, spec::StepPhase::kSucceeded));  // the same key again: wins
    int64_t before = (*store)->LastEventSeq();
    ASSERT_TRUE((*store)->Apply(&b).ok());
    for (int i = 0; i < n; ++i) EXPECT_EQ(b.events[size_t(i)].seq, before + 1 + i);
    auto events = (*store)->ListEvents(run, before);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), size_t(n));
    for (const Event& e : *events) {
      EXPECT_EQ(e.message, "n=" + std::to_string(n) + " i=" + std::to_string(e.seq - before - 1));
    }
    auto steps = (*store)->ListSteps(run);
    ASSERT_TRUE(steps.ok());
    std::map<std::string, Step> by_name;
    for (const Step& st : *steps) by_name[st.name] = st;
    EXPECT_EQ(by_name["s0"].phase, spec::StepPhase::kSucceeded);
    std::string last = "s" + std::to_string(n - 1);
    if (n > 1) {
      EXPECT_EQ(by_name[last].phase, spec::StepPhase::kRunning);
      EXPECT_EQ(by_name[last].message, "row of " + last);
    }
  }
  auto attempts = (*store)->ListAttempts(run);
  ASSERT_TRUE(attempts.ok());
  EXPECT_EQ(attempts->size(), size_t(1 + 31 + 32 + 33 + 70));
  // An attempt written again without its launch record keeps the stored one.
  Batch exit;
  Attempt a;
  a.id = run + "/s5/70";
  a.run_id = run;
  a.step = "s5";
  a.number = 70;
  a.state = spec::AttemptPhase::kExited;
  exit.attempts.push_back(a);
  ASSERT_TRUE((*store)->Apply(&exit).ok());
  attempts = (*store)->ListAttempts(run);
  ASSERT_TRUE(attempts.ok());
  bool found = false;
  for (const Attempt& x : *attempts) {
    if (x.id != a.id) continue;
    found = true;
    EXPECT_EQ(x.state, spec::AttemptPhase::kExited);
    EXPECT_EQ(x.launch_json, "{\"n\":70}");
  }
  EXPECT_TRUE(found);
  // Artifacts and lineage edges (a run's commit: one each per step), 70 rows plus a key
  // repeated at the end: INSERT OR REPLACE keeps the last.
  Batch commit;
  for (int i = 0; i < 70; ++i) {
    std::string step = "s" + std::to_string(i);
    commit.artifacts.push_back({run, step, "/out/" + step, i, "output", ""});
    std::string from = "{\"i\":" + std::to_string(i) + "}";
    commit.lineage.push_back({run, "wl-x", "/out/" + step, "output", from});
  }
  commit.artifacts.push_back({run, "s3", "/out/s3", 333, "output", "sha256:x"});
  commit.lineage.push_back({run, "wl-x", "/out/s3", "output", "{\"again\":1}"});
  ASSERT_TRUE((*store)->Apply(&commit).ok());
  auto artifacts = (*store)->ListArtifacts(run);
  ASSERT_TRUE(artifacts.ok());
  ASSERT_EQ(artifacts->size(), 70u);
  for (const Artifact& x : *artifacts) {
    int i = std::stoi(x.step.substr(1));
    EXPECT_EQ(x.uri, "/out/" + x.step);
    EXPECT_EQ(x.bytes, i == 3 ? 333 : i) << x.step;
    EXPECT_EQ(x.digest, i == 3 ? "sha256:x" : "") << x.step;
  }
  auto lineage = (*store)->ListLineage(run);
  ASSERT_TRUE(lineage.ok());
  ASSERT_EQ(lineage->size(), 70u);
  for (const LineageEdge& e : *lineage) {
    if (e.to == "/out/s3") {
      EXPECT_EQ(e.from_json, "{\"again\":1}");
    } else if (e.to == "/out/s69") {
      EXPECT_EQ(e.from_json, "{\"i\":69}");
    }
  }
}

// Attempts are listed by their id range "<run_id>/...": a run whose id extends another's
// ("...1" and "...10") must not see the other's attempts.
TEST(StoreTest, AttemptsOfARunWhoseIdIsAPrefixOfAnother) {
  rsl::testing::TempDir tmp("store_test_prefix");
  std::string dir = tmp.Sub("state");
  auto store = OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok());
  Batch b;
  for (const std::string run : {"run-x-1", "run-x-10", "run-x-1a"}) {
    Attempt a;
    a.id = run + "/train/1";
    a.run_id = run;
    a.step = "train";
    b.attempts.push_back(a);
  }
  ASSERT_TRUE((*store)->Apply(&b).ok());
  for (const std::string run : {"run-x-1", "run-x-10", "run-x-1a"}) {
    auto list = (*store)->ListAttempts(run);
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->size(), 1u) << run;
    EXPECT_EQ((*list)[0].run_id, run);
  }
}

// A state directory written before migration 2 (steps WITHOUT ROWID, no attempts index,
// events without AUTOINCREMENT) opens with every row kept and event seqs going on upwards.
TEST(StoreTest, UpgradesAStateDirectoryFromTheFirstSchema) {
  rsl::testing::TempDir tmp("store_test_upgrade");
  std::string dir = tmp.Sub("state");
  std::filesystem::create_directories(dir);
  std::string run;
  int64_t last_seq = 0;
  {
    auto db = Db::Open(StateDbPath(dir));
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Migrate("store", {StoreMigrationsForTest()[0]}).ok());
    ASSERT_TRUE(
        (*db)
            ->Exec("INSERT INTO store_steps VALUES "
                   "('run-old','train',0,'SUCCEEDED',1,0,'run-old/train/1',"
                   "'local',0,0,5,1,100,1,2,0,'','exit code 0','{\"auc\":0.9}','','/out/train');"
                   "INSERT INTO store_attempts VALUES ('run-old/train/1','run-old','train',1,'{}',"
                   "'exited','Succeeded',1,2);"
                   "INSERT INTO store_events (run_id, step, type, reason, message, time) VALUES "
                   "('run-old','train','Normal','Started','a',1),('run-old','train','Normal',"
                   "'Succeeded','b',2);")
            .ok());
    run = "run-old";
  }
  auto store = OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  auto steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].metrics_json, "{\"auc\":0.9}");
  EXPECT_EQ((*steps)[0].output_dir, "/out/train");
  EXPECT_EQ((*steps)[0].peak_cpu_millicores, 0);  // a column added later: its default
  auto attempts = (*store)->ListAttempts(run);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].exit_kind, "Succeeded");
  auto events = (*store)->ListEvents(run, 0);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  last_seq = (*events)[1].seq;
  EXPECT_EQ((*store)->LastEventSeq(), last_seq);
  Batch b;
  b.steps.push_back(StepRow(run, "train", 0, spec::StepPhase::kFailed));
  Event e;
  e.run_id = run;
  e.reason = "Failed";
  b.events.push_back(e);
  ASSERT_TRUE((*store)->Apply(&b).ok());
  EXPECT_EQ(b.events[0].seq, last_seq + 1);
  steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].phase, spec::StepPhase::kFailed);
}

// A row whose phase the platform does not know (a newer version wrote it, or the file was
// edited) is an error with a code, not a crash.
TEST(StoreTest, UnknownPhaseInARowIsAnError) {
  rsl::testing::TempDir tmp("store_test_badphase");
  std::string dir = tmp.Sub("state");
  std::filesystem::create_directories(dir);
  auto store = OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch b0 = NewRunBatch("wl-20240615-0000000c", "badphase");
  ASSERT_TRUE((*store)->Apply(&b0).ok());
  std::string run = b0.runs[0].id;
  {
    auto db = Db::Open(StateDbPath(dir));
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)
                    ->Exec("UPDATE store_steps SET phase='SLEEPING';"
                           "UPDATE store_runs SET phase='DREAMING';")
                    .ok());
  }
  auto steps = (*store)->ListSteps(run);
  ASSERT_FALSE(steps.ok());
  EXPECT_EQ(steps.error().code, codes::kInvalidArgument);
  EXPECT_EQ(steps.error().message, "unknown step phase 'SLEEPING'");
  auto got = (*store)->GetRun(run);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().message, "unknown run phase 'DREAMING'");
  EXPECT_FALSE((*store)->ListRuns(RunFilter{}).ok());
}

// A run commits every loop turn: the WAL must start again from its beginning now and then
// instead of growing for as long as commits keep coming (the writer checkpoints itself).
TEST(StoreTest, TheWalStaysBoundedUnderContinuousCommits) {
  rsl::testing::TempDir tmp("store_test_wal");
  std::string dir = tmp.Sub("state");
  auto store = OpenSqliteStore(dir, StoreOptions{false});  // fsync or not: the same WAL
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch b0 = NewRunBatch("wl-20240615-0000000b", "wal");
  ASSERT_TRUE((*store)->Apply(&b0).ok());
  std::string run = b0.runs[0].id;
  int64_t largest = 0;
  for (int i = 0; i < 4000; ++i) {
    Batch b;
    b.steps.push_back(
        StepRow(run, "s" + std::to_string(i % 500), i % 500, spec::StepPhase::kRunning));
    b.events.push_back(StartedEvent(run, "s" + std::to_string(i % 500), std::string(200, 'x')));
    ASSERT_TRUE((*store)->Apply(&b).ok());
    struct stat st;
    if (stat((StateDbPath(dir) + "-wal").c_str(), &st) == 0) {
      largest = std::max<int64_t>(largest, st.st_size);
    }
  }
  // 4,000 commits of several pages each: about 60 MB if the WAL never started again.
  EXPECT_GT(largest, 0);
  EXPECT_LT(largest, 12 << 20);
  auto steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->size(), 501u);  // and NewRunBatch's "train"
  auto events = (*store)->ListEvents(run, 0);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->size(), 4001u);
}

// A loop turn writes the steps it moved and their attempts; every page it changes goes to
// the WAL whole (and into the database again at the checkpoint). The steps of one turn are
// usually neighbours in the pipeline (here a tree's level 9, s511..s1022): kept in pipeline
// order, with the attempts' launch records apart, their rows share a few pages.
TEST(StoreTest, ATurnOfNeighbouringStepsWritesFewPages) {
  rsl::testing::TempDir tmp("store_test_pages_written");
  std::string dir = tmp.Sub("state");
  auto store = OpenSqliteStore(dir, StoreOptions{false});
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch b0 = NewRunBatch("wl-20240615-0000000c", "tree");
  ASSERT_TRUE((*store)->Apply(&b0).ok());
  std::string run = b0.runs[0].id;
  constexpr int kSteps = 2047;  // a full binary tree of 11 levels
  auto turn = [&](int first, int last, spec::StepPhase phase, bool launch) {
    Batch b;
    for (int i = first; i <= last; ++i) {
      std::string name = "s" + std::to_string(i);
      Step st = StepRow(run, name, i, phase);
      st.output_dir = "/var/lib/rsl-runs/" + run + "/staging/" + name;
      b.steps.push_back(st);
      Attempt a;
      a.id = run + "/" + name + "/1";
      a.run_id = run;
      a.step = name;
      a.launch_json = launch ? std::string(600, 'j') : "";  // an exit keeps the stored one
      a.state = launch ? spec::AttemptPhase::kLaunching : spec::AttemptPhase::kExited;
      b.attempts.push_back(a);
    }
    return (*store)->Apply(&b);
  };
  ASSERT_TRUE(turn(0, kSteps - 1, spec::StepPhase::kPending, true).ok());
  auto db = Db::Open(StateDbPath(dir));
  ASSERT_TRUE(db.ok());
  // Empty the WAL, write one turn (level 9 ends), and count the WAL's frames (pages).
  // TRUNCATE reports busy (first column 1) and leaves the WAL as it is while the store's
  // own connection is checkpointing: seen once under load (554 frames counted). Until it
  // empties the WAL, try again.
  bool emptied = false;
  for (int i = 0; i < 500 && !emptied; ++i) {
    auto busy =
        (*db)->First("PRAGMA wal_checkpoint(TRUNCATE)", [](const Stmt& row) { return row.Int(0); });
    ASSERT_TRUE(busy.ok() && busy->has_value());
    emptied = **busy == 0;
    if (!emptied) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(emptied) << "the WAL could not be checkpointed and truncated";
  ASSERT_TRUE(turn(511, 1022, spec::StepPhase::kSucceeded, false).ok());
  auto frames =
      (*db)->First("PRAGMA wal_checkpoint(PASSIVE)", [](const Stmt& row) { return row.Int(1); });
  ASSERT_TRUE(frames.ok() && frames->has_value());
  // 512 step rows of about 150 bytes and 512 attempt exits of about 80: 32 pages, where
  // keyed by name with the launch record in the attempt's row they were 112.
  EXPECT_GT(**frames, 0);
  EXPECT_LT(**frames, 60) << "pages written by one turn";
  auto steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), size_t(kSteps) + 1);  // and NewRunBatch's "train" (index 0)
  int succeeded = 0;
  for (const Step& st : *steps) succeeded += st.phase == spec::StepPhase::kSucceeded;
  EXPECT_EQ(succeeded, 512);
  auto attempts = (*store)->ListAttempts(run);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), size_t(kSteps));
  for (const Attempt& a : *attempts) EXPECT_EQ(a.launch_json, std::string(600, 'j')) << a.id;
}

// A step's rows are keyed by (run, index, name): a later row of the step updates it in place,
// and steps list in pipeline order whatever order their rows were first written in.
TEST(StoreTest, AStepRowIsUpdatedInItsPlace) {
  rsl::testing::TempDir tmp("store_test_step_index");
  std::string dir = tmp.Sub("state");
  auto store = OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch b0 = NewRunBatch("wl-20240615-0000000d", "order");
  b0.steps.push_back(StepRow(b0.runs[0].id, "b", 2, spec::StepPhase::kPending));
  b0.steps.push_back(StepRow(b0.runs[0].id, "a", 1, spec::StepPhase::kPending));
  ASSERT_TRUE((*store)->Apply(&b0).ok());
  std::string run = b0.runs[0].id;
  Batch b;
  b.steps.push_back(StepRow(run, "b", 2, spec::StepPhase::kRunning));
  b.steps.push_back(StepRow(run, "b", 2, spec::StepPhase::kSucceeded));
  b.steps.push_back(StepRow(run, "a", 1, spec::StepPhase::kRunning));
  ASSERT_TRUE((*store)->Apply(&b).ok());
  auto steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[0].name, "train");
  EXPECT_EQ((*steps)[1].name, "a");
  EXPECT_EQ((*steps)[1].phase, spec::StepPhase::kRunning);
  EXPECT_EQ((*steps)[2].name, "b");
  EXPECT_EQ((*steps)[2].index, 2);
  EXPECT_EQ((*steps)[2].phase, spec::StepPhase::kSucceeded);
  auto counts = (*store)->CountSteps(run);
  ASSERT_TRUE(counts.ok());
  int64_t total = 0;
  for (const auto& [phase, n] : *counts) total += n;
  EXPECT_EQ(total, 3);
}

// A batch that writes a row several times (an engine turn that launches a step and sees it
// start, a group commit of several turns) ends as if each row had been written in order:
// every column as its last row has it, the launch record of the attempt's launching row.
TEST(StoreTest, ARowWrittenSeveralTimesInOneBatchEndsAsItsLastRow) {
  rsl::testing::TempDir tmp("store_test_last_row");
  auto store = OpenSqliteStore(tmp.Sub("state"));
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  Batch b = NewRunBatch("wl-20240615-0000000e", "repeat");
  Batch other = NewRunBatch("wl-20240615-0000000f", "repeat");
  AppendBatch(std::move(other), &b);
  const std::string run = b.runs[0].id, run2 = b.runs[1].id;
  auto attempt = [&](const std::string& r, spec::AttemptPhase state, const std::string& launch) {
    Attempt a;
    a.id = r + "/train/1";
    a.run_id = r;
    a.step = "train";
    a.number = 1;
    a.state = state;
    a.launch_json = launch;
    a.finished_at = state == spec::AttemptPhase::kExited ? 77 : 0;
    return a;
  };
  Step running = StepRow(run, "train", 0, spec::StepPhase::kRunning);
  running.attempt_id = run + "/train/1";
  running.started_at = 50;
  b.steps.push_back(running);
  b.attempts.push_back(attempt(run, spec::AttemptPhase::kLaunching, "{\"argv\":[\"true\"]}"));
  b.steps.push_back(StepRow(run2, "train", 0, spec::StepPhase::kRunning));
  Step done = running;
  done.phase = spec::StepPhase::kSucceeded;
  done.finished_at = 80;
  done.message = "exited 0";
  b.steps.push_back(done);
  b.attempts.push_back(attempt(run, spec::AttemptPhase::kExited, ""));  // its exit
  const size_t rows = b.steps.size();
  ASSERT_TRUE((*store)->Apply(&b).ok());
  EXPECT_EQ(b.steps.size(), rows) << "the caller's batch is left as it was";

  auto steps = (*store)->ListSteps(run);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].phase, spec::StepPhase::kSucceeded);
  EXPECT_EQ((*steps)[0].started_at, 50);
  EXPECT_EQ((*steps)[0].finished_at, 80);
  EXPECT_EQ((*steps)[0].message, "exited 0");
  EXPECT_EQ((*steps)[0].attempt_id, run + "/train/1");
  auto steps2 = (*store)->ListSteps(run2);
  ASSERT_TRUE(steps2.ok());
  ASSERT_EQ(steps2->size(), 1u);
  EXPECT_EQ((*steps2)[0].phase, spec::StepPhase::kRunning);  // another run's step of that name
  auto attempts = (*store)->ListAttempts(run);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].state, spec::AttemptPhase::kExited);
  EXPECT_EQ((*attempts)[0].finished_at, 77);
  EXPECT_EQ((*attempts)[0].launch_json, "{\"argv\":[\"true\"]}");

  // Many repeated rows (more than a multi-row statement holds), interleaved.
  Batch big;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 100; ++i) {
      Step st = StepRow(run2, "s" + std::to_string(i), i + 1,
                        round == 2 ? spec::StepPhase::kSucceeded : spec::StepPhase::kRunning);
      st.attempts = round + 1;
      big.steps.push_back(st);
    }
  }
  ASSERT_TRUE((*store)->Apply(&big).ok());
  steps2 = (*store)->ListSteps(run2);
  ASSERT_TRUE(steps2.ok());
  ASSERT_EQ(steps2->size(), 101u);
  for (const Step& st : *steps2) {
    if (st.name == "train") continue;
    EXPECT_EQ(st.phase, spec::StepPhase::kSucceeded) << st.name;
    EXPECT_EQ(st.attempts, 3) << st.name;
  }
}

}  // namespace
}  // namespace rsl::store