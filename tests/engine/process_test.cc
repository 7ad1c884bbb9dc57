// The engine with real processes (local backend, rsl-shim, cgroups where writable): what a
// user of `seedctl run` sees, checked on the file system and in the store.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <thread>

#include "backend/local.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "spec/parse.h"
#include "store/store.h"

namespace rsl::engine {
namespace {

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = ::testing::TempDir() + "engine_process_" + name + "_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto s = store::OpenSqliteStore(dir_ + "/state");
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
    StartEngine(300);
  }
  void TearDown() override {
    engine_.reset();
    backend_.reset();
  }

  // (Re)starts the backend and the engine with this SIGTERM -> SIGKILL grace period.
  void StartEngine(int64_t grace_ms) {
    engine_.reset();
    backend_.reset();
    backend::LocalOptions lo;
    lo.state_dir = dir_ + "/state";
    lo.nvidia_smi = "";
    lo.grace_ms = grace_ms;
    // The steps leave markers in the test's directory: they run as our user here.
    lo.isolation = "none";
    lo.shim_path = std::string(RSL_BINARY_DIR) + "/bin/rsl-shim";
    auto b = backend::NewLocalBackend(lo);
    ASSERT_TRUE(b.ok()) << b.error().ToString();
    backend_ = std::move(*b);
    EngineOptions eo;
    eo.state_dir = dir_ + "/state";
    eo.stop_grace_ms = grace_ms;
    engine_ = std::make_unique<Engine>(store_.get(), backend_.get(), Hooks{}, eo);
    ASSERT_TRUE(engine_->Start().ok());
  }

  std::string Submit(const std::string& pipeline, const std::string& extra = "") {
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n"
        "  name: proc\nspec:\n" +
        extra + "  pipeline:\n" + pipeline;
    auto parsed = spec::ParseWorkload(yaml, "proc.yaml");
    EXPECT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0].ToString());
    auto id = engine_->Submit(parsed.workload, "test");
    EXPECT_TRUE(id.ok());
    return *id;
  }
  store::Run Run(const std::string& pipeline, const std::string& extra = "") {
    auto run = engine_->Wait(Submit(pipeline, extra), 60000);
    EXPECT_TRUE(run.ok()) << run.error().ToString();
    return *run;
  }
  // Polls the store until `pred` holds for the run's first step (or 30 s pass).
  store::Step WaitForStep(const std::string& id,
                          const std::function<bool(const store::Step&)>& pred) {
    auto run = store_->GetRun(id);
    EXPECT_TRUE(run.ok());
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    store::Step step;
    while (std::chrono::steady_clock::now() < until) {
      step = Steps(*run)[0];
      if (pred(step)) return step;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "step " << step.name << " never got there (phase " << spec::Name(step.phase)
                  << ")";
    return step;
  }
  const store::Event* FindEvent(const std::vector<store::Event>& events, const std::string& step,
                                const std::string& reason) {
    for (const auto& e : events) {
      if (e.step == step && e.reason == reason) return &e;
    }
    return nullptr;
  }
  std::vector<store::Step> Steps(const store::Run& r) { return *store_->ListSteps(r.id); }
  std::vector<std::string> Listing(const std::string& d) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(d)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(ProcessTest, FanOutFanInCommitsExactlyTheOutputs) {
  std::string out = dir_ + "/out";
  auto run = Run(
      "    - {name: split, command: [sh, -c, 'echo 1 > $RSL_OUTPUT/a; echo 2 > $RSL_OUTPUT/b']}\n"
      "    - {name: left, dependsOn: [split], command: [sh, -c, 'cat $RSL_INPUT_SPLIT/a > "
      "$RSL_OUTPUT/l']}\n"
      "    - {name: right, dependsOn: [split], command: [sh, -c, 'cat $RSL_INPUT_SPLIT/b > "
      "$RSL_OUTPUT/r']}\n"
      "    - {name: join, dependsOn: [left, right], command: [sh, -c,"
      " 'cat $RSL_INPUT_LEFT/l $RSL_INPUT_RIGHT/r > $RSL_OUTPUT/sum']}\n",
      "  data:\n    output:\n      uri: file://" + out + "\n");
  EXPECT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
  EXPECT_EQ(Listing(out),
            (std::vector<std::string>{"_RSL_COMMIT", "join", "left", "right", "split"}));
  EXPECT_EQ(*ReadFile(out + "/join/sum"), "1\n2\n");
  EXPECT_EQ(Listing(out + "/split"), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(PathExists(run.run_dir + "/staging"));
  // left and right ran in parallel: their lifetimes overlap.
  auto steps = Steps(run);
  EXPECT_LT(steps[1].started_at, steps[2].finished_at);
  EXPECT_LT(steps[2].started_at, steps[1].finished_at);
  for (const auto& s : steps) EXPECT_GT(s.peak_memory_bytes, 0) << s.name;
}

TEST_F(ProcessTest, FailsThenSucceedsOnRetry) {
  std::string marker = dir_ + "/tried";
  auto run = Run("    - name: flaky\n      command: [sh, -c, 'if [ -e " + marker +
                 " ]; then echo ok; else touch " + marker +
                 "; exit 7; fi']\n"
                 "      retryPolicy: {maxRetries: 2, backoff: 100ms}\n");
  EXPECT_EQ(run.phase, spec::RunPhase::kSucceeded);
  auto s = Steps(run)[0];
  EXPECT_EQ(s.attempts, 2);
  EXPECT_EQ(s.retries_used, 1);
  EXPECT_EQ(*ReadFile(AttemptLogPath(run.run_dir, "flaky", 2)), "ok\n");
  EXPECT_FALSE(PathExists(AttemptLogPath(run.run_dir, "flaky", 1)));  // silent: no log file
}

TEST_F(ProcessTest, ARetriedStepCommitsOnlyItsSucceededAttempt) {
  // Both ways of committing: the run's own outputs (the staging directory renamed whole) and
  // a data.output directory (step by step). The failed attempt left a partial file.
  std::string out = dir_ + "/out";
  for (std::string extra :
       {std::string(), "  data:\n    output:\n      uri: file://" + out + "\n"}) {
    std::string marker = dir_ + "/tried" + std::to_string(extra.size());
    auto run =
        Run("    - {name: once, command: [sh, -c, 'echo one > $RSL_OUTPUT/x']}\n"
            "    - name: flaky\n      command: [sh, -c, 'if [ -e " +
                marker +
                " ]; then echo good >"
                " $RSL_OUTPUT/good; else touch " +
                marker +
                " $RSL_OUTPUT/partial; exit 7; fi']\n"
                "      retryPolicy: {maxRetries: 2, backoff: 10ms}\n"
                "    - {name: never, dependsOn: [once], when: \"len([]) > 0\", "
                "command: [true]}\n",
            extra);
    ASSERT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
    std::string root = extra.empty() ? run.run_dir + "/outputs" : out;
    EXPECT_EQ(run.committed_uri, root);
    EXPECT_EQ(Listing(root), (std::vector<std::string>{"_RSL_COMMIT", "flaky", "once"}));
    EXPECT_EQ(Listing(root + "/flaky"), (std::vector<std::string>{"good"}));
    EXPECT_EQ(*ReadFile(root + "/once/x"), "one\n");
    EXPECT_FALSE(PathExists(run.run_dir + "/staging"));
    // Where each output went is its artifact's row (the step rows of an atomic run do not
    // carry it); the skipped step has none.
    std::map<std::string, std::string> published;
    auto artifacts = store_->ListArtifacts(run.id);
    ASSERT_TRUE(artifacts.ok());
    for (const auto& a : *artifacts) published[a.step] = a.uri;
    EXPECT_EQ(published, (std::map<std::string, std::string>{{"flaky", root + "/flaky"},
                                                             {"once", root + "/once"}}));
    for (const auto& st : Steps(run)) EXPECT_EQ(st.output_dir, "") << st.name;
    auto manifest = nlohmann::json::parse(*ReadFile(root + "/_RSL_COMMIT"));
    EXPECT_EQ(manifest["outputs"].size(), 2u);
  }
}

TEST_F(ProcessTest, MemoryLimitOomIsDetected) {
  std::string mechanism = backend::DetectLimitMechanism();
  auto run =
      Run("    - name: hog\n      command: [/usr/bin/python3, -c,"
          " 'x = bytearray(512 * 1024 * 1024)']\n"
          "      resources: {memory: 64Mi, cpu: 500m}\n");
  EXPECT_EQ(run.phase, spec::RunPhase::kFailed);
  auto events = *store_->ListEvents(run.id, 0);
  std::set<std::string> reasons;
  std::string limits;
  for (const auto& e : events) {
    reasons.insert(e.reason);
    if (e.reason == "LimitsApplied") limits = e.message;
  }
  EXPECT_EQ(limits, "limits via " + mechanism);
  if (mechanism == "rlimit") {
    EXPECT_EQ(run.failure_code, codes::kStepFailed);  // the allocation is refused instead
  } else {
    EXPECT_EQ(run.failure_code, codes::kStepOomKilled) << run.failure_message;
    EXPECT_TRUE(reasons.count("OOMKilled"));
  }
}

TEST_F(ProcessTest, StepTimeoutKillsTheWholeGroup) {
  std::string pids = dir_ + "/pids";
  auto run =
      Run("    - name: stuck\n      timeout: 1s\n      command: [sh, -c,"
          " 'trap \"\" TERM; sleep 300 & echo $! > " +
          pids + "; sleep 300']\n");
  EXPECT_EQ(run.phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run.failure_code, codes::kStepTimedOut);
  EXPECT_EQ(Steps(run)[0].phase, spec::StepPhase::kTimedOut);
  pid_t child = atoi(ReadFile(pids)->c_str());
  ASSERT_GT(child, 0);
  auto stat = ReadFile("/proc/" + std::to_string(child) + "/stat");
  EXPECT_TRUE(!stat.ok() || stat->find(") Z") != std::string::npos) << *stat;
}

// A step that ignores SIGTERM past its timeout: TIMED_OUT and its TimedOut event as soon as
// the timeout fires, while the grace period runs; the SIGKILL at its end completes it.
TEST_F(ProcessTest, AStepIgnoringSigtermIsTimedOutWhenItsTimeoutFires) {
  constexpr int64_t kGraceMs = 4000;
  StartEngine(kGraceMs);
  std::string id = Submit(
      "    - name: stubborn\n      timeout: 1s\n"
      "      command: [sh, -c, 'trap \"\" TERM; sleep 300']\n");
  auto timed_out = WaitForStep(id, [](const store::Step& s) {
    return s.phase != spec::StepPhase::kPending && s.phase != spec::StepPhase::kRunning;
  });
  int64_t seen_at = Env::Default()->NowMs();
  EXPECT_EQ(timed_out.phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(timed_out.failure_code, codes::kStepTimedOut);
  EXPECT_EQ(timed_out.finished_at, 0);  // the attempt is still being stopped
  EXPECT_TRUE(store::StepAttemptLive(timed_out));
  auto run = store_->GetRun(id);
  EXPECT_EQ(run->phase, spec::RunPhase::kRunning);
  auto events = *store_->ListEvents(run->id, 0);
  const store::Event* fired = FindEvent(events, "stubborn", "TimedOut");
  ASSERT_NE(fired, nullptr);
  EXPECT_EQ(fired->message, "step exceeded its time limit of 1s");
  EXPECT_GE(fired->time - timed_out.started_at, 1000);
  EXPECT_LT(fired->time - timed_out.started_at, 1000 + kGraceMs / 2) << "recorded at the kill";
  EXPECT_LT(seen_at - timed_out.started_at, 1000 + kGraceMs) << "seen only after the grace";

  auto done = engine_->Wait(id, 60000);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(done->failure_code, codes::kStepTimedOut);
  auto step = Steps(*done)[0];
  EXPECT_EQ(step.phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(step.signal, SIGKILL);
  EXPECT_GE(step.finished_at - fired->time, kGraceMs / 2) << "the grace period ran";
  events = *store_->ListEvents(done->id, 0);
  std::vector<std::string> order;
  for (const auto& e : events) {
    if (e.step == "stubborn") order.push_back(e.reason);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"Scheduled", "Started", "TimedOut", "Failed"}));
}

// With a run timeout as well, the step's own timeout, which fired first, is the step's record;
// the run ends TIMED_OUT for its own limit.
TEST_F(ProcessTest, AStepTimeoutFiringBeforeTheRunTimeoutIsRecorded) {
  constexpr int64_t kGraceMs = 4000;
  StartEngine(kGraceMs);
  std::string id = Submit(
      "    - name: stubborn\n      timeout: 1s\n"
      "      command: [sh, -c, 'trap \"\" TERM; sleep 300']\n",
      "  timeout: 3s\n");
  auto done = engine_->Wait(id, 60000);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->phase, spec::RunPhase::kTimedOut);
  EXPECT_EQ(done->failure_code, codes::kWorkloadTimedOut);
  auto step = Steps(*done)[0];
  EXPECT_EQ(step.phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(step.failure_code, codes::kStepTimedOut);
  auto events = *store_->ListEvents(done->id, 0);
  const store::Event* step_fired = FindEvent(events, "stubborn", "TimedOut");
  const store::Event* run_fired = FindEvent(events, "", "TimedOut");
  ASSERT_NE(step_fired, nullptr);
  ASSERT_NE(run_fired, nullptr);
  EXPECT_EQ(step_fired->message, "step exceeded its time limit of 1s");
  EXPECT_LT(step_fired->seq, run_fired->seq);
  EXPECT_LT(step_fired->time - step.started_at, 1000 + kGraceMs / 2);
}

// While a step runs, the engine holds its latest usage sample (from the supervisor, about
// every second): memory it holds and CPU it burned, before it ends.
TEST_F(ProcessTest, LiveUsageOfARunningStep) {
  std::string id = Submit(
      "    - name: hog\n      resources: {memory: 256Mi}\n"
      "      command: [/usr/bin/python3, -c,"
      " \"x = b'a' * (80 << 20)\\nwhile True: pass\\n\"]\n");
  auto running =
      WaitForStep(id, [](const store::Step& s) { return s.phase == spec::StepPhase::kRunning; });
  std::optional<backend::AttemptUsage> live;
  for (int i = 0; i < 3000; ++i) {
    live = engine_->LiveUsage(running.attempt_id);
    if (live && live->usage.cpu_ms >= 300 && live->usage.peak_memory_bytes >= (60LL << 20)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(live.has_value());
  EXPECT_GE(live->usage.cpu_ms, 300);
  EXPECT_GE(live->usage.peak_memory_bytes, 60LL << 20);
  EXPECT_EQ(Steps(*store_->GetRun(id))[0].phase, spec::StepPhase::kRunning);
  ASSERT_TRUE(engine_->Cancel(id, "test").ok());
  auto done = engine_->Wait(id, 60000);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->phase, spec::RunPhase::kCancelled);
  EXPECT_FALSE(engine_->LiveUsage(running.attempt_id).has_value());  // the exit has the totals
}

// Secret values shorter than spec::kMinMaskedSecretBytes are left alone in the log (masking
// "ab" would damage every word containing it); longer ones are masked.
TEST_F(ProcessTest, ShortSecretValuesAreNotMaskedInTheLog) {
  store::ConfigMap secret;
  secret.namespace_ = "default";
  secret.name = "creds";
  secret.secret = true;
  secret.data = {{"PIN", "ab"}, {"TOKEN", "tok-123456"}};
  ASSERT_TRUE(store_->PutConfigMap(secret).ok());
  auto run =
      Run("    - name: talk\n      envFrom: [{secretRef: creds}]\n"
          "      command: [sh, -c, 'echo about a cab $PIN $TOKEN']\n");
  ASSERT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
  EXPECT_EQ(*ReadFile(AttemptLogPath(run.run_dir, "talk", 1)), "about a cab ab ***\n");
}

TEST_F(ProcessTest, MetricsFlowIntoWhen) {
  auto run = Run(
      "    - {name: eval, command: [sh, -c, 'echo {\\\"f1_score\\\": 0.91} > $RSL_METRICS_FILE']}\n"
      "    - {name: train, dependsOn: [eval], when: 'output.eval.metrics.f1_score > 0.85',"
      " command: ['true']}\n"
      "    - {name: fallback, dependsOn: [eval], when: 'output.eval.metrics.f1_score <= 0.85',"
      " command: ['true']}\n");
  EXPECT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
  auto steps = Steps(run);
  EXPECT_EQ(steps[0].metrics_json, "{\"f1_score\":0.91}");
  EXPECT_EQ(steps[1].phase, spec::StepPhase::kSucceeded);
  EXPECT_EQ(steps[2].phase, spec::StepPhase::kSkipped);
}

// A step's last progress and its metrics are read at its end, too short for any poll; a
// step that left its working directory empty (the supervisor says so) has neither.
TEST_F(ProcessTest, ProgressAndMetricsAreReadAtTheEndUnlessTheStepLeftNothing) {
  auto run =
      Run("    - {name: busy, command: [sh, -c, 'echo 7/7 > $RSL_PROGRESS_FILE;"
          " echo {\\\"n\\\": 7} > $RSL_METRICS_FILE']}\n"
          "    - {name: idle, dependsOn: [busy], command: ['true']}\n");
  ASSERT_EQ(run.phase, spec::RunPhase::kSucceeded) << run.failure_message;
  auto steps = Steps(run);
  EXPECT_EQ(steps[0].progress, "7/7");
  EXPECT_EQ(steps[0].metrics_json, "{\"n\":7}");
  EXPECT_EQ(steps[1].progress, "");
  EXPECT_EQ(steps[1].metrics_json, "{}");
}

TEST_F(ProcessTest, AtomicFailureLeavesNoOutput) {
  std::string out = dir_ + "/out";
  auto run = Run(
      "    - {name: good, command: [sh, -c, 'echo x > $RSL_OUTPUT/part']}\n"
      "    - {name: bad, dependsOn: [good], command: [sh, -c, 'echo y > $RSL_OUTPUT/p; exit 1']}\n",
      "  data:\n    output:\n      uri: " + out + "\n");
  EXPECT_EQ(run.phase, spec::RunPhase::kFailed);
  EXPECT_EQ(run.failure_code, codes::kStepFailed);
  EXPECT_FALSE(PathExists(out));
  EXPECT_FALSE(PathExists(run.run_dir + "/staging"));
}

TEST_F(ProcessTest, DependentStartsWithinMillisecondsOfItsDependency) {
  auto run =
      Run("    - {name: a, command: ['true']}\n"
          "    - {name: b, dependsOn: [a], command: ['true']}\n"
          "    - {name: c, dependsOn: [b], command: ['true']}\n");
  ASSERT_EQ(run.phase, spec::RunPhase::kSucceeded);
  auto steps = Steps(run);
  // Engine time between recording a step's end and launching its dependent.
  EXPECT_LE(steps[1].started_at - steps[0].finished_at, 100);
  EXPECT_LE(steps[2].started_at - steps[1].finished_at, 100);
}

}  // namespace
}  // namespace rsl::engine
