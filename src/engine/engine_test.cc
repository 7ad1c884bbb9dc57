// Engine tests with a fake backend and a fake clock over the real SQLite store: the
// executor's records, events, environment, commit/discard and recovery.
#include "engine/engine.h"

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
#include "engine/engine_internal.h"
#include "engine/testing.h"
#include "spec/parse.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;
using testing::FakeClock;

std::string FreshDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "engine_test_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

spec::Workload Parse(const std::string& yaml) {
  auto r = spec::ParseWorkload(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

std::string Header(const std::string& name) {
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
         "\n  namespace: risk\nspec:\n";
}

struct Fixture {
  explicit Fixture(const std::string& name, std::vector<sched::Node> nodes = {})
      : dir(FreshDir(name)), backend(std::move(nodes)) {
    auto s = store::OpenSqliteStore(dir);
    EXPECT_TRUE(s.ok());
    store = std::move(*s);
    Restart();
  }
  void Restart() {
    engine.reset();
    EngineOptions opts;
    opts.state_dir = dir;
    opts.env = &clock;
    engine = std::make_unique<Engine>(store.get(), &backend, hooks, opts);
    EXPECT_TRUE(engine->Start().ok());
  }
  std::vector<std::string> Reasons(const std::string& run_id, const std::string& step = "*") {
    std::vector<std::string> out;
    auto events = store->ListEvents(run_id, 0);
    for (const auto& e : *events) {
      if (step == "*" || e.step == step)
        out.push_back((e.step.empty() ? "run" : e.step) + ":" + e.reason);
    }
    return out;
  }
  std::string dir;
  FakeClock clock;
  FakeBackend backend;
  Hooks hooks;  // set, then Restart(), to run with hooks
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Engine> engine;
};

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Index of `s` in `v` (v.size() when absent).
size_t Find(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

// Polls `done` (the engine's loop works on its own thread) for up to 5 s of real time.
bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

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
  EXPECT_EQ((*steps)[0].output_dir, out + "/prep");
  auto artifacts = f.store->ListArtifacts(run->id);
  EXPECT_EQ(artifacts->size(), 4u);
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

// A hook's event about the step that ends the run (the model layer's ModelRecorded) is
// durable with that step's end: stored before Wait returns, even though the engine stops
// right after.
class RecordingHook : public StepHook {
 public:
  std::string name() const override { return "recording"; }
  void OnStepStarted(const RunInfo&, const spec::Step&, const backend::LaunchSpec&,
                     RunControl* control) override {
    control_ = control;
  }
  Status AfterStep(const RunInfo& run, const spec::Step& step, const StepOutcome&) override {
    if (control_) control_->EmitEvent(run.run_id, step.name, "ModelRecorded", "recorded");
    return Status::Ok();
  }
  RunControl* control_ = nullptr;
};

// Holds the engine's loop in OnStepStarted of a step named "gate" until Open().
class GateHook : public StepHook {
 public:
  std::string name() const override { return "gate"; }
  void OnStepStarted(const RunInfo&, const spec::Step& step, const backend::LaunchSpec&,
                     RunControl*) override {
    if (step.name == "gate") opened_.wait_for(std::chrono::seconds(30));
  }
  void Open() { open_.set_value(); }

 private:
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
};

// Holds the admission of workloads named "slow" until opened.
class SlowAdmission : public AdmissionCheck {
 public:
  std::string name() const override { return "slow"; }
  Status Check(const RunInfo& run, AdmissionReport*) override {
    if (run.workload->name == "slow") {
      entered_.set_value();
      opened_.wait_for(std::chrono::seconds(30));
    }
    return Status::Ok();
  }
  void WaitEntered() { entered_future_.wait_for(std::chrono::seconds(30)); }
  void Open() { open_.set_value(); }

 private:
  std::promise<void> entered_, open_;
  std::shared_future<void> entered_future_ = entered_.get_future().share();
  std::shared_future<void> opened_ = open_.get_future().share();
};

// Admission runs on kept workers: workloads admitted one after another reuse one thread, and
// a workload whose admission waits (an object store, a large input) holds up no other's.
TEST(EngineTest, AdmissionWorkersAreReusedAndASlowAdmissionHoldsUpNoOther) {
  Fixture f("admission_workers");
  auto slow_check = std::make_shared<SlowAdmission>();
  f.hooks.admission.push_back(slow_check);
  f.Restart();
  const int64_t before = f.engine->stats().admission_threads;
  auto slow = f.engine->Submit(
      Parse(Header("slow") + "  pipeline:\n    - {name: s, command: [s]}\n"), "alice");
  ASSERT_TRUE(slow.ok());
  slow_check->WaitEntered();
  constexpr int kFast = 8;
  for (int k = 0; k < kFast; ++k) {
    auto id = f.engine->Submit(
        Parse(Header("fast-" + std::to_string(k)) + "  pipeline:\n    - {name: a, command: [a]}\n"),
        "alice");
    ASSERT_TRUE(id.ok());
    f.backend.Succeed(f.backend.WaitLaunch(size_t(k) + 1).attempt_id);
    auto run = f.engine->Wait(*id, 10000);
    ASSERT_TRUE(run.ok()) << run.error().ToString();
    EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << k;
  }
  auto held = f.store->GetRun(*slow);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->phase, spec::RunPhase::kPending) << "its admission is still waiting";
  // The slow one's worker and one more, reused by the eight (a worker goes idle once its
  // admission returned, before its run ends); a thread each would be 9.
  const int64_t started = f.engine->stats().admission_threads - before;
  EXPECT_GE(started, 2);
  EXPECT_LE(started, 5);
  slow_check->Open();
  f.backend.Succeed(f.backend.WaitLaunch(kFast + 1).attempt_id);
  auto run = f.engine->Wait(*slow, 10000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
}

// Runs that end in one turn share the store transactions of their end (the decision to
// commit, then the terminal records), and each one is committed whole.
TEST(EngineTest, RunsEndingInOneTurnShareTheirStoreTransactions) {
  Fixture f("finishbatch");
  auto gate = std::make_shared<GateHook>();
  f.hooks.steps.push_back(gate);
  f.Restart();
  std::vector<std::string> ids;
  for (int k = 0; k < 4; ++k) {
    auto id = f.engine->Submit(
        Parse(Header("ends-" + std::to_string(k)) + "  pipeline:\n    - {name: a, command: [a]}\n"),
        "alice");
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
    ASSERT_FALSE(f.backend.WaitLaunch(ids.size()).attempt_id.empty());
  }
  auto held = f.engine->Submit(
      Parse(Header("holds-the-loop") + "  pipeline:\n    - {name: gate, command: [g]}\n"), "alice");
  ASSERT_TRUE(held.ok());
  ASSERT_EQ(f.backend.WaitLaunch(5).step, "gate");  // the loop is in (or entering) the hook
  for (size_t k = 0; k < 4; ++k) f.backend.Succeed(f.backend.WaitLaunch(k + 1).attempt_id);
  const int64_t before = f.engine->stats().batches;
  gate->Open();  // the next turn takes the four exits at once
  for (const auto& id : ids) {
    auto run = f.engine->Wait(id, 5000);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
    EXPECT_EQ(run->commit_state, store::kCommitCommitted);
    EXPECT_TRUE(Has(f.Reasons(run->id), "run:OutputCommitted")) << Join(f.Reasons(run->id), " ");
  }
  // The turn, the decision to commit, the terminal records: 3 (a late progress poll may add
  // one); two per run would be 9.
  EXPECT_LE(f.engine->stats().batches - before, 4);
  f.backend.Succeed(f.backend.WaitLaunch(5).attempt_id);
  EXPECT_EQ(f.engine->Wait(*held, 5000)->phase, spec::RunPhase::kSucceeded);
}

TEST(EngineTest, HookEventsOfTheLastStepAreDurableWithIt) {
  Fixture f("hookevent");
  f.hooks.steps.push_back(std::make_shared<RecordingHook>());
  f.Restart();
  auto id = f.engine->Submit(
      Parse(Header("hookevent") + "  pipeline:\n    - {name: train, command: [t]}\n"), "alice");
  auto a = f.backend.WaitLaunch(1);
  f.backend.Succeed(a.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  f.engine->Stop();
  int64_t recorded = -1, run_ended = -1;
  auto events = f.store->ListEvents(run->id, 0);
  ASSERT_TRUE(events.ok());
  for (const auto& e : *events) {
    if (e.reason == "ModelRecorded") recorded = e.seq;
    if (e.step.empty() && e.reason == "Succeeded") run_ended = e.seq;
  }
  EXPECT_GT(recorded, 0) << Join(f.Reasons(run->id), " ");
  EXPECT_LT(recorded, run_ended) << "recorded after the run had ended";
}

TEST(EngineTest, MetricsFlowIntoWhen) {
  Fixture f("when");
  auto w = Parse(Header("gated") +
                 "  pipeline:\n"
                 "    - {name: eval, command: [eval]}\n"
                 "    - {name: deploy, command: [deploy], dependsOn: [eval],"
                 " when: \"output.eval.metrics.auc > 0.85\"}\n"
                 "    - {name: alert, command: [alert], dependsOn: [eval],"
                 " when: \"output.eval.metrics.auc <= 0.85\"}\n"
                 "    - {name: after-alert, command: [x], dependsOn: [alert]}\n");
  auto id = f.engine->Submit(w, "alice");
  auto eval = f.backend.WaitLaunch(1);
  ASSERT_TRUE(WriteFileAtomic(eval.env.at("RSL_METRICS_FILE"), "{\"auc\": 0.93}").ok());
  f.backend.Succeed(eval.attempt_id);
  auto deploy = f.backend.WaitLaunch(2);
  EXPECT_EQ(deploy.step, "deploy");
  f.backend.Succeed(deploy.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  auto steps = *f.store->ListSteps(run->id);
  EXPECT_EQ(steps[0].metrics_json, "{\"auc\":0.93}");
  EXPECT_EQ(steps[2].phase, spec::StepPhase::kSkipped);
  EXPECT_EQ(steps[2].message, "when output.eval.metrics.auc <= 0.85 is false");
  EXPECT_EQ(steps[3].phase, spec::StepPhase::kSkipped);
  EXPECT_EQ(steps[3].message, "dependency alert is SKIPPED");
}

TEST(EngineTest, FailedAtomicRunDiscardsButKeepsKeepOnFailure) {
  Fixture f("discard");
  std::string out = f.dir + "/published";
  auto w = Parse(Header("discard") + "  data:\n    output:\n      uri: " + out +
                 "\n  pipeline:\n"
                 "    - {name: a, command: [a], keepOnFailure: true}\n"
                 "    - {name: b, command: [b], dependsOn: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  ASSERT_TRUE(WriteFileAtomic(a.env.at("RSL_OUTPUT") + "/part", "x").ok());
  f.backend.Succeed(a.attempt_id);
  auto b = f.backend.WaitLaunch(2);
  ASSERT_TRUE(WriteFileAtomic(b.env.at("RSL_OUTPUT") + "/part", "y").ok());
  f.backend.Fail(b.attempt_id, backend::ExitKind::kFailed, 2);
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run->failure_code, codes::kStepFailed);
  EXPECT_EQ(run->failure_message, "step b: exit code 2");
  EXPECT_EQ(run->commit_state, store::kCommitDiscarded);
  EXPECT_FALSE(PathExists(out));                              // nothing published
  EXPECT_FALSE(PathExists(b.env.at("RSL_OUTPUT")));           // staging removed
  EXPECT_TRUE(PathExists(a.env.at("RSL_OUTPUT") + "/part"));  // kept, and said so
  auto events = *f.store->ListEvents(run->id, 0);
  bool named = false;
  for (const auto& e : events) {
    if (e.reason == "OutputDiscarded")
      named = e.message.find("kept (keepOnFailure): a: ") != std::string::npos;
  }
  EXPECT_TRUE(named);
}

TEST(EngineTest, NonAtomicPublishesEachStepWhenItSucceeds) {
  Fixture f("nonatomic");
  std::string out = f.dir + "/published";
  auto w = Parse(Header("nonatomic") + "  data:\n    output:\n      uri: " + out +
                 "\n  pipeline:\n    atomic: false\n    steps:\n"
                 "      - {name: a, command: [a]}\n"
                 "      - {name: b, command: [b], dependsOn: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  ASSERT_TRUE(WriteFileAtomic(a.env.at("RSL_OUTPUT") + "/part", "x").ok());
  f.backend.Succeed(a.attempt_id);
  auto b = f.backend.WaitLaunch(2);
  EXPECT_EQ(*ReadFile(out + "/a/part"), "x");  // published before b started
  EXPECT_EQ(b.env.at("RSL_INPUT_A"), out + "/a");
  f.backend.Fail(b.attempt_id, backend::ExitKind::kFailed, 1);
  auto run = f.engine->Wait(*id, 5000);
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  EXPECT_TRUE(PathExists(out + "/a/part"));  // stays: non-atomic
  EXPECT_FALSE(PathExists(out + "/b"));
}

TEST(EngineTest, CancelStopsRunningSteps) {
  Fixture f("cancel");
  auto w = Parse(Header("cancel") +
                 "  pipeline:\n    - {name: a, command: [a]}\n"
                 "    - {name: b, command: [b], dependsOn: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  ASSERT_TRUE(f.engine->Cancel(*id, "bob").ok());
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kCancelled);
  EXPECT_EQ(run->failure_code, codes::kWorkloadCancelled);
  EXPECT_EQ(run->failure_message, "cancelled by bob");
  EXPECT_EQ(f.backend.stops(), std::vector<std::string>{a.attempt_id});
  auto again = f.engine->Cancel(*id, "bob");
  EXPECT_EQ(again.code(), codes::kConflict);
  EXPECT_EQ(f.engine->Cancel("wl-20990101-00000000", "bob").code(), codes::kNotFound);
}

TEST(EngineTest, StepAndRunTimeoutsOnTheClock) {
  Fixture f("timeouts");
  auto w = Parse(Header("timeouts") +
                 "  timeout: 10m\n  pipeline:\n"
                 "    - {name: slow, command: [slow], timeout: 1m}\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  f.clock.Advance(60'000);
  ASSERT_TRUE(f.backend.WaitStops(1));
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run->failure_code, codes::kStepTimedOut);
  EXPECT_EQ((*f.store->ListSteps(run->id))[0].phase, spec::StepPhase::kTimedOut);

  auto w2 = Parse(Header("run-timeout") +
                  "  timeout: 2m\n  pipeline:\n"
                  "    - {name: slow, command: [slow]}\n");
  auto id2 = f.engine->Submit(w2, "alice");
  f.backend.WaitLaunch(2);
  f.clock.Advance(120'000);
  auto run2 = f.engine->Wait(*id2, 5000);
  ASSERT_TRUE(run2.ok());
  EXPECT_EQ(run2->phase, spec::RunPhase::kTimedOut);
  EXPECT_EQ(run2->failure_code, codes::kWorkloadTimedOut);
}

// The logins of spec.imagePullSecrets reach the backend with a step that has an image (for
// its pull), never the step's environment, the launch record or events.
TEST(EngineTest, PullSecretsReachTheBackendButNeverTheRecords) {
  Fixture f("pull-secrets");
  ASSERT_TRUE(
      f.store
          ->PutConfigMap(
              {"risk",
               "regcred",
               true,
               {{"REGISTRY", "127.0.0.1:5000"}, {"USERNAME", "ci"}, {"PASSWORD", "pull-pw-0815"}},
               1})
          .ok());
  auto w = Parse(Header("pull-secrets") +
                 "  imagePullSecrets: [regcred]\n  pipeline:\n"
                 "    - {name: a, image: \"127.0.0.1:5000/volc/t:v1\", command: [a]}\n"
                 "    - {name: b, command: [b], dependsOn: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  auto a = f.backend.WaitLaunch(1);
  ASSERT_EQ(a.pull_credentials.size(), 1u);
  EXPECT_EQ(a.pull_credentials.at("127.0.0.1:5000").username, "ci");
  EXPECT_EQ(a.pull_credentials.at("127.0.0.1:5000").password, "pull-pw-0815");
  EXPECT_NE(std::find(a.secret_values.begin(), a.secret_values.end(), "pull-pw-0815"),
            a.secret_values.end());
  for (const auto& [k, v] : a.env) EXPECT_EQ(v.find("pull-pw"), std::string::npos) << k;
  f.backend.Succeed(a.attempt_id);
  auto b = f.backend.WaitLaunch(2);
  EXPECT_TRUE(b.pull_credentials.empty());  // no image: nothing to pull
  f.backend.Succeed(b.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  auto attempts = f.store->ListAttempts(run->id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 2u);
  for (const auto& att : *attempts) {
    EXPECT_EQ(att.launch_json.find("pull-pw"), std::string::npos);
  }
  auto events = f.store->ListEvents("", 0);
  ASSERT_TRUE(events.ok());
  for (const auto& e : *events) EXPECT_EQ(e.message.find("pull-pw"), std::string::npos);
}

TEST(EngineTest, SecretsReachTheStepButNeverTheRecords) {
  Fixture f("secrets");
  ASSERT_TRUE(f.store->PutConfigMap({"risk", "common", false, {{"MODE", "fast"}}, 1}).ok());
  ASSERT_TRUE(f.store->PutConfigMap({"risk", "creds", true, {{"TOKEN", "s3cr3t-v4lue"}}, 1}).ok());
  auto w = Parse(Header("secrets") +
                 "  pipeline:\n    - name: a\n      command: [a]\n"
                 "      envFrom: [{configMapRef: common}, {secretRef: creds}]\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  EXPECT_EQ(a.env.at("MODE"), "fast");
  EXPECT_EQ(a.env.at("TOKEN"), "s3cr3t-v4lue");
  EXPECT_EQ(a.secret_values, std::vector<std::string>{"s3cr3t-v4lue"});
  f.backend.Succeed(a.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  auto attempts = f.store->ListAttempts(run->id);
  for (const auto& att : *attempts) {
    EXPECT_EQ(att.launch_json.find("s3cr3t"), std::string::npos);
  }
  auto all_events = f.store->ListEvents("", 0);
  for (const auto& e : *all_events) EXPECT_EQ(e.message.find("s3cr3t"), std::string::npos);

  auto missing = Parse(Header("missing") +
                       "  pipeline:\n    - name: a\n      command: [a]\n"
                       "      envFrom: [{secretRef: cred}]\n");
  auto id2 = f.engine->Submit(missing, "alice");
  auto run2 = f.engine->Wait(*id2, 5000);
  EXPECT_EQ(run2->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(run2->failure_code, codes::kNotFound);
  EXPECT_NE(run2->failure_message.find("did you mean \"creds\"?"), std::string::npos);
}

TEST(EngineTest, RecoverAdoptsRunningAttemptsAndFinishesTheRun) {
  Fixture f("recover");
  auto w = Parse(Header("recover") +
                 "  pipeline:\n    - {name: a, command: [a]}\n"
                 "    - {name: b, command: [b], dependsOn: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  f.engine->Stop();  // the "crash": steps keep running, nothing more is recorded
  f.Restart();
  ASSERT_TRUE(f.engine->Recover().ok());
  ASSERT_TRUE(f.backend.WaitAdopted(1));
  EXPECT_EQ(f.backend.adopted()[0].attempt_id, a.attempt_id);
  f.backend.Succeed(a.attempt_id);
  auto b = f.backend.WaitLaunch(2);
  EXPECT_EQ(b.step, "b");
  f.backend.Succeed(b.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  EXPECT_TRUE(Has(f.Reasons(run->id), "run:Recovered"));
  auto steps = *f.store->ListSteps(run->id);
  EXPECT_EQ(steps[0].attempts, 1);  // adopted, not run again
}

// The input descriptors admission reports reach the step hooks (the model layer puts them in
// its provenance), also for a run the engine recovered after a crash.
class DescriptorAdmission : public AdmissionCheck {
 public:
  std::string name() const override { return "data"; }
  Status Check(const RunInfo&, AdmissionReport* report) override {
    report->input_descriptors_json.push_back(R"({"uri":"hdfs://ns1/in","rows":3,"bytes":17})");
    return Status::Ok();
  }
};

class DescriptorHook : public StepHook {
 public:
  std::string name() const override { return "descriptors"; }
  Status AfterStep(const RunInfo& run, const spec::Step& step, const StepOutcome&) override {
    std::lock_guard<std::mutex> lock(mu);
    seen[step.name] = run.input_descriptors_json;
    return Status::Ok();
  }
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> seen;
};

TEST(EngineTest, StepHooksGetTheAdmittedInputDescriptors) {
  Fixture f("descriptors");
  auto hook = std::make_shared<DescriptorHook>();
  f.hooks.admission.push_back(std::make_shared<DescriptorAdmission>());
  f.hooks.steps.push_back(hook);
  f.Restart();
  auto id = f.engine->Submit(
      Parse(Header("descriptors") + "  pipeline:\n    - {name: a, command: [a]}\n"
                                    "    - {name: b, command: [b], dependsOn: [a]}\n"),
      "alice");
  auto a = f.backend.WaitLaunch(1);
  f.backend.Succeed(a.attempt_id);
  auto b = f.backend.WaitLaunch(2);
  f.engine->Stop();  // the "crash" while b runs
  f.Restart();
  ASSERT_TRUE(f.engine->Recover().ok());
  ASSERT_TRUE(f.backend.WaitAdopted(1));
  f.backend.Succeed(b.attempt_id);
  ASSERT_EQ(f.engine->Wait(*id, 5000)->phase, spec::RunPhase::kSucceeded);
  std::lock_guard<std::mutex> lock(hook->mu);
  const std::vector<std::string> want = {R"({"uri":"hdfs://ns1/in","rows":3,"bytes":17})"};
  EXPECT_EQ(hook->seen["a"], want);
  EXPECT_EQ(hook->seen["b"], want);  // after recovery: from the run's input lineage
}

TEST(EngineTest, LostAttemptIsRescheduledWithoutSpendingARetry) {
  Fixture f("lost");
  auto w = Parse(Header("lost") + "  pipeline:\n    - {name: a, command: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  f.backend.Fail(a.attempt_id, backend::ExitKind::kNodeLost, -1);
  auto a2 = f.backend.WaitLaunch(2);
  EXPECT_EQ(a2.attempt, 2);
  f.backend.Succeed(a2.attempt_id);
  auto run = f.engine->Wait(*id, 5000);
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  auto steps = *f.store->ListSteps(run->id);
  EXPECT_EQ(steps[0].retries_used, 0);
  EXPECT_TRUE(Has(f.Reasons(run->id), "a:Rescheduled"));
}

TEST(EngineTest, SubscribersSeeDurableEvents) {
  Fixture f("subscribe");
  std::mutex mu;
  std::vector<std::string> seen;
  int token = f.engine->Subscribe([&](const store::Event& e) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(e.reason);
  });
  int64_t before = f.store->LastEventSeq();
  auto w = Parse(Header("sub") + "  pipeline:\n    - {name: a, command: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  EXPECT_GT(f.engine->WaitForEvents(before, 5000), before);
  f.backend.Succeed(f.backend.WaitLaunch(1).attempt_id);
  f.engine->Wait(*id, 5000);
  f.engine->Unsubscribe(token);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(Has(seen, "Admitted"));
  EXPECT_EQ(seen.back(), "Succeeded");
}

TEST(PlacementDefaultsTest, UnrequestedStepsRunCoresPlusFourAtOnce) {
  sched::Node two, sixteen;
  two.cpu_millis = 2000;
  sixteen.cpu_millis = 16000;
  EXPECT_EQ(DefaultCpuMillis({two}), 333);           // 6 at once (ninja's default: 4)
  EXPECT_EQ(DefaultCpuMillis({two, sixteen}), 800);  // the largest node: 20 at once
  EXPECT_EQ(DefaultCpuMillis({}), 1000);
}

TEST(EngineTest, UnrequestedStepsFillTheNodeWithFourExtra) {
  Fixture f("jobs");  // one node of 8 cores
  std::string pipeline = "  pipeline:\n";
  for (int i = 0; i < 14; ++i) {
    pipeline += "    - {name: s" + std::to_string(i) + ", command: [x]}\n";
  }
  auto id = f.engine->Submit(Parse(Header("jobs") + pipeline), "alice");
  ASSERT_TRUE(id.ok());
  auto first = f.backend.WaitLaunch(12);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(f.backend.launch_count(), 12u);  // 8 cores + 4, the other two wait
  f.backend.Succeed(first.attempt_id);
  EXPECT_FALSE(f.backend.WaitLaunch(13).attempt_id.empty());  // a slot freed: the next one
}

// A run with more ready steps than a turn may launch: each turn launches at most the cap, and
// the rest follow in the next turns at once (no exit or timer needed). Seen from the backend:
// when it is asked to launch an attempt, the store holds that turn's attempts and no more.
TEST(EngineTest, AReadyStepFloodIsLaunchedInBoundedTurns) {
  struct CountingBackend : FakeBackend {
    store::Store* store = nullptr;
    std::mutex mu;
    std::vector<size_t> durable_at_launch;  // attempts in the store at each launch
    Status Launch(const backend::LaunchSpec& spec) override {
      auto attempts = store->ListAttempts(spec.run_id);
      {
        std::lock_guard<std::mutex> lock(mu);
        durable_at_launch.push_back(attempts.ok() ? attempts->size() : 0);
      }
      return FakeBackend::Launch(spec);
    }
  };
  std::string dir = FreshDir("flood");
  auto s = store::OpenSqliteStore(dir);
  ASSERT_TRUE(s.ok());
  CountingBackend backend;
  backend.queues = true;  // every step is handed over at once, as a cluster scheduler takes them
  backend.store = s->get();
  FakeClock clock;
  EngineOptions opts;
  opts.state_dir = dir;
  opts.env = &clock;
  opts.max_launches_per_run_per_turn = 4;
  Engine engine(s->get(), &backend, Hooks{}, opts);
  ASSERT_TRUE(engine.Start().ok());
  std::string pipeline = "  pipeline:\n";
  for (int i = 0; i < 10; ++i)
    pipeline += "    - {name: s" + std::to_string(i) + ", command: [x]}\n";
  auto id = engine.Submit(Parse(Header("flood") + pipeline), "alice");
  ASSERT_TRUE(id.ok());
  ASSERT_FALSE(backend.WaitLaunch(10).attempt_id.empty());
  std::lock_guard<std::mutex> lock(backend.mu);
  // Turns of 4, 4 and 2: the k-th launch (1-based) sees the attempts of its own turn and of
  // the turns before it, never those of a later turn.
  EXPECT_EQ(backend.durable_at_launch, (std::vector<size_t>{4, 4, 4, 4, 8, 8, 8, 8, 10, 10}));
}

TEST(LaunchJsonTest, RoundTripsEveryFieldAndMasksSecrets) {
  backend::LaunchSpec s;
  s.attempt_id = "wl-1/train/2";
  s.run_id = "wl-1";
  s.workload_name = "fraud";
  s.namespace_ = "team-a";
  s.step = "train";
  s.attempt = 2;
  s.argv = {"sh", "-c", "echo \"$X\"\n\\ done"};
  s.env = {{"PATH", "/usr/bin"},
           {"TOKEN", "s3cr3t"},
           {"ODD",
            "bad\xFF"
            "byte\x01"}};
  s.secret_values = {"s3cr3t"};
  s.workdir = "/w/train.2";
  s.make_dirs = {"/s/train.2"};
  s.log_path = "/a/train.2.log";
  s.exit_file = "/a/train.2.exit";
  s.cpu_millis = 1500;
  s.memory_bytes = int64_t{1} << 40;
  s.gpus = 2;
  s.capabilities = {"fp16", "nvlink"};
  s.node = "n1";
  s.labels = {{"team", "risk"}};
  s.timeout_ms = 90'000;
  std::string text = LaunchToJson(s);
  EXPECT_EQ(text.find("s3cr3t"), std::string::npos) << text;
  auto back = LaunchFromJson(text);
  ASSERT_TRUE(back.ok()) << text;
  EXPECT_EQ(back->attempt_id, s.attempt_id);
  EXPECT_EQ(back->run_id, s.run_id);
  EXPECT_EQ(back->workload_name, s.workload_name);
  EXPECT_EQ(back->namespace_, s.namespace_);
  EXPECT_EQ(back->step, s.step);
  EXPECT_EQ(back->attempt, 2);
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->env.at("PATH"), "/usr/bin");
  EXPECT_EQ(back->env.at("TOKEN"), "***");
  EXPECT_EQ(back->env.at("ODD"),
            "bad\xEF\xBF\xBD"
            "byte\x01");
  EXPECT_TRUE(back->secret_values.empty());
  EXPECT_EQ(back->workdir, s.workdir);
  EXPECT_EQ(back->make_dirs, s.make_dirs);
  EXPECT_EQ(back->log_path, s.log_path);
  EXPECT_EQ(back->exit_file, s.exit_file);
  EXPECT_EQ(back->cpu_millis, 1500);
  EXPECT_EQ(back->memory_bytes, int64_t{1} << 40);
  EXPECT_EQ(back->gpus, 2);
  EXPECT_EQ(back->capabilities, s.capabilities);
  EXPECT_EQ(back->node, "n1");
  EXPECT_EQ(back->labels, s.labels);
  ASSERT_TRUE(back->timeout_ms.has_value());
  EXPECT_EQ(*back->timeout_ms, 90'000);
  s.timeout_ms.reset();
  back = LaunchFromJson(LaunchToJson(s));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->timeout_ms.has_value());
  EXPECT_FALSE(back->serving.has_value());
}

// A serving step's settings survive the launch record whole: recovery adopts its replica set
// with them (the endpoint's port, the probe, the autoscaling bounds).
TEST(LaunchJsonTest, ServingSettingsRoundTrip) {
  backend::LaunchSpec s;
  s.attempt_id = "run-1/serve/1";
  s.version_id = "wl-20261202-0a1b2c3d";
  backend::ServingLaunch sv;
  sv.autoscaling = {70, 2, 4, 5'000};
  sv.readiness.path = "/ready";
  sv.readiness.port = 9000;
  sv.readiness.period_ms = 2'000;
  sv.readiness.failure_threshold = 5;
  sv.port = 18080;
  sv.ready_timeout_ms = 60'000;
  s.serving = sv;
  auto back = LaunchFromJson(LaunchToJson(s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->version_id, s.version_id);
  ASSERT_TRUE(back->serving.has_value());
  EXPECT_EQ(back->serving->autoscaling.target_utilization, 70);
  EXPECT_EQ(back->serving->autoscaling.min_replicas, 2);
  EXPECT_EQ(back->serving->autoscaling.max_replicas, 4);
  EXPECT_EQ(back->serving->autoscaling.scale_down_delay_ms, 5'000);
  EXPECT_EQ(back->serving->readiness.path, "/ready");
  EXPECT_EQ(back->serving->readiness.port, 9000);
  EXPECT_EQ(back->serving->readiness.period_ms, 2'000);
  EXPECT_EQ(back->serving->readiness.failure_threshold, 5);
  EXPECT_EQ(back->serving->port, 18080);
  EXPECT_EQ(back->serving->ready_timeout_ms, 60'000);
  // A record from before the settings were kept: serving, with the defaults.
  back = LaunchFromJson(R"({"attempt_id":"run-1/serve/1","serving":1})");
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->serving.has_value());
  EXPECT_EQ(back->serving->autoscaling.min_replicas, 1);
  EXPECT_FALSE(back->serving->port.has_value());
}

}  // namespace
}  // namespace rsl::engine
