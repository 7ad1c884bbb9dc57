// Engine tests with a fake backend and a fake clock over the real SQLite store: hooks,
// admission workers, runs ending together, metrics in `when`, commit and discard, cancel and
// timeouts, secrets kept out of the records, recovery, subscribers.
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

// Runs that end in one turn share the store transactions of their end (the turn that holds
// their last exits and the decision to commit, then the terminal records), and each one is
// committed whole.
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
  // The turn with the decision to commit, then the terminal records: 2 (a late progress
  // poll may add one); one per run would be 5, a decision of its own 3.
  EXPECT_LE(f.engine->stats().batches - before, 3);
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

// The adopted attempt is the one launched, field by field: its launch record left out what
// its run shares, and the recovering engine put it back from the run.
TEST(EngineTest, RecoverAdoptsRunningAttemptsAndFinishesTheRun) {
  Fixture f("recover");
  auto w = Parse(
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: recover\n"
      "  namespace: risk\n  labels: {team: fraud}\nspec:\n"
      "  pipeline:\n    - name: a\n      command: [a, --x]\n      timeout: 90s\n"
      "      env: {LANG: C, MODE: fast}\n"
      "      resources: {cpu: 500m, memory: 64Mi}\n"
      "    - {name: b, command: [b], dependsOn: [a]}\n");
  auto id = f.engine->Submit(w, "alice");
  auto a = f.backend.WaitLaunch(1);
  f.engine->Stop();  // the "crash": steps keep running, nothing more is recorded
  f.Restart();
  ASSERT_TRUE(f.engine->Recover().ok());
  ASSERT_TRUE(f.backend.WaitAdopted(1));
  backend::LaunchSpec got = f.backend.adopted()[0];
  EXPECT_EQ(got.attempt_id, a.attempt_id);
  EXPECT_EQ(got.run_id, a.run_id);
  EXPECT_EQ(got.version_id, a.version_id);
  EXPECT_EQ(got.workload_name, "recover");
  EXPECT_EQ(got.namespace_, "risk");
  EXPECT_EQ(got.step, "a");
  EXPECT_EQ(got.attempt, 1);
  EXPECT_EQ(got.argv, a.argv);
  EXPECT_EQ(got.env, a.env);
  EXPECT_EQ(got.env.at("LANG"), "C");  // the step's, not the inherited value
  EXPECT_EQ(got.env.at("RSL_RUN_ID"), a.run_id);
  EXPECT_EQ(got.workdir, a.workdir);
  EXPECT_EQ(got.make_dirs, a.make_dirs);
  EXPECT_EQ(got.log_path, a.log_path);
  EXPECT_EQ(got.exit_file, a.exit_file);
  EXPECT_EQ(got.node, a.node);
  EXPECT_EQ(got.labels, a.labels);
  EXPECT_EQ(got.labels.at("team"), "fraud");
  EXPECT_EQ(got.cpu_millis, 500);
  EXPECT_EQ(got.memory_bytes, 64 << 20);
  EXPECT_EQ(got.timeout_ms, a.timeout_ms);
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

}  // namespace
}  // namespace rsl::engine
