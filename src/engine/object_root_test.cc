// Two runs, one object-store output root (docs/engine.md "Two runs, one output root"): the
// lease and the manifest on a fake object store with S3's conditional writes, then the
// commit through the engine. The same protocol against a real radosgw:
// tests/data/s3_commit_test.cc (label s3).
#include "engine/object_root.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/fake_env.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "engine/object_root_test_util.h"
#include "engine/testing.h"
#include "spec/parse.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;
using testing::FakeObjectStore;
using testing::Fixture;
using testing::kBase;
using testing::Steps;

TEST(ObjectLeaseTest, ASecondCommitWaitsForALiveLeaseAndFailsNamingItsHolder) {
  FakeObjectStore store;
  FakeEnv env;
  auto first = ObjectLease::Acquire(&store, &env, kBase, "run-a");
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  auto held = ParseLease(store.ReadObject(ObjectLeaseUri(kBase))->bytes);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->run_id, "run-a");
  EXPECT_EQ(held->expires_at_ms, env.NowMs() + kObjectLeaseTtlMs);
  const int64_t start = env.NowMs();
  // The second polls (fake time passes in its sleeps) until its wait ends: the first is
  // alive (its lease never expires within 30 s of a 5 minute lease).
  auto second = ObjectLease::Acquire(&store, &env, kBase, "run-b", {30'000, kObjectLeaseTtlMs});
  ASSERT_FALSE(second.ok());
  EXPECT_GE(env.NowMs() - start, 30'000);
  EXPECT_EQ(second.error().code, codes::kIoError);
  EXPECT_EQ(second.error().message,
            "output root s3://bucket/models/fraud stayed locked by run run-a (" + held->holder +
                ") for 30 s");
  EXPECT_EQ(second.error().value, ObjectLeaseUri(kBase));
  // Released: the next one takes it at once.
  (*first)->Release();
  EXPECT_EQ(store.ReadObject(ObjectLeaseUri(kBase)).status().code(), codes::kNotFound);
  auto third = ObjectLease::Acquire(&store, &env, kBase, "run-c", {0, kObjectLeaseTtlMs});
  ASSERT_TRUE(third.ok()) << third.error().ToString();
  EXPECT_TRUE((*third)->took_over_from().empty());
}

TEST(ObjectLeaseTest, AnExpiredLeaseIsTakenOverAndItsHolderLosesIt) {
  FakeObjectStore store;
  FakeEnv env;
  auto dead = ObjectLease::Acquire(&store, &env, kBase, "run-dead", {0, 60'000});
  ASSERT_TRUE(dead.ok());
  env.Advance(60'001);  // its controller was killed: no renewal
  auto next = ObjectLease::Acquire(&store, &env, kBase, "run-next", {0, 60'000});
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ((*next)->took_over_from(), "run-dead");
  EXPECT_EQ(ParseLease(store.ReadObject(ObjectLeaseUri(kBase))->bytes)->run_id, "run-next");
  // The old holder notices at its next renewal, and its release leaves the new lease alone.
  Status renewed = (*dead)->Renew(/*force=*/true);
  ASSERT_FALSE(renewed.ok());
  EXPECT_EQ(renewed.code(), codes::kOutputConflict);
  EXPECT_NE(renewed.error().message.find("held by run run-next"), std::string::npos)
      << renewed.error().message;
  (*dead)->Release();
  EXPECT_EQ(ParseLease(store.ReadObject(ObjectLeaseUri(kBase))->bytes)->run_id, "run-next");
  // A live holder's renewal moves its expiry.
  env.Advance(20'000);
  ASSERT_TRUE((*next)->Renew().ok());
  EXPECT_EQ(ParseLease(store.ReadObject(ObjectLeaseUri(kBase))->bytes)->expires_at_ms,
            env.NowMs() + 60'000);
  // A lease object that is not one (written by hand) counts as expired.
  (*next)->Release();
  store.Put(ObjectLeaseUri(kBase), "garbage");
  auto over = ObjectLease::Acquire(&store, &env, kBase, "run-x", {0, 60'000});
  ASSERT_TRUE(over.ok());
  EXPECT_EQ((*over)->took_over_from(), "(unreadable lease)");
}

TEST(ObjectLeaseTest, ARecoveredEngineTakesOverItsOwnRunsLeaseAtOnce) {
  FakeObjectStore store;
  FakeEnv env;
  // The run's engine crashed mid-commit: its live lease is left behind.
  auto crashed = ObjectLease::Acquire(&store, &env, kBase, "run-a");
  ASSERT_TRUE(crashed.ok());
  const int64_t start = env.NowMs();
  auto recovered = ObjectLease::Acquire(&store, &env, kBase, "run-a", {0, kObjectLeaseTtlMs});
  ASSERT_TRUE(recovered.ok()) << recovered.error().ToString();
  EXPECT_EQ(env.NowMs(), start);  // no wait
  EXPECT_TRUE((*recovered)->took_over_from().empty());
  // Another run still waits for it.
  EXPECT_FALSE(ObjectLease::Acquire(&store, &env, kBase, "run-b", {0, kObjectLeaseTtlMs}).ok());
}

TEST(ObjectLeaseTest, TheManifestIsCreateOnlyAndNamesTheRunThatWroteItFirst) {
  FakeObjectStore store;
  CommitManifest a;
  a.run_id = "run-a";
  ASSERT_TRUE(WriteObjectManifest(&store, kBase, "run-a", CommitManifestJson(a)).ok());
  // Repeated (an answer lost): the same bytes are there, so it is ours.
  ASSERT_TRUE(WriteObjectManifest(&store, kBase, "run-a", CommitManifestJson(a)).ok());
  CommitManifest b;
  b.run_id = "run-b";
  Status lost = WriteObjectManifest(&store, kBase, "run-b", CommitManifestJson(b));
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.code(), codes::kOutputConflict);
  EXPECT_EQ(lost.error().message,
            "the manifest s3://bucket/models/fraud/_RSL_COMMIT was written "
            "by run run-a while run run-b committed");
  auto read = ReadObjectManifest(&store, kBase);
  ASSERT_TRUE(read.ok());
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(ParseCommitManifest((*read)->bytes)->run_id, "run-a");
  EXPECT_FALSE(ReadObjectManifest(&store, "s3://bucket/none")->has_value());
}

TEST(ObjectLeaseTest, TwoThreadsTakeTurns) {
  FakeObjectStore store;
  Env* env = Env::Default();  // real time: the second waits for the first's release
  auto first = ObjectLease::Acquire(&store, env, kBase, "run-a");
  ASSERT_TRUE(first.ok());
  std::atomic<bool> acquired{false};
  std::thread second([&] {
    auto lease = ObjectLease::Acquire(&store, env, kBase, "run-b");
    EXPECT_TRUE(lease.ok());
    acquired = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(acquired.load());  // waiting: the lease is live
  (*first)->Release();
  second.join();
  EXPECT_TRUE(acquired.load());
}

TEST(ObjectRootCommitTest, ReplaceLeavesOneRunsSetAndRecordsTheOtherAsSuperseded) {
  Fixture f("replace");
  auto first = f.RunToEnd(Steps(kBase, "replace", {"a", "b"}));
  ASSERT_EQ(first.phase, spec::RunPhase::kSucceeded) << first.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), first.id);
  auto second = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  ASSERT_EQ(second.phase, spec::RunPhase::kSucceeded) << second.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), second.id);
  // Exactly the second run's objects: its `a`, the first's `b` removed, no lease left.
  auto objects = f.objects->Below(kBase);
  std::vector<std::string> names;
  for (const auto& [name, bytes] : objects) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"_RSL_COMMIT", "a/_RSL_COMMIT", "a/who"}));
  EXPECT_EQ(objects["a/who"], second.id);
  auto superseded = f.Events(first.id, "OutputSuperseded");
  ASSERT_EQ(superseded.size(), 1u);
  EXPECT_EQ(superseded[0].message,
            "the outputs under " + std::string(kBase) + " were replaced by run " + second.id +
                " (workload " + second.workload_id + "); this run's outputs are gone from there");
  auto committed = f.Events(second.id, "OutputCommitted");
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_NE(committed[0].message.find("replaced the outputs of run " + first.id), std::string::npos)
      << committed[0].message;
}

TEST(ObjectRootCommitTest, ACommitTakesOverALeaseLeftByAKilledController) {
  Fixture f("stale");
  LeaseRecord stale{"run-killed", "elsewhere:1", "t", f.env.NowMs() - 1};
  f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(stale));
  auto run = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  ASSERT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
  auto committed = f.Events(run.id, "OutputCommitted");
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_NE(committed[0].message.find("took over the expired lease of run run-killed"),
            std::string::npos)
      << committed[0].message;
  EXPECT_EQ(f.objects->ReadObject(ObjectLeaseUri(kBase)).status().code(), codes::kNotFound);
}

// A commit whose root another controller's live lease holds waits on a timer, not in the
// engine's loop: the engine's other runs go on meanwhile, and once the lease is gone the
// waiting run commits.
TEST(ObjectRootCommitTest, ACommitWaitingForTheLeaseHoldsUpNoOtherRun) {
  Fixture f("waiting");
  auto id = f.engine->Submit(Steps(kBase, "replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  const std::string waiting = store::RunIdFor(*id);
  auto l = f.backend.WaitLaunch(++f.launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", waiting).ok());
  // Another controller's commit takes the root meanwhile (a lease far from expiring).
  LeaseRecord live{"run-other", "elsewhere:7", "t", f.env.NowMs() + 3'600'000};
  f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(live));
  f.backend.Succeed(l.attempt_id);
  ASSERT_TRUE(f.WaitForEvent(waiting, "OutputCommitWaiting"));
  EXPECT_EQ(f.Events(waiting, "OutputCommitWaiting")[0].message,
            "waiting for output root " + std::string(kBase) +
                ": another run (run-other) is committing there");
  auto other = f.RunToEnd(Steps(std::string(kBase) + "-elsewhere", "replace", {"b"}));
  EXPECT_EQ(other.phase, spec::RunPhase::kSucceeded) << other.failure_message;
  f.env.Advance(30'000);  // retried, still held
  EXPECT_EQ(f.store->GetRun(waiting)->phase, spec::RunPhase::kRunning);
  ASSERT_TRUE(f.objects->Remove(ObjectLeaseUri(kBase)).ok());  // that commit ended
  f.env.Advance(2'000);
  auto run = f.engine->Wait(*id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), waiting);
  EXPECT_EQ(f.Events(waiting, "OutputCommitWaiting").size(), 1u);
}

// An output commit runs on a committer thread, not the engine's loop: while one run uploads
// its outputs (a big model to an object store can take minutes), other runs are launched,
// run, and commit theirs. On the loop, every launch of every run waited for the upload.
TEST(ObjectRootCommitTest, AnUploadInProgressHoldsUpNoOtherRun) {
  Fixture f("uploading");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  struct Release {  // whatever fails below, the upload ends before the engine stops
    std::promise<void>* p;
    bool done = false;
    void operator()() {
      if (!done) p->set_value();
      done = true;
    }
    ~Release() { (*this)(); }
  } let_go{&release};
  std::promise<void> entered;
  std::future<void> uploading = entered.get_future();
  std::atomic<bool> held{false};
  f.objects->on_publish = [&](const std::string& dest) {
    if (dest.rfind(std::string(kBase) + "/", 0) != 0 || held.exchange(true)) return;
    entered.set_value();
    released.wait();
  };
  auto id = f.engine->Submit(Steps(kBase, "replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  const std::string first = store::RunIdFor(*id);
  auto l = f.backend.WaitLaunch(++f.launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", first).ok());
  f.backend.Succeed(l.attempt_id);
  ASSERT_EQ(uploading.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  // Another run, to another root, from submission to its commit.
  const std::string elsewhere = "s3://bucket/other";
  auto other = f.engine->Submit(Steps(elsewhere, "replace", {"b", "c"}), "alice");
  ASSERT_TRUE(other.ok());
  for (int i = 0; i < 2; ++i) {
    auto launch = f.backend.WaitLaunch(++f.launched, 20'000);
    ASSERT_FALSE(launch.attempt_id.empty()) << "step " << i << " of the other run never launched";
    ASSERT_TRUE(WriteFileAtomic(launch.env.at("RSL_OUTPUT") + "/who", "other").ok());
    f.backend.Succeed(launch.attempt_id);
  }
  auto done = f.engine->Wait(*other, 20'000);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_EQ(done->phase, spec::RunPhase::kSucceeded) << done->failure_message;
  EXPECT_EQ(f.ManifestRun(elsewhere), done->id);
  // The first run is still uploading: running, committing, its manifest not written.
  auto running = f.store->GetRun(first);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->phase, spec::RunPhase::kRunning);
  EXPECT_EQ(running->commit_state, store::kCommitCommitting);
  EXPECT_EQ(f.ManifestRun(kBase), "");
  let_go();
  auto run = f.engine->Wait(*id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), first);
  EXPECT_EQ(f.objects->Below(kBase)["a/who"], first);
}

TEST(ObjectRootCommitTest, AFailedManifestWriteLeavesNoManifestNamingTheRun) {
  Fixture f("manifest-fails");
  auto first = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  ASSERT_EQ(first.phase, spec::RunPhase::kSucceeded);
  f.objects->fail_writes_to = std::string(kBase) + "/" + kCommitManifestName;
  auto failed = f.RunToEnd(Steps(kBase, "replace", {"a", "b"}));
  EXPECT_EQ(failed.phase, spec::RunPhase::kFailed);
  EXPECT_EQ(failed.failure_code, codes::kDataSourceUnreachable);
  EXPECT_NE(failed.failure_message.find("cannot write the manifest"), std::string::npos)
      << failed.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), "");  // no manifest: the root is not committed
  // What it published is removed, and its lease released.
  EXPECT_TRUE(f.objects->Below(kBase).empty());
  auto discarded = f.Events(failed.id, "OutputDiscarded");
  ASSERT_EQ(discarded.size(), 1u);
  EXPECT_EQ(discarded[0].message, "published and staged outputs removed");
  // The next commit goes through.
  f.objects->fail_writes_to.clear();
  auto next = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  EXPECT_EQ(next.phase, spec::RunPhase::kSucceeded) << next.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), next.id);
}

TEST(ObjectRootCommitTest, ACommitThatLostItsLeaseFailsAndLeavesTheRootToTheNewHolder) {
  Fixture f("lost");
  // While the commit uploads, its lease expires and another controller takes it over.
  f.objects->on_publish = [&](const std::string&) {
    LeaseRecord other{"run-other", "elsewhere:2", "t2", f.env.NowMs() + kObjectLeaseTtlMs};
    f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(other));
  };
  auto run = f.RunToEnd(Steps(kBase, "replace", {"a"}));
  EXPECT_EQ(run.phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run.failure_code, codes::kOutputConflict);
  EXPECT_NE(run.failure_message.find("held by run run-other"), std::string::npos)
      << run.failure_message;
  EXPECT_EQ(f.ManifestRun(kBase), "");
  // Its upload is not undone (the root is the other run's now), nor the other's lease.
  EXPECT_EQ(f.objects->Below(kBase)["a/who"], run.id);
  EXPECT_EQ(ParseLease(f.objects->ReadObject(ObjectLeaseUri(kBase))->bytes)->run_id, "run-other");
  auto discarded = f.Events(run.id, "OutputDiscarded");
  ASSERT_EQ(discarded.size(), 1u);
  EXPECT_NE(discarded[0].message.find("left to the run that holds it"), std::string::npos)
      << discarded[0].message;
}

TEST(ObjectRootCommitTest, VersionedCommitsUnderTheRunIdAndMovesLatest) {
  Fixture f("versioned");
  auto first = f.RunToEnd(Steps(kBase, "versioned", {"a"}));
  ASSERT_EQ(first.phase, spec::RunPhase::kSucceeded) << first.failure_message;
  auto second = f.RunToEnd(Steps(kBase, "versioned", {"a"}));
  ASSERT_EQ(second.phase, spec::RunPhase::kSucceeded) << second.failure_message;
  EXPECT_EQ(f.objects->ReadObject(ObjectLatestUri(kBase))->bytes, second.id);
  EXPECT_EQ(f.ManifestRun(std::string(kBase) + "/" + first.id), first.id);
  EXPECT_EQ(f.ManifestRun(std::string(kBase) + "/" + second.id), second.id);
  EXPECT_EQ(f.objects->Below(kBase)[second.id + "/a/who"], second.id);
  auto committed = f.Events(second.id, "OutputCommitted");
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_NE(committed[0].message.find(ObjectLatestUri(kBase) + " -> " + second.id),
            std::string::npos)
      << committed[0].message;
  EXPECT_TRUE(f.Events(first.id, "OutputSuperseded").empty());  // versioned keeps both
}

// --- policy refuse: claims ----------------------------------------------------------------

}  // namespace
}  // namespace rsl::engine
