// Two runs, one object-store output root, continued (object_root_test.cc): the claims of
// `policy: refuse` runs, through the engine too, and non-atomic runs publishing each step
// under the commit lease.
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

std::string ClaimRun(FakeObjectStore* store, const std::string& run_id) {
  auto o = store->ReadObject(ObjectClaimUri(kBase, run_id));
  if (!o.ok()) return "";
  auto c = ParseClaim(o->bytes);
  return c.ok() ? c->run_id : "(unreadable)";
}

TEST(ObjectClaimTest, ARefuseAdmissionIsRefusedWhileAnotherRunsClaimIsLive) {
  FakeObjectStore store;
  FakeEnv env;
  // A run of any policy claims the root while it is in flight.
  auto a = ObjectClaim::Take(&store, &env, kBase, "run-a", /*refuse=*/false);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  auto held = ParseClaim(store.ReadObject(ObjectClaimUri(kBase, "run-a"))->bytes);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->expires_at_ms, env.NowMs() + kObjectClaimTtlMs);
  auto b = ObjectClaim::Take(&store, &env, kBase, "run-b", /*refuse=*/true);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, codes::kOutputConflict);
  EXPECT_EQ(b.error().message,
            "run run-a (" + held->holder +
                ") is writing to the same output root s3://bucket/models/fraud, and "
                "data.output.policy is refuse; its claim expires at " +
                FormatUtc(held->expires_at_ms / 1000, "%Y-%m-%dT%H:%M:%SZ") + " unless renewed");
  EXPECT_EQ(b.error().path, "spec.data.output.uri");
  EXPECT_EQ(b.error().value, kBase);
  EXPECT_EQ(b.error().hint,
            "wait for run-a to end (its claim s3://bucket/models/fraud/.rsl-output/claims/run-a "
            "is removed then, or expires 300 s after its controller stops renewing it), or "
            "choose policy: replace or policy: versioned");
  // No claim of its own, and the claims lock is let go.
  EXPECT_EQ(ClaimRun(&store, "run-b"), "");
  EXPECT_EQ(store.ReadObject(ObjectClaimsLockUri(kBase)).status().code(), codes::kNotFound);
  // A second run of another policy is not refused (replace and versioned share a root).
  auto c = ObjectClaim::Take(&store, &env, kBase, "run-c", false);
  ASSERT_TRUE(c.ok());
  // Both ended: admitted.
  (*a)->Release();
  (*c)->Release();
  EXPECT_EQ(ClaimRun(&store, "run-a"), "");
  auto again = ObjectClaim::Take(&store, &env, kBase, "run-b", true);
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(ClaimRun(&store, "run-b"), "run-b");
}

TEST(ObjectClaimTest, AnExpiredClaimIsIgnoredAndRemovedAndARenewedOneIsNot) {
  FakeObjectStore store;
  FakeEnv env;
  ObjectClaimOptions minute{kOutputLockWaitMs, 60'000};
  auto live = ObjectClaim::Take(&store, &env, kBase, "run-live", false, minute);
  auto dead = ObjectClaim::Take(&store, &env, kBase, "run-dead", false, minute);
  ASSERT_TRUE(live.ok() && dead.ok());
  // Renewal is due a quarter of the ttl after the last write, not before.
  EXPECT_EQ((*live)->next_renewal_ms(), env.NowMs() + 15'000);
  env.Advance(40'000);
  ASSERT_TRUE((*live)->Renew().ok());  // run-dead's controller died: no renewal
  EXPECT_EQ((*live)->next_renewal_ms(), env.NowMs() + 15'000);
  env.Advance(20'001);  // run-dead expired, run-live (renewed 20 s ago) did not
  auto refused = ObjectClaim::Take(&store, &env, kBase, "run-x", true, minute);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, codes::kOutputConflict);
  EXPECT_EQ(refused.error().message.rfind("run run-live (", 0), 0u) << refused.error().message;
  EXPECT_EQ(ClaimRun(&store, "run-dead"), "");  // removed on the way
  // A claim object that is not one counts as expired, and a claim removed under its run (it
  // had expired) is written again by the next renewal.
  store.Put(ObjectClaimUri(kBase, "run-garbage"), "garbage");
  (void)store.Remove(ObjectClaimUri(kBase, "run-live"));
  auto admitted = ObjectClaim::Take(&store, &env, kBase, "run-y", true, minute);
  ASSERT_TRUE(admitted.ok()) << admitted.error().ToString();
  EXPECT_EQ(ClaimRun(&store, "run-garbage"), "");
  ASSERT_TRUE((*live)->Renew(/*force=*/true).ok());
  EXPECT_EQ(ClaimRun(&store, "run-live"), "run-live");
  // A store that fails: the error, and a retry well before the claim expires.
  store.fail_writes_to = ObjectClaimUri(kBase, "run-live");
  Status failed = (*live)->Renew(true);
  EXPECT_EQ(failed.code(), codes::kDataSourceUnreachable);
  EXPECT_EQ((*live)->failures(), 1);
  EXPECT_EQ((*live)->next_renewal_ms(), env.NowMs() + 15'000);
}

TEST(ObjectClaimTest, TwoRefuseAdmissionsAtOnceAdmitExactlyOne) {
  FakeObjectStore store;
  FakeEnv env;
  // run-b's admission starts while run-a's lists the claims (both would see none and both
  // claim, were it not for the claims lock): it finds the lock held.
  Result<std::unique_ptr<ObjectClaim>> b = Error(codes::kInternal, "not run");
  store.on_list = [&] {
    b = ObjectClaim::Take(&store, &env, kBase, "run-b", true, {0, kObjectClaimTtlMs});
  };
  auto a = ObjectClaim::Take(&store, &env, kBase, "run-a", true);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, codes::kIoError);
  EXPECT_EQ(b.error().message.rfind("the claims of output root s3://bucket/models/fraud stayed "
                                    "locked by run run-a (",
                                    0),
            0u)
      << b.error().message;
  EXPECT_EQ(ClaimRun(&store, "run-b"), "");
  // Tried again once the lock is free, it sees run-a's claim.
  auto again = ObjectClaim::Take(&store, &env, kBase, "run-b", true);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, codes::kOutputConflict);
}

TEST(ObjectClaimTest, OfEightRefuseAdmissionsInThreadsExactlyOneIsAdmitted) {
  FakeObjectStore store;
  Env* env = Env::Default();  // real time: waiters poll the claims lock
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<std::string> admitted;
  int refused = 0;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto c = ObjectClaim::Take(&store, env, kBase, "run-" + std::to_string(i), true);
      std::lock_guard<std::mutex> lock(mu);
      if (c.ok()) {
        admitted.push_back((*c)->run_id());
      } else {
        EXPECT_EQ(c.error().code, codes::kOutputConflict) << c.error().ToString();
        ++refused;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(refused, 7);
  std::vector<std::string> claims;
  for (const auto& [name, bytes] : store.Below(std::string(kBase) + "/.rsl-output/claims")) {
    claims.push_back(name);
  }
  EXPECT_EQ(claims, std::vector<std::string>{admitted[0]});
}

// Submits `w` on `f`'s engine and waits for its first step's launch (admitted: in flight).
std::string SubmitToFirstLaunch(Fixture& f, const spec::Workload& w, backend::LaunchSpec* l) {
  auto id = f.engine->Submit(w, "alice");
  EXPECT_TRUE(id.ok());
  *l = f.backend.WaitLaunch(++f.launched, 60'000);
  EXPECT_FALSE(l->attempt_id.empty());
  return id.ok() ? *id : "";
}

std::string RunIdOf(Fixture& f, const std::string& version_id) {
  auto run = f.store->GetRun(version_id);
  return run.ok() ? run->id : "";
}

TEST(ObjectClaimEngineTest, ARefuseRunOfAnotherControllerIsRejectedWhileOneIsInFlight) {
  Fixture one("claim-one");
  Fixture two("claim-two", one.objects);  // another controller, the same object store
  backend::LaunchSpec first_step;
  std::string first = SubmitToFirstLaunch(one, Steps(kBase, "refuse", {"a"}), &first_step);
  const std::string first_run = RunIdOf(one, first);
  EXPECT_EQ(ClaimRun(one.objects.get(), first_run), first_run);
  EXPECT_TRUE(std::filesystem::exists(one.dir + "/state/object-claims/" + first_run));
  auto refused = two.engine->Submit(Steps(kBase, "refuse", {"a"}), "bob");
  ASSERT_TRUE(refused.ok());
  auto rejected = two.engine->Wait(*refused, 60'000);
  ASSERT_TRUE(rejected.ok());
  EXPECT_EQ(rejected->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(rejected->failure_code, codes::kOutputConflict);
  EXPECT_NE(rejected->failure_message.find("run " + first_run + " ("), std::string::npos)
      << rejected->failure_message;
  EXPECT_NE(rejected->failure_message.find("and data.output.policy is refuse; its claim expires"),
            std::string::npos)
      << rejected->failure_message;
  EXPECT_EQ(ClaimRun(one.objects.get(), rejected->id), "");
  // The first ends: its claim and its marker go, and the next refuse run is admitted.
  ASSERT_TRUE(WriteFileAtomic(first_step.env.at("RSL_OUTPUT") + "/who", first_run).ok());
  one.backend.Succeed(first_step.attempt_id);
  auto ended = one.engine->Wait(first, 60'000);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->phase, spec::RunPhase::kSucceeded) << ended->failure_message;
  one.WaitClaimGone(first_run);
  EXPECT_FALSE(std::filesystem::exists(one.dir + "/state/object-claims/" + first_run));
  auto next = two.RunToEnd(Steps(kBase, "refuse", {"a"}));
  EXPECT_EQ(next.phase, spec::RunPhase::kSucceeded) << next.failure_message;
  EXPECT_TRUE(one.objects->Below(std::string(kBase) + "/.rsl-output").empty());
}

TEST(ObjectClaimEngineTest, AFailedOrCancelledRunRemovesItsClaim) {
  Fixture f("claim-ends");
  backend::LaunchSpec l;
  std::string failing = SubmitToFirstLaunch(f, Steps(kBase, "refuse", {"a"}), &l);
  EXPECT_EQ(ClaimRun(f.objects.get(), RunIdOf(f, failing)), RunIdOf(f, failing));
  f.backend.Fail(l.attempt_id, backend::ExitKind::kFailed);
  auto failed = f.engine->Wait(failing, 60'000);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->phase, spec::RunPhase::kFailed);
  f.WaitClaimGone(failed->id);
  std::string cancelling = SubmitToFirstLaunch(f, Steps(kBase, "replace", {"a"}), &l);
  EXPECT_EQ(ClaimRun(f.objects.get(), RunIdOf(f, cancelling)), RunIdOf(f, cancelling));
  ASSERT_TRUE(f.engine->Cancel(cancelling, "alice").ok());
  auto cancelled = f.engine->Wait(cancelling, 60'000);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->phase, spec::RunPhase::kCancelled);
  f.WaitClaimGone(cancelled->id);
  EXPECT_TRUE(f.objects->Below(std::string(kBase) + "/.rsl-output").empty());
  EXPECT_TRUE(std::filesystem::is_empty(f.dir + "/state/object-claims"));
}

TEST(ObjectClaimEngineTest, TheLoopRenewsTheClaimOfARunInFlight) {
  Fixture f("claim-renewed");
  backend::LaunchSpec l;
  std::string id = SubmitToFirstLaunch(f, Steps(kBase, "replace", {"a"}), &l);
  const std::string run_id = RunIdOf(f, id);
  auto expiry = [&] {
    auto o = f.objects->ReadObject(ObjectClaimUri(kBase, run_id));
    return o.ok() ? ParseClaim(o->bytes)->expires_at_ms : 0;
  };
  const int64_t first = expiry();
  EXPECT_EQ(first, f.env.NowMs() + kObjectClaimTtlMs);  // fake time stands still so far
  f.env.Advance(kObjectClaimTtlMs / 4 + 1);             // due
  const int64_t renewed_to = f.env.NowMs() + kObjectClaimTtlMs;
  // The loop wakes for it by itself (nothing else happens in this run meanwhile).
  for (int i = 0; i < 60'000 && expiry() != renewed_to; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(expiry(), renewed_to);
  f.backend.Succeed(l.attempt_id);
  ASSERT_TRUE(f.engine->Wait(id, 60'000).ok());
  f.WaitClaimGone(run_id);
}

TEST(ObjectClaimEngineTest, RecoveryResumesTheClaimOfARunInFlightAndRemovesAnEndedRunsOne) {
  Fixture f("claim-recovered");
  backend::LaunchSpec l;
  std::string id = SubmitToFirstLaunch(f, Steps(kBase, "refuse", {"a"}), &l);
  const std::string run_id = RunIdOf(f, id);
  // The engine dies with the run in flight; it comes back after the claim expired (another
  // admission removed it).
  f.engine->Stop(false);
  f.env.Advance(kObjectClaimTtlMs + 1);
  ASSERT_TRUE(f.objects->Remove(ObjectClaimUri(kBase, run_id)).ok());
  f.engine.reset();
  f.StartEngine();
  ASSERT_TRUE(f.engine->Recover().ok());
  ASSERT_TRUE(f.backend.WaitAdopted(1, 60'000));
  auto resumed = ParseClaim(f.objects->ReadObject(ObjectClaimUri(kBase, run_id))->bytes);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->expires_at_ms, f.env.NowMs() + kObjectClaimTtlMs);
  f.backend.Succeed(l.attempt_id);
  auto ended = f.engine->Wait(id, 60'000);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->phase, spec::RunPhase::kSucceeded) << ended->failure_message;
  f.WaitClaimGone(run_id);
  // An engine killed after the run's end was durable, before it removed the claim: the claim
  // and its marker are left; recovery removes both.
  ClaimRecord left{run_id, "here:1", f.env.NowMs() + kObjectClaimTtlMs};
  f.objects->Put(ObjectClaimUri(kBase, run_id), ClaimJson(left));
  ASSERT_TRUE(
      WriteFileAtomic(f.dir + "/state/object-claims/" + run_id, ObjectClaimUri(kBase, run_id))
          .ok());
  f.Restart();
  EXPECT_EQ(ClaimRun(f.objects.get(), run_id), "");
  EXPECT_FALSE(std::filesystem::exists(f.dir + "/state/object-claims/" + run_id));
}

// --- atomic: false ------------------------------------------------------------------------

spec::Workload NonAtomic(const std::string& policy, const std::vector<std::string>& steps) {
  spec::Workload w = Steps(kBase, policy, steps);
  w.pipeline.atomic = false;
  return w;
}

TEST(ObjectRootNonAtomicTest, EachStepIsPublishedUnderTheCommitLease) {
  Fixture f("non-atomic");
  // Another run's commit holds the lease (live): the step's publication waits for it on the
  // run's timer (the loop goes on: another run ends meanwhile), and after 2 minutes fails,
  // naming it.
  LeaseRecord other{"run-other", "elsewhere:3", "t3", f.env.NowMs() + 60 * 60 * 1000};
  f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(other));
  auto id = f.engine->Submit(NonAtomic("replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  auto l = f.backend.WaitLaunch(++f.launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", l.env.at("RSL_RUN_ID")).ok());
  f.backend.Succeed(l.attempt_id);
  const std::string waiting = store::RunIdFor(*id);
  ASSERT_TRUE(f.WaitForEvent(waiting, "OutputCommitWaiting"));
  EXPECT_EQ(f.Events(waiting, "OutputCommitWaiting")[0].step, "a");
  auto elsewhere = f.RunToEnd(Steps(std::string(kBase) + "-elsewhere", "replace", {"b"}));
  EXPECT_EQ(elsewhere.phase, spec::RunPhase::kSucceeded) << elsewhere.failure_message;
  EXPECT_EQ(f.store->GetRun(waiting)->phase, spec::RunPhase::kRunning);  // ends after them
  f.env.Advance(kOutputLockWaitMs);
  auto ended = f.engine->Wait(*id, 60'000);
  ASSERT_TRUE(ended.ok());
  f.WaitClaimGone(ended->id);
  const store::Run& blocked = *ended;
  auto failed = f.Events(blocked.id, "OutputCommitFailed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].message.rfind("output root s3://bucket/models/fraud stayed locked by run "
                                    "run-other (elsewhere:3) for 120 s",
                                    0),
            0u)
      << failed[0].message;
  EXPECT_EQ(f.objects->Below(kBase).count("a/who"), 0u);
  // Free: published, and the lease let go.
  ASSERT_TRUE(f.objects->Remove(ObjectLeaseUri(kBase)).ok());
  auto run = f.RunToEnd(NonAtomic("replace", {"a", "b"}));
  ASSERT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
  EXPECT_EQ(f.objects->Below(kBase)["a/who"], run.id);
  EXPECT_EQ(f.objects->Below(kBase)["b/who"], run.id);
  EXPECT_EQ(f.objects->ReadObject(ObjectLeaseUri(kBase)).status().code(), codes::kNotFound);
  EXPECT_EQ(f.Events(run.id, "OutputCommitted").size(), 2u);
}

// A publication that waited for the lease when its engine stopped is not lost: the
// recovered engine publishes the succeeded step before the run ends.
TEST(ObjectRootNonAtomicTest, APublicationWaitingWhenTheEngineStopsIsMadeAfterRecovery) {
  Fixture f("non-atomic-recover");
  LeaseRecord other{"run-other", "elsewhere:3", "t3", f.env.NowMs() + 60 * 60 * 1000};
  f.objects->Put(ObjectLeaseUri(kBase), LeaseJson(other));
  auto id = f.engine->Submit(NonAtomic("replace", {"a"}), "alice");
  ASSERT_TRUE(id.ok());
  auto l = f.backend.WaitLaunch(++f.launched);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_OUTPUT") + "/who", l.env.at("RSL_RUN_ID")).ok());
  f.backend.Succeed(l.attempt_id);
  const std::string run_id = store::RunIdFor(*id);
  ASSERT_TRUE(f.WaitForEvent(run_id, "OutputCommitWaiting"));
  f.Restart();
  ASSERT_TRUE(f.objects->Remove(ObjectLeaseUri(kBase)).ok());  // the other commit ended
  f.env.Advance(1'000);
  auto run = f.engine->Wait(*id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(f.objects->Below(kBase)["a/who"], run_id);
}

TEST(ObjectRootNonAtomicTest, VersionedMovesLatestWhenTheRunSucceeds) {
  Fixture f("non-atomic-versioned");
  auto first = f.RunToEnd(NonAtomic("versioned", {"a"}));
  ASSERT_EQ(first.phase, spec::RunPhase::kSucceeded) << first.failure_message;
  EXPECT_EQ(f.objects->ReadObject(ObjectLatestUri(kBase))->bytes, first.id);
  auto second = f.RunToEnd(NonAtomic("versioned", {"a"}));
  ASSERT_EQ(second.phase, spec::RunPhase::kSucceeded) << second.failure_message;
  EXPECT_EQ(f.objects->ReadObject(ObjectLatestUri(kBase))->bytes, second.id);
  EXPECT_EQ(f.objects->Below(kBase)[first.id + "/a/who"], first.id);
  EXPECT_EQ(f.objects->Below(kBase)[second.id + "/a/who"], second.id);
  bool moved = false;
  for (const auto& e : f.Events(second.id, "OutputCommitted")) {
    if (e.message.find("; " + ObjectLatestUri(kBase) + " -> " + second.id) != std::string::npos)
      moved = true;
  }
  EXPECT_TRUE(moved);
  EXPECT_EQ(f.objects->ReadObject(ObjectLeaseUri(kBase)).status().code(), codes::kNotFound);
}

}  // namespace
}  // namespace rsl::engine
