// Engine tests with a fake backend and a fake clock over the real SQLite store: a run's
// records and events, retries on the clock, placement and capacity, queued steps, drains.
// (Hooks, secrets and recovery: engine_hooks_test.cc; launch records: launch_test.cc.)
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>

#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/engine_test_util.h"
#include "engine/testing.h"
#include "spec/parse.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;
using testing::FakeClock;
using testing::Find;
using testing::Fixture;
using testing::FreshDir;
using testing::Has;
using testing::Header;
using testing::Parse;
using testing::WaitUntil;

TEST(EngineTest, DiamondRunsCommitsAndRecordsEverything) {
  Fixture f("diamond");
  std::string out = f.dir + "/published";
  auto w = Parse(Header("diamond") + "  data:\n    output:\n      uri: file://" + out +
                 "\n  pipeline:\n"
                 "    - {name: prep, command: [prep]}\n"
                 "    - {name: left, command: [left], dependsOn: [prep]}\n"
                 "    - {name: right-side, command: [right], dependsOn: [prep]}\n"
                 "    - {name: join, command: [join], dependsOn: [left, right-side]}\n");
  auto id = f.engine->Submit(w, "alice");
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  auto prep = f.backend.WaitLaunch(1);
  ASSERT_EQ(prep.step, "prep");
  EXPECT_EQ(prep.env.at("RSL_STEP"), "prep");
  EXPECT_EQ(prep.env.at("RSL_WORKLOAD_ID"), *id);
  EXPECT_EQ(prep.env.at("RSL_RUN_ID"), store::RunIdFor(*id));
  std::string prep_out = prep.env.at("RSL_OUTPUT");
  ASSERT_TRUE(WriteFileAtomic(prep_out + "/data.csv", "a,b\n").ok());
  f.backend.Succeed(prep.attempt_id);
  auto l1 = f.backend.WaitLaunch(2);
  auto l2 = f.backend.WaitLaunch(3);
  EXPECT_EQ(l1.env.at("RSL_INPUT_PREP"), prep_out);  // dependencies' staged output
  f.backend.Succeed(l1.attempt_id);
  f.backend.Succeed(l2.attempt_id);
  auto join = f.backend.WaitLaunch(4);
  EXPECT_EQ(join.step, "join");
  EXPECT_TRUE(join.env.count("RSL_INPUT_LEFT"));
  EXPECT_TRUE(join.env.count("RSL_INPUT_RIGHT_SIDE"));
  f.backend.Succeed(join.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  EXPECT_EQ(run->commit_state, store::kCommitCommitted);
  EXPECT_EQ(run->committed_uri, out);
  // Exactly the outputs, published, with the manifest written last.
  EXPECT_EQ(*ReadFile(out + "/prep/data.csv"), "a,b\n");
  EXPECT_TRUE(IsDirectory(out + "/join"));
  EXPECT_TRUE(PathExists(out + "/_RSL_COMMIT"));
  EXPECT_FALSE(PathExists(prep_out));
  auto reasons = f.Reasons(run->id);
  EXPECT_EQ(reasons.front(), "run:Admitted");
  EXPECT_TRUE(Has(reasons, "prep:Scheduled"));
  EXPECT_TRUE(Has(reasons, "prep:Started"));
  EXPECT_TRUE(Has(reasons, "join:Succeeded"));
  EXPECT_TRUE(Has(reasons, "run:OutputCommitted"));
  EXPECT_EQ(reasons.back(), "run:Succeeded");
  // The log never shows a dependent placed before its dependencies' success.
  auto at = [&](const std::string& s) { return Find(reasons, s); };
  EXPECT_LT(at("prep:Succeeded"), at("left:Scheduled"));
  EXPECT_LT(at("prep:Succeeded"), at("right-side:Scheduled"));
  EXPECT_LT(at("left:Succeeded"), at("join:Scheduled"));
  EXPECT_LT(at("right-side:Succeeded"), at("join:Scheduled"));
  auto steps = f.store->ListSteps(run->id);
  ASSERT_EQ(steps->size(), 4u);
  for (const auto& s : *steps) {
    EXPECT_EQ(s.phase, spec::StepPhase::kSucceeded) << s.name;
    EXPECT_EQ(s.attempts, 1);
  }
  EXPECT_EQ((*steps)[0].output_dir, "");  // an atomic run's: its artifact says where it went
  auto artifacts = f.store->ListArtifacts(run->id);
  ASSERT_EQ(artifacts->size(), 4u);
  for (const auto& a : *artifacts) EXPECT_EQ(a.uri, out + "/" + a.step);
}

TEST(EngineTest, RetryWaitsForTheBackoffOnTheClock) {
  Fixture f("retry");
  auto w = Parse(Header("retry") +
                 "  pipeline:\n    - name: train\n      command: [train]\n"
                 "      retryPolicy: {maxRetries: 2, backoff: 30s, backoffFactor: 2}\n");
  auto id = f.engine->Submit(w, "alice");
  ASSERT_TRUE(id.ok());
  auto a1 = f.backend.WaitLaunch(1);
  // The engine handles exits on its own thread: wait until it has recorded the failure (and
  // so taken the backoff's start from the fake clock) before moving the clock.
  auto wait_retrying = [&](int64_t attempts) {
    for (int i = 0; i < 1000; ++i) {
      auto s = f.store->ListSteps(store::RunIdFor(*id));
      if (s.ok() && !s->empty() && (*s)[0].phase == spec::StepPhase::kRetrying &&
          (*s)[0].attempts == attempts) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  f.backend.Fail(a1.attempt_id, backend::ExitKind::kFailed, 3);
  ASSERT_TRUE(wait_retrying(1));
  EXPECT_EQ(f.backend.launch_count(), 1u);  // backoff: 30 s of fake time
  auto steps = f.store->ListSteps(store::RunIdFor(*id));
  EXPECT_EQ((*steps)[0].phase, spec::StepPhase::kRetrying);
  f.clock.Advance(29'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(f.backend.launch_count(), 1u);
  f.clock.Advance(1'000);
  auto a2 = f.backend.WaitLaunch(2);
  EXPECT_EQ(a2.attempt, 2);
  EXPECT_NE(a2.env.at("RSL_OUTPUT"), a1.env.at("RSL_OUTPUT"));  // per-attempt staging
  f.backend.Fail(a2.attempt_id, backend::ExitKind::kOomKilled, -1);
  ASSERT_TRUE(wait_retrying(2));
  f.clock.Advance(59'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(f.backend.launch_count(), 2u);  // 30 s x 2
  f.clock.Advance(1'000);
  auto a3 = f.backend.WaitLaunch(3);
  f.backend.Succeed(a3.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  steps = f.store->ListSteps(run->id);
  EXPECT_EQ((*steps)[0].attempts, 3);
  EXPECT_EQ((*steps)[0].retries_used, 2);
  auto reasons = f.Reasons(run->id, "train");
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "train:Retrying"), 2);
  EXPECT_TRUE(Has(reasons, "train:OOMKilled"));
}

TEST(EngineTest, NoNodeCouldEverFitIsRejectedNamingTheCapability) {
  sched::Node n;
  n.name = "local";
  n.cpu_millis = 4000;
  n.memory_bytes = 8LL << 30;
  sched::Device d;
  d.model = "A10";
  d.capabilities = {"tensor_core", "fp16_support"};
  n.gpus = {d};
  Fixture f("reject", {n});
  auto w =
      Parse(Header("needs-gpu") +
            "  pipeline:\n    - name: serve\n      command: [serve]\n"
            "      resources:\n        gpu: {count: 1, capability: [tensor_core, low_latency]}\n");
  auto id = f.engine->Submit(w, "alice");
  ASSERT_TRUE(id.ok());
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(run->failure_code, codes::kInsufficientResources);
  EXPECT_NE(run->failure_message.find("local: no GPU with capability low_latency"),
            std::string::npos)
      << run->failure_message;
  EXPECT_EQ(f.backend.launch_count(), 0u);
  EXPECT_TRUE(Has(f.Reasons(run->id), "run:InsufficientResources"))
      << Join(f.Reasons(run->id), " ");
}

TEST(EngineTest, BusyNodeKeepsTheStepPendingUntilCapacityFrees) {
  Fixture f("busy");
  auto w = Parse(Header("busy") +
                 "  pipeline:\n"
                 "    - {name: a, command: [a], resources: {cpu: 6}}\n"
                 "    - {name: b, command: [b], resources: {cpu: 6}}\n");
  auto id = f.engine->Submit(w, "alice");
  ASSERT_TRUE(id.ok());
  auto first = f.backend.WaitLaunch(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(f.backend.launch_count(), 1u);  // 6 + 6 > 8 cores
  std::string waiting = first.step == "a" ? "b" : "a";
  EXPECT_TRUE(Has(f.Reasons(store::RunIdFor(*id)), waiting + ":InsufficientResources"));
  f.backend.Succeed(first.attempt_id);
  auto second = f.backend.WaitLaunch(2);
  EXPECT_EQ(second.step, waiting);
  f.backend.Succeed(second.attempt_id);
  EXPECT_EQ(f.engine->Wait(*id, 5000)->phase, spec::RunPhase::kSucceeded);
}

// Runs that wait for capacity start in the order they were admitted, each told once why it
// waits, however many turns pass while the node is full.
TEST(EngineTest, RunsWaitingForCapacityStartOldestFirst) {
  Fixture f("fifo");
  auto submit = [&](int k) {
    auto id = f.engine->Submit(Parse(Header("fifo-" + std::to_string(k)) +
                                     "  pipeline:\n"
                                     "    - {name: a, command: [a], resources: {cpu: 6}}\n"),
                               "alice");
    EXPECT_TRUE(id.ok());
    return *id;
  };
  std::vector<std::string> ids = {submit(0)}, runs = {store::RunIdFor(ids[0])};
  auto first = f.backend.WaitLaunch(1);
  ASSERT_EQ(first.run_id, runs[0]);
  // Each one admitted (and told it waits) before the next is submitted: admission order.
  for (int k = 1; k <= 5; ++k) {
    ids.push_back(submit(k));
    runs.push_back(store::RunIdFor(ids.back()));
    ASSERT_TRUE(WaitUntil([&] { return Has(f.Reasons(runs.back()), "a:InsufficientResources"); }))
        << runs.back();
  }
  std::string running = first.attempt_id;
  for (size_t k = 1; k < runs.size(); ++k) {
    f.backend.Succeed(running);
    auto next = f.backend.WaitLaunch(k + 1);
    EXPECT_EQ(next.run_id, runs[k]) << "launch " << k + 1;
    running = next.attempt_id;
  }
  f.backend.Succeed(running);
  for (size_t k = 0; k < runs.size(); ++k) {
    EXPECT_EQ(f.engine->Wait(ids[k], 5000)->phase, spec::RunPhase::kSucceeded) << runs[k];
    auto reasons = f.Reasons(runs[k]);
    EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "a:InsufficientResources"), k ? 1 : 0)
        << runs[k];
  }
}

// Waiting runs with different smallest requests: a turn that frees too little for any of
// them starts none; one that frees enough starts every run that fits, oldest first, even a
// small one queued behind a big one.
TEST(EngineTest, FreedCapacityStartsEveryWaitingRunThatFitsOldestFirst) {
  Fixture f("fits");
  auto submit = [&](const std::string& name, int cpu) {
    auto id = f.engine->Submit(Parse(Header(name) +
                                     "  pipeline:\n    - {name: a, command: [a], "
                                     "resources: {cpu: " +
                                     std::to_string(cpu) + "}}\n"),
                               "alice");
    EXPECT_TRUE(id.ok());
    return *id;
  };
  auto big = submit("fits-big", 7);  // 8 cores: 1 left
  auto first = f.backend.WaitLaunch(1);
  auto six = submit("fits-six", 6);
  ASSERT_TRUE(
      WaitUntil([&] { return Has(f.Reasons(store::RunIdFor(six)), "a:InsufficientResources"); }));
  auto two = submit("fits-two", 2);
  ASSERT_TRUE(
      WaitUntil([&] { return Has(f.Reasons(store::RunIdFor(two)), "a:InsufficientResources"); }));
  auto one = submit("fits-one", 1);  // fits in what is left
  auto small = f.backend.WaitLaunch(2);
  EXPECT_EQ(small.run_id, store::RunIdFor(one));
  f.backend.Succeed(small.attempt_id);  // 1 free again: neither waiting run fits
  EXPECT_EQ(f.engine->Wait(one, 5000)->phase, spec::RunPhase::kSucceeded);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(f.backend.launch_count(), 2u);
  f.backend.Succeed(first.attempt_id);  // 8 free: 6, then 2 of the 2 left
  auto third = f.backend.WaitLaunch(3);
  auto fourth = f.backend.WaitLaunch(4);
  EXPECT_EQ(third.run_id, store::RunIdFor(six));
  EXPECT_EQ(fourth.run_id, store::RunIdFor(two));
  f.backend.Succeed(third.attempt_id);
  f.backend.Succeed(fourth.attempt_id);
  for (const auto& id : {big, six, two}) {
    EXPECT_EQ(f.engine->Wait(id, 5000)->phase, spec::RunPhase::kSucceeded) << id;
  }
}

// A backend with a queue (Slurm): the launched step waits PENDING there (no node, no start,
// the scheduler's reason as its message); it runs where the backend says, and its timeout
// counts from then.
TEST(EngineTest, QueuedStepIsPendingUntilTheBackendRunsIt) {
  Fixture f("queued");
  f.backend.queues = true;
  f.Restart();
  auto w = Parse(Header("queued") + "  pipeline:\n    - {name: q, command: [q], timeout: 1m}\n");
  auto id = f.engine->Submit(w, "alice");
  ASSERT_TRUE(id.ok());
  std::string run_id = store::RunIdFor(*id);
  auto a = f.backend.WaitLaunch(1);
  EXPECT_EQ(a.node, "");
  f.backend.StillQueued(a.attempt_id, "Slurm job 3 pending: Resources");
  auto step = [&] { return (*f.store->ListSteps(run_id))[0]; };
  ASSERT_TRUE(WaitUntil([&] { return step().message == "Slurm job 3 pending: Resources"; }));
  EXPECT_EQ(step().phase, spec::StepPhase::kPending);
  EXPECT_EQ(step().attempt_id, a.attempt_id);
  EXPECT_EQ(step().node, "");
  EXPECT_EQ(step().started_at, 0);
  f.clock.Advance(120'000);  // two minutes in the queue: no timeout
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(f.backend.stops().empty());
  f.backend.Run(a.attempt_id, "n2");
  ASSERT_TRUE(WaitUntil([&] { return step().phase == spec::StepPhase::kRunning; }));
  EXPECT_EQ(step().node, "n2");
  EXPECT_GT(step().started_at, 0);
  EXPECT_TRUE(Has(f.Reasons(run_id), "q:Started"));
  f.clock.Advance(60'000);
  ASSERT_TRUE(f.backend.WaitStops(1));
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->failure_code, codes::kStepTimedOut);
  EXPECT_EQ(step().node, "n2");
}

// Cancelled while queued: CANCELLED, and it shows no node and no duration (it never ran).
TEST(EngineTest, StepCancelledInTheQueueNeverRan) {
  Fixture f("queued-cancel");
  f.backend.queues = true;
  f.Restart();
  auto w = Parse(Header("queued-cancel") + "  pipeline:\n    - {name: q, command: [q]}\n");
  auto id = f.engine->Submit(w, "alice");
  ASSERT_TRUE(id.ok());
  f.backend.WaitLaunch(1);
  ASSERT_TRUE(f.engine->Cancel(*id, "alice").ok());
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kCancelled);
  auto s = (*f.store->ListSteps(run->id))[0];
  EXPECT_EQ(s.phase, spec::StepPhase::kCancelled);
  EXPECT_EQ(s.node, "");
  EXPECT_EQ(s.started_at, 0);
  EXPECT_EQ(s.wall_ms, 0);
  auto attempts = *f.store->ListAttempts(run->id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_GT(attempts[0].created_at, 0) << "the attempt keeps its launch time";
}

// The inventory follows the backend: a workload whose only node is drained waits (it is
// not refused) and runs once the node is back; nothing counts the scheduler's use twice.
TEST(EngineTest, DrainedNodeWaitsAndRunsAfterResume) {
  sched::Node n;
  n.name = "n1";
  n.cpu_millis = 2000;
  n.memory_bytes = 4LL << 30;
  n.state = spec::NodeState::kDrained;
  n.used_cpu_millis = 2000;  // the scheduler's own use: not the engine's business
  Fixture f("drained", {n});
  f.backend.queues = true;
  f.Restart();
  auto w = Parse(Header("drained") +
                 "  pipeline:\n    - {name: a, command: [a], resources: {cpu: 2}}\n");
  auto id = f.engine->Submit(w, "alice");
  ASSERT_TRUE(id.ok());
  std::string run_id = store::RunIdFor(*id);
  ASSERT_TRUE(WaitUntil([&] { return Has(f.Reasons(run_id), "a:InsufficientResources"); }));
  EXPECT_EQ(f.backend.launch_count(), 0u);
  EXPECT_EQ(f.store->GetRun(run_id)->phase, spec::RunPhase::kRunning);
  n.state = spec::NodeState::kReady;
  f.backend.SetNodes({n});
  auto a = f.backend.WaitLaunch(1);
  ASSERT_FALSE(a.attempt_id.empty());
  f.backend.Run(a.attempt_id, "n1");
  f.backend.Succeed(a.attempt_id);
  EXPECT_EQ(f.engine->Wait(*id, 5000)->phase, spec::RunPhase::kSucceeded);
}

TEST(EngineTest, FinalProgressIsReadWhenTheStepEnds) {
  Fixture f("progress");
  auto w = Parse(Header("progress") + "  pipeline:\n    - {name: a, command: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  // Written just before the end: no poll saw it.
  ASSERT_TRUE(WriteFileAtomic(a.env.at("RSL_PROGRESS_FILE"), "100%\n").ok());
  f.backend.Succeed(a.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  EXPECT_EQ((*f.store->ListSteps(run->id))[0].progress, "100%");
}

}  // namespace
}  // namespace rsl::engine
