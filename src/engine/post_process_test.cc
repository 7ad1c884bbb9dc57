// postProcess webhooks through the engine, against a real HTTP receiver (cpp-httplib) over
// the real SQLite store: the alert fires on a drop and not otherwise (previous version's
// metrics), a 503 is retried, a secret header reaches the receiver and nothing else,
// required hooks fail their step, pending hooks survive a restart.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "engine/post_process.h"
#include "engine/testing.h"
#include "spec/parse.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;
using testing::FakeClock;

constexpr char kSecretValue[] = "t0ken-n3ver-in-events";

// A webhook receiver on a free port: records each request; answers the next statuses queued
// in `script` (then 200).
class Receiver {
 public:
  Receiver() {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(req.body);
      tokens_.push_back(req.get_header_value("X-Token"));
      res.status = script_.empty() ? 200 : script_.front();
      if (!script_.empty()) script_.erase(script_.begin());
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  void Script(std::vector<int> statuses) {
    std::lock_guard<std::mutex> lock(mu_);
    script_ = std::move(statuses);
  }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  std::vector<std::string> tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> bodies_, tokens_;
  std::vector<int> script_;
};

struct Fixture {
  explicit Fixture(const std::string& name) {
    dir = ::testing::TempDir() + "post_process_test_" + name + "_" + std::to_string(getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto s = store::OpenSqliteStore(dir);
    EXPECT_TRUE(s.ok());
    store = std::move(*s);
    EXPECT_TRUE(
        store->PutConfigMap({"risk", "alert-creds", true, {{"token", kSecretValue}}, 1}).ok());
    Restart();
  }
  void Restart() {
    engine.reset();
    EngineOptions opts;
    opts.state_dir = dir;
    opts.env = &clock;
    engine = std::make_unique<Engine>(store.get(), &backend, Hooks{}, opts);
    EXPECT_TRUE(engine->Start().ok());
  }
  spec::Workload Parse(const std::string& steps) {
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: scorer\n"
        "  namespace: risk\nspec:\n  pipeline:\n" +
        steps;
    auto r = spec::ParseWorkload(yaml, "test.yaml");
    EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
    return r.workload;
  }
  // Submits, ends the n-th launch (1-based) writing `metrics`, waits for the run.
  store::Run RunOnce(const spec::Workload& w, size_t launch, const std::string& metrics,
                     bool succeed = true) {
    auto id = engine->Submit(w, "test");
    EXPECT_TRUE(id.ok());
    auto l = backend.WaitLaunch(launch);
    EXPECT_FALSE(l.attempt_id.empty());
    EXPECT_TRUE(WriteFileAtomic(l.env.at("RSL_METRICS_FILE"), metrics).ok());
    if (succeed) {
      backend.Succeed(l.attempt_id);
    } else {
      backend.Fail(l.attempt_id, backend::ExitKind::kFailed, 3);
    }
    auto run = engine->Wait(*id, 20'000);
    EXPECT_TRUE(run.ok());
    EXPECT_TRUE(engine->DrainPostProcess(20'000));
    return run.ok() ? *run : store::Run{};
  }
  std::vector<store::Event> Events(const std::string& run_id) {
    auto e = store->ListEvents(run_id, 0);
    return e.ok() ? *e : std::vector<store::Event>{};
  }
  std::string Find(const std::string& run_id, const std::string& reason) {
    for (const auto& e : Events(run_id)) {
      if (e.reason == reason) return e.message;
    }
    return "";
  }
  std::string dir;
  FakeClock clock;
  FakeBackend backend;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Engine> engine;
};

std::string AlertSteps(const std::string& url, const std::string& extra = "") {
  return "    - name: validate\n"
         "      command: [validate]\n"
         "      postProcess:\n"
         "        - when: \"output.validate.metrics.acc < previous.output.validate.metrics.acc * "
         "0.95\"\n" +
         extra +
         "          webhook:\n"
         "            url: " +
         url +
         "\n"
         "            headers: {X-Token: {secretRef: alert-creds, key: token}}\n"
         "            body: '{\"acc\": \"{{ output.validate.metrics.acc }}\", \"previous\": "
         "{{ previous.output.validate.metrics.acc }}, \"run\": \"{{ run.id }}\"}'\n";
}

TEST(PostProcessTest, AlertFiresOnADropAndNotOtherwise) {
  Receiver rx;
  Fixture f("drop");
  spec::Workload w = f.Parse(AlertSteps(rx.url()));

  // First version: nothing to compare with, so no alert, and the event says why.
  store::Run first = f.RunOnce(w, 1, R"({"acc": 0.90})");
  EXPECT_EQ(first.phase, spec::RunPhase::kSucceeded);
  std::string skipped = f.Find(first.id, "PostProcessSkipped");
  EXPECT_NE(skipped.find("previous.output.validate.metrics.acc is unknown: no earlier SUCCEEDED "
                         "run of this workload"),
            std::string::npos)
      << skipped;
  EXPECT_TRUE(rx.bodies().empty());

  // 0.80 < 0.90 * 0.95: the alert fires, with the values and the run id in its body.
  store::Run second = f.RunOnce(w, 2, R"({"acc": 0.80})");
  ASSERT_EQ(rx.bodies().size(), 1u);
  EXPECT_EQ(rx.bodies()[0],
            "{\"acc\": \"0.8\", \"previous\": 0.9, \"run\": \"" + second.id + "\"}");
  EXPECT_EQ(rx.tokens()[0], kSecretValue);
  std::string ok = f.Find(second.id, "PostProcessSucceeded");
  EXPECT_EQ(ok, "postProcess[0] POST " + rx.url() + ": answered 200");

  // 0.79 is within 5 % of 0.80 (the last SUCCEEDED version): no alert.
  store::Run third = f.RunOnce(w, 3, R"({"acc": 0.79})");
  EXPECT_EQ(rx.bodies().size(), 1u);
  EXPECT_NE(f.Find(third.id, "PostProcessSkipped").find("is false"), std::string::npos);

  // The secret's value is in no event of any run.
  for (const auto& run : {first.id, second.id, third.id}) {
    for (const auto& e : f.Events(run)) {
      EXPECT_EQ(e.message.find(kSecretValue), std::string::npos) << e.reason << ": " << e.message;
    }
  }
  // Nor in the pending directory (gone once sent) or the stored spec.
  EXPECT_FALSE(std::filesystem::exists(f.dir + "/post-process") &&
               !std::filesystem::is_empty(f.dir + "/post-process"));
  auto v = f.store->GetVersion(second.workload_id);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->spec_json.find(kSecretValue), std::string::npos);
}

TEST(PostProcessTest, A503IsRetried) {
  Receiver rx;
  rx.Script({503});
  Fixture f("retry");
  spec::Workload w = f.Parse(
      "    - name: validate\n      command: [validate]\n      postProcess:\n"
      "        - webhook: {url: '" +
      rx.url() + "', body: '{\"status\": \"{{ step.phase }}\"}'}\n");
  store::Run run = f.RunOnce(w, 1, "{}");
  EXPECT_EQ(run.phase, spec::RunPhase::kSucceeded);
  ASSERT_EQ(rx.bodies().size(), 2u);
  EXPECT_EQ(rx.bodies()[1], "{\"status\": \"SUCCEEDED\"}");
  EXPECT_EQ(f.Find(run.id, "PostProcessSucceeded"),
            "postProcess[0] POST " + rx.url() + ": answered 200 after 2 tries");
}

TEST(PostProcessTest, OnFailureOnlyFiresWhenTheStepFails) {
  Receiver rx;
  Fixture f("failure");
  spec::Workload w = f.Parse(
      "    - name: validate\n      command: [validate]\n      postProcess:\n"
      "        - on: [failure]\n"
      "          webhook: {url: '" +
      rx.url() + "', body: '{\"exit\": {{ step.exitCode }}}'}\n");
  store::Run ok = f.RunOnce(w, 1, "{}");
  EXPECT_EQ(ok.phase, spec::RunPhase::kSucceeded);
  EXPECT_TRUE(rx.bodies().empty());
  store::Run failed = f.RunOnce(w, 2, "{}", /*succeed=*/false);
  EXPECT_EQ(failed.phase, spec::RunPhase::kFailed);
  ASSERT_EQ(rx.bodies().size(), 1u);
  EXPECT_EQ(rx.bodies()[0], "{\"exit\": 3}");
}

TEST(PostProcessTest, AFailedHookDoesNotFailTheStepUnlessRequired) {
  Receiver rx;
  Fixture f("required");
  rx.Script({500, 500});
  spec::Workload lenient = f.Parse(
      "    - name: validate\n      command: [validate]\n      postProcess:\n"
      "        - webhook: {url: '" +
      rx.url() + "', retries: 1}\n");
  store::Run run = f.RunOnce(lenient, 1, "{}");
  EXPECT_EQ(run.phase, spec::RunPhase::kSucceeded);
  EXPECT_EQ(f.Find(run.id, "PostProcessFailed"),
            "postProcess[0] POST " + rx.url() + ": answered 500 after 2 tries");

  rx.Script({400});
  spec::Workload strict = f.Parse(
      "    - name: validate\n      command: [validate]\n      postProcess:\n"
      "        - required: true\n"
      "          webhook: {url: '" +
      rx.url() + "'}\n    - {name: after, command: [after], dependsOn: [validate]}\n");
  store::Run failed = f.RunOnce(strict, 2, "{}");
  EXPECT_EQ(failed.phase, spec::RunPhase::kFailed);
  EXPECT_EQ(rx.bodies().size(), 3u);  // a 400 is not retried
  auto steps = f.store->ListSteps(failed.id);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[0].phase, spec::StepPhase::kFailed);
  EXPECT_EQ((*steps)[0].failure_code, codes::kPostProcessFailed);
  EXPECT_NE((*steps)[0].message.find("required postProcess[0] POST " + rx.url() + ": answered 400"),
            std::string::npos)
      << (*steps)[0].message;
  EXPECT_EQ((*steps)[1].phase, spec::StepPhase::kSkipped);
  EXPECT_EQ(f.backend.launch_count(), 2u);  // `after` never ran

  // Answered 2xx, the required hook lets the step succeed and its dependent run.
  auto id = f.engine->Submit(strict, "test");
  ASSERT_TRUE(id.ok());
  f.backend.Succeed(f.backend.WaitLaunch(3).attempt_id);
  auto after = f.backend.WaitLaunch(4, 20'000);
  ASSERT_FALSE(after.attempt_id.empty());
  f.backend.Succeed(after.attempt_id);
  auto done = f.engine->Wait(*id, 20'000);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->phase, spec::RunPhase::kSucceeded);
  EXPECT_EQ(rx.bodies().size(), 4u);
}

TEST(PostProcessTest, PreviousInAStepsWhen) {
  Fixture f("when");
  spec::Workload w = f.Parse(
      "    - name: validate\n      command: [validate]\n"
      "    - name: publish\n      command: [publish]\n      dependsOn: [validate]\n"
      "      when: \"output.validate.metrics.acc >= previous.output.validate.metrics.acc\"\n");
  auto id = f.engine->Submit(w, "test");
  ASSERT_TRUE(id.ok());
  auto l = f.backend.WaitLaunch(1);
  ASSERT_TRUE(WriteFileAtomic(l.env.at("RSL_METRICS_FILE"), R"({"acc": 0.9})").ok());
  f.backend.Succeed(l.attempt_id);
  auto run = f.engine->Wait(*id, 20'000);
  ASSERT_TRUE(run.ok());
  auto steps = f.store->ListSteps(run->id);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[1].phase, spec::StepPhase::kSkipped);
  EXPECT_NE((*steps)[1].message.find("(previous.output.validate.metrics.acc is unknown: no "
                                     "earlier SUCCEEDED run of this workload)"),
            std::string::npos)
      << (*steps)[1].message;
}

TEST(PostProcessTest, APendingHookIsSentByTheNextEngine) {
  Receiver rx;
  Fixture f("pending");
  f.engine->Stop();
  Delivery d;
  d.key = "run-20260101-00000000.validate.0";
  d.run_id = "run-20260101-00000000";
  d.namespace_ = "risk";
  d.step = "validate";
  d.method = "POST";
  d.url = rx.url();
  d.headers = {{"X-Token", "", "alert-creds", "token"}};
  d.body = "{\"left\": true}";
  d.retries = 0;
  d.timeout_ms = 5000;
  ASSERT_TRUE(MakeDirs(f.dir + "/post-process").ok());
  ASSERT_TRUE(WriteFileAtomic(f.dir + "/post-process/" + d.key + ".json", d.ToJson()).ok());
  // The pending record names the secret, never its value.
  EXPECT_EQ(d.ToJson().find(kSecretValue), std::string::npos);
  f.Restart();
  ASSERT_TRUE(f.engine->DrainPostProcess(20'000));
  ASSERT_EQ(rx.bodies().size(), 1u);
  EXPECT_EQ(rx.bodies()[0], "{\"left\": true}");
  EXPECT_EQ(rx.tokens()[0], kSecretValue);
  EXPECT_FALSE(std::filesystem::exists(f.dir + "/post-process/" + d.key + ".json"));
  EXPECT_EQ(f.Find(d.run_id, "PostProcessSucceeded"),
            "postProcess[0] POST " + rx.url() + ": answered 200");
}

}  // namespace
}  // namespace rsl::engine
