// The policy hook with a real plateauing Python step and a real HTTP receiver: the step
// is stopped soon after its condition held, the webhook notified (with one retry), and the
// actions recorded.
#include "runtime/policy_hooks.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file.h"
#include "base/sqlite.h"
#include "base/strings.h"

namespace rsl::govern {
namespace {

using nlohmann::json;
using runtime::PolicyHook;
using runtime::PolicyHookOptions;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Records what the engine would do, and really stops the step's process.
class FakeRunControl : public engine::RunControl {
 public:
  explicit FakeRunControl(pid_t pid) : pid_(pid) {}
  Status StopStep(const std::string& run_id, const std::string& step, const std::string& reason,
                  const std::string& message, bool as_success) override {
    std::lock_guard<std::mutex> lock(mu);
    stops.push_back({step, reason, message, as_success});
    stop_time = Now();
    kill(pid_, SIGTERM);
    return Status::Ok();
  }
  void EmitEvent(const std::string& run_id, const std::string& step, const std::string& reason,
                 const std::string& message) override {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(reason + ": " + message);
  }
  struct Stop {
    std::string step, reason, message;
    bool as_success;
  };
  std::mutex mu;
  std::vector<Stop> stops;
  std::vector<std::string> events;
  double stop_time = 0;

 private:
  pid_t pid_;
};

// A training step whose loss improves for one second and then plateaus; it would run for
// 30 s if nothing stopped it.
constexpr char kPlateauStep[] = R"(
import json, os, time
path = os.environ["RSL_METRICS_STREAM"]
start = time.time()
loss = 2.0
with open(path, "a") as f:
    while time.time() - start < 30:
        now = time.time()
        if now - start < 1.0:
            loss *= 0.8
        f.write(json.dumps({"loss": loss, "gpu_util": 0.12, "ts": now}) + "\n")
        f.flush()
        time.sleep(0.1)
)";

TEST(PolicyHook, StopsARealPlateauedStepAndNotifiesTheWebhook) {
  std::string dir = "/tmp/rsl-govern-policy-" + std::to_string(getpid());
  RemoveAll(dir);
  ASSERT_TRUE(MakeDirs(dir + "/runs/run-1").ok());

  // The webhook receiver: fails the first POST to prove the retry.
  httplib::Server server;
  std::mutex mu;
  std::vector<std::string> bodies;
  std::atomic<int> posts{0};
  server.Post("/finance", [&](const httplib::Request& req, httplib::Response& res) {
    int n = ++posts;
    if (n == 1) {
      res.status = 503;
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    bodies.push_back(req.body);
    res.set_content("{}", "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread server_thread([&] { server.listen_after_bind(); });

  const std::string policy_yaml =
      "metadata: {name: plateau}\n"
      "rules:\n"
      "- name: plateau-stop\n"
      "  condition: \"loss_plateau_duration > 2 && gpu_util_avg < 0.3\"\n"
      "  action: \"stop; notify_finance_team\"\n"
      "  keepOutputs: true\n"
      "notify:\n"
      "  finance_team: {url: \"http://127.0.0.1:" +
      std::to_string(port) +
      "/finance\", retries: 3}\n"
      "metrics: {lossTolerance: 0.001, gpuUtilWindow: 30s}\n";
  PolicyParse parsed = ParsePolicy(policy_yaml, "plateau.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0].ToString();
  ASSERT_TRUE(StorePolicy(dir, parsed.policy, policy_yaml).ok());
  auto listed = ListPolicies(dir);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "plateau");

  spec::Workload w;
  w.name = "llama-sft";
  w.namespace_ = "llm";
  w.labels = {{"team", "llm"}};
  spec::Step step;
  step.name = "train";
  engine::RunInfo run{"wl-20240101-abcdef12", "run-1", dir, dir + "/runs/run-1", &w};
  backend::LaunchSpec launch;
  launch.attempt_id = "run-1/train/1";
  launch.run_id = "run-1";
  launch.step = "train";
  launch.attempt = 1;
  launch.workdir = dir + "/runs/run-1/work/train.1";
  ASSERT_TRUE(MakeDirs(launch.workdir).ok());

  auto hook = std::make_unique<PolicyHook>(dir, PolicyHookOptions{100, nullptr, std::nullopt});
  ASSERT_TRUE(hook->BeforeStep(run, step, &launch).ok());
  ASSERT_EQ(launch.env[kMetricsStreamEnv], launch.workdir + "/.rsl-metrics-stream.jsonl");

  std::string script = dir + "/step.py";
  ASSERT_TRUE(WriteFileAtomic(script, kPlateauStep).ok());
  double started = Now();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv(kMetricsStreamEnv, launch.env[kMetricsStreamEnv].c_str(), 1);
    execlp("python3", "python3", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  FakeRunControl control(pid);
  hook->OnStepStarted(run, step, launch, &control);
  int status = 0;
  waitpid(pid, &status, 0);  // the policy must end it long before its 30 s
  double ended = Now();
  engine::StepOutcome outcome;
  outcome.step = "train";
  outcome.attempt = 1;
  outcome.exit.attempt_id = launch.attempt_id;
  // AfterStep returns at once (it runs on the engine loop, which StopStep waits on); the
  // notification (sent after the stop, with one retry) completes in the background and the
  // hook's destructor waits for it.
  double before_after_step = Now();
  ASSERT_TRUE(hook->AfterStep(run, step, outcome).ok());
  EXPECT_LT(Now() - before_after_step, 0.1);
  hook.reset();
  server.stop();
  server_thread.join();

  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_LT(ended - started, 15.0);
  // When did the condition become true? 2 s after the last improvement in the stream.
  auto stream = ReadFile(launch.env[kMetricsStreamEnv]);
  ASSERT_TRUE(stream.ok());
  double best = 1e9, last_improvement = 0;
  for (const auto& line : Split(*stream, '\n')) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    double loss = j["loss"], ts = j["ts"];
    if (loss < best - 0.001) {
      best = loss;
      last_improvement = ts;
    }
  }
  double condition_true = last_improvement + 2;
  std::lock_guard<std::mutex> lock(control.mu);
  ASSERT_EQ(control.stops.size(), 1u);
  EXPECT_EQ(control.stops[0].reason, "PolicyStopped");
  EXPECT_TRUE(control.stops[0].as_success);
  EXPECT_NE(control.stops[0].message.find("plateau-stop"), std::string::npos);
  EXPECT_GE(control.stop_time, condition_true - 0.05);
  EXPECT_LE(control.stop_time, condition_true + 2.0) << "stopped too late";
  std::printf("policy stopped the step %.2f s after its condition held (poll 100 ms)\n",
              control.stop_time - condition_true);

  std::lock_guard<std::mutex> lock2(mu);
  EXPECT_EQ(posts.load(), 2);  // one 503, one retry
  ASSERT_EQ(bodies.size(), 1u);
  json body = json::parse(bodies[0]);
  EXPECT_EQ(body["rule"]["name"], "plateau-stop");
  EXPECT_EQ(body["rule"]["condition"], "loss_plateau_duration > 2 && gpu_util_avg < 0.3");
  EXPECT_EQ(body["workload"]["name"], "llama-sft");
  EXPECT_EQ(body["workload"]["namespace"], "llm");
  EXPECT_EQ(body["workload"]["step"], "train");
  EXPECT_EQ(body["workload"]["labels"]["team"], "llm");
  EXPECT_GT(body["metrics"]["loss_plateau_duration"].get<double>(), 2.0);
  EXPECT_NEAR(body["metrics"]["gpu_util_avg"].get<double>(), 0.12, 1e-9);
  bool notified = false;
  for (const auto& e : control.events) notified = notified || StartsWith(e, "PolicyNotified: ");
  EXPECT_TRUE(notified);

  // The actions are on record.
  auto db = Db::Open(StateDbPath(dir));
  ASSERT_TRUE(db.ok());
  auto st = (*db)->Prepare("SELECT action FROM govern_policy_actions ORDER BY id");
  ASSERT_TRUE(st.ok());
  std::vector<std::string> actions;
  while (st->Step()) actions.push_back(st->Text(0));
  EXPECT_EQ(actions, (std::vector<std::string>{"stop", "notify_finance_team"}));
  RemoveAll(dir);
}

}  // namespace
}  // namespace rsl::govern
