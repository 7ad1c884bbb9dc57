// Whole runs through the Engine (store, plan, staging and commit) on the Kubernetes backend,
// against the API-server double over real TLS with a fake kubelet that runs each Pod's
// command as a real local process (fake_kubelet.h). Staging is file:// (a directory the
// "nodes" share with the controller, as a hostPath or NFS mount would be).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "base/file.h"
#include "base/test_util.h"
#include "engine/engine.h"
#include "fake_kubelet.h"
#include "harness.h"
#include "k8s/backend.h"
#include "k8s/names.h"
#include "k8s/render.h"
#include "runtime/backends.h"
#include "runtime/runtime.h"
#include "spec/parse.h"
#include "store/store.h"

namespace rsl::k8stest {
namespace {

std::string Slurp(const std::string& path) {
  auto t = ReadFile(path);
  return t.ok() ? *t : "<missing " + path + ">";
}

class K8sEngineTest : public DoubleTest {
 protected:
  void SetUp() override {
    DoubleTest::SetUp();
    dir_ = ::testing::TempDir() + "k8s_engine_test/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(MakeDirs(dir_ + "/staging").ok());
    kubelet_ = std::make_unique<FakeKubelet>(server_.get(), "default", dir_ + "/kubelet");
  }
  void TearDown() override {
    if (engine_) engine_->Stop(true);
    engine_.reset();
    backend_.reset();
    store_.reset();
    kubelet_.reset();
  }

  void StartEngine() {
    k8s::K8sBackendOptions ko;
    ko.connection = ClientConnection(*server_);
    ko.retry = {4, 20, 200, 2'000};
    ko.staging_prefix = "file://" + dir_ + "/staging";
    ko.namespaces = namespaces_;
    ko.node_refresh_ms = 200;
    ko.watch_timeout_s = 5;
    ASSERT_TRUE(k8s::CheckK8sOptions(ko).ok());
    auto b = std::make_unique<k8s::K8sBackend>(std::move(ko));
    k8s_ = b.get();
    backend_ = std::move(b);
    store::StoreOptions so;
    so.sync_full = false;
    auto s = store::OpenSqliteStore(dir_ + "/state", so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    engine::EngineOptions eo;
    eo.state_dir = dir_ + "/state";
    eo.stop_grace_ms = 1000;
    engine_ = std::make_unique<engine::Engine>(store_.get(), backend_.get(), engine::Hooks{}, eo);
    auto st = engine_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  //! The controller goes away (its Pods keep running) and a new one over the same store
  //! adopts them.
  void RestartController() {
    engine_->Stop(false);
    engine_.reset();
    backend_.reset();
    store_.reset();
    StartEngine();
    ASSERT_TRUE(engine_->Recover().ok());
  }

  std::string Submit(const std::string& yaml) {
    auto parsed = spec::ParseWorkload(yaml, "test.yaml");
    EXPECT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0].ToString());
    if (!parsed.ok()) return "";
    auto id = engine_->Submit(parsed.workload, "test");
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : "";
  }

  std::map<std::string, store::Step> Steps(const std::string& run_id) {
    std::map<std::string, store::Step> out;
    auto steps = store_->ListSteps(run_id);
    if (steps.ok()) {
      for (auto& s : *steps) out[s.name] = s;
    }
    return out;
  }

  std::string EventText(const std::string& run_id) {
    std::string out;
    auto ev = store_->ListEvents(run_id, 0);
    if (!ev.ok()) return out;
    for (const auto& e : *ev) out += e.step + " " + e.reason + ": " + e.message + "\n";
    return out;
  }

  int LivePods() { return int(server_->List("pods", "default").size()); }
  int RunningPods() {
    int n = 0;
    for (const auto& pod : server_->List("pods", "default")) {
      n += pod["status"].value("phase", "") == "Running";
    }
    return n;
  }

  //! Whether an event of run `run_id` mentions `text` within WaitFor's time.
  bool WaitForEvent(const std::string& run_id, const std::string& text) {
    return WaitFor([&] { return EventText(run_id).find(text) != std::string::npos; });
  }

  //! Cancels workload `id` and waits for its run to end Cancelled.
  void CancelAndExpectCancelled(const std::string& id) {
    ASSERT_TRUE(engine_->Cancel(id, "test").ok());
    auto run = engine_->Wait(id, 60'000);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->phase, spec::RunPhase::kCancelled) << EventText(store::RunIdFor(id));
  }

  //! The step's attempt id of `run_id` (its newest attempt).
  std::string AttemptOf(const std::string& run_id, const std::string& step) {
    return Steps(run_id)[step].attempt_id;
  }

  std::string dir_;
  std::map<std::string, std::string> namespaces_;  //!< the backend's namespace mapping
  std::unique_ptr<FakeKubelet> kubelet_;
  k8s::K8sBackend* k8s_ = nullptr;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<engine::Engine> engine_;
};

constexpr char kFanYaml[] = R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: fan}
spec:
  pipeline:
    atomic: true
    steps:
      - name: ingest
        command: ["sh", "-c", "echo rows=100 > \"$RSL_OUTPUT/rows\"; echo ingest-log-line"]
      - name: left
        command: ["sh", "-c", "cat \"$RSL_INPUT_INGEST/rows\" > \"$RSL_OUTPUT/l\"; echo L >> \"$RSL_OUTPUT/l\""]
        dependsOn: [ingest]
      - name: right
        command: ["sh", "-c", "cat \"$RSL_INPUT_INGEST/rows\" > \"$RSL_OUTPUT/r\"; echo R >> \"$RSL_OUTPUT/r\""]
        dependsOn: [ingest]
      - name: join
        command: ["sh", "-c", "cat \"$RSL_INPUT_LEFT/l\" \"$RSL_INPUT_RIGHT/r\" > \"$RSL_OUTPUT/joined\"; test \"$RSL_BACKEND\" = k8s"]
        dependsOn: [left, right]
)yaml";

TEST_F(K8sEngineTest, FanOutFanInSucceedsWithCommittedOutputsAndCleansUp) {
  StartEngine();
  // The wire misbehaves meanwhile: a watch cut mid-stream, 429s and a 503 on pod creation.
  server_->CutNextWatchAfter(2);
  server_->InjectFault({"POST", "/pods", 429, "TooManyRequests", "0", 1});
  server_->InjectFault({"POST", "/pods", 503, "ServiceUnavailable", "", 1});
  std::string id = Submit(kFanYaml);
  ASSERT_FALSE(id.empty());
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString() << "\n"
                        << EventText(store::RunIdFor(id)) << LivePods() << " pod(s)";
  ASSERT_EQ(run->phase, spec::RunPhase::kSucceeded)
      << run->failure_code << ": " << run->failure_message << "\n"
      << EventText(run->id);
  auto steps = Steps(run->id);
  for (std::string s : {"ingest", "left", "right", "join"}) {
    EXPECT_EQ(steps[s].phase, spec::StepPhase::kSucceeded) << s << ": " << steps[s].message;
  }
  EXPECT_EQ(Slurp(run->run_dir + "/outputs/ingest/rows"), "rows=100\n");
  EXPECT_EQ(Slurp(run->run_dir + "/outputs/join/joined"), "rows=100\nL\nrows=100\nR\n");
  // The step's log came through pods/log.
  bool logged = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(run->run_dir)) {
    if (entry.path().extension() == ".log" &&
        Slurp(entry.path()).find("ingest-log-line") != std::string::npos) {
      logged = true;
    }
  }
  EXPECT_TRUE(logged);
  std::string events = EventText(run->id);
  EXPECT_NE(events.find("running on node-"), std::string::npos) << events;
  // Cleanup: the owner ConfigMap goes (Kubernetes' garbage collector takes the rest).
  EXPECT_TRUE(WaitFor([&] { return server_->List("configmaps", "default").empty(); }, 10'000));
  EXPECT_GE(server_->requests("DELETE", "/configmaps/"), 1);
}

TEST_F(K8sEngineTest, FailedAttemptIsRetriedAndSecretsStayOutOfThePod) {
  StartEngine();
  store::ConfigMap secret;
  secret.namespace_ = "default";
  secret.name = "db";
  secret.secret = true;
  secret.data = {{"DB_PASSWORD", "hunter2-very-secret"}};
  ASSERT_TRUE(store_->PutConfigMap(secret).ok());
  std::string marker = dir_ + "/staging/tried";
  std::string id =
      Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: flaky}
spec:
  pipeline:
    - name: flaky
      envFrom: [{secretRef: {name: db}}]
      command: ["sh", "-c", "echo pw=$DB_PASSWORD; if [ -e )yaml" +
             marker + R"yaml( ]; then echo ok > \"$RSL_OUTPUT/done\"; else touch )yaml" + marker +
             R"yaml(; exit 3; fi"]
      retryPolicy: {maxRetries: 2, backoff: 1s}
)yaml");
  ASSERT_FALSE(id.empty());
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok()) << EventText(store::RunIdFor(id)) << LivePods() << " pod(s)";
  ASSERT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message << "\n"
                                                    << EventText(run->id);
  auto steps = Steps(run->id);
  EXPECT_EQ(steps["flaky"].attempts, 2);
  EXPECT_EQ(steps["flaky"].retries_used, 1);
  EXPECT_NE(EventText(run->id).find("exit code 3"), std::string::npos) << EventText(run->id);
  // The value reached the process (through the Secret), never the Pod or the log.
  for (const auto& pod : server_->List("pods", "default")) {
    EXPECT_EQ(pod.dump().find("hunter2"), std::string::npos);
  }
  for (const auto& entry : std::filesystem::recursive_directory_iterator(run->run_dir)) {
    if (entry.path().extension() == ".log") {
      std::string log = Slurp(entry.path());
      EXPECT_EQ(log.find("hunter2"), std::string::npos) << log;
      EXPECT_NE(log.find("pw=***"), std::string::npos) << log;
    }
  }
}

TEST_F(K8sEngineTest, OomKilledPodEndsTheStepOomKilled) {
  StartEngine();
  kubelet_->InjectNext("hungry", Inject::kOom);
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: oom}
spec:
  pipeline:
    - name: hungry
      command: ["true"]
      resources: {memory: 64Mi}
)yaml");
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  auto steps = Steps(run->id);
  EXPECT_EQ(steps["hungry"].failure_code, "STEP_OOM_KILLED") << steps["hungry"].message;
  EXPECT_NE(steps["hungry"].message.find("OOM"), std::string::npos) << steps["hungry"].message;
}

TEST_F(K8sEngineTest, StepPastItsTimeoutIsTimedOutAndItsPodStopped) {
  StartEngine();
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: slow}
spec:
  pipeline:
    - name: slow
      command: ["sleep", "300"]
      timeout: 2s
)yaml");
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok());
  // The step is TIMED_OUT; the run fails because of it (as on the other backends).
  EXPECT_EQ(run->failure_code, "STEP_TIMED_OUT") << EventText(run->id);
  EXPECT_EQ(Steps(run->id)["slow"].phase, spec::StepPhase::kTimedOut);
  // activeDeadlineSeconds (or the engine's Stop) ended it; the ended Pod stays for its logs
  // until the run's owner ConfigMap goes.
  EXPECT_TRUE(WaitFor([&] { return RunningPods() == 0; }, 10'000));
}

TEST_F(K8sEngineTest, NodeLossRetriesWithoutSpendingARetry) {
  StartEngine();
  kubelet_->InjectNext("train", Inject::kNodeDown);
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: lost}
spec:
  pipeline:
    - name: train
      command: ["sh", "-c", "sleep 1; echo m > \"$RSL_OUTPUT/model\""]
)yaml");
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message << "\n"
                                                    << EventText(run->id);
  auto steps = Steps(run->id);
  EXPECT_EQ(steps["train"].attempts, 2);
  EXPECT_EQ(steps["train"].retries_used, 0);
  EXPECT_NE(EventText(run->id).find("node-2"), std::string::npos) << EventText(run->id);
  EXPECT_EQ(Slurp(run->run_dir + "/outputs/train/model"), "m\n");
}

TEST_F(K8sEngineTest, CancelDeletesThePodWithAGracePeriod) {
  StartEngine();
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: cancel-me}
spec:
  pipeline:
    - name: long
      command: ["sleep", "300"]
)yaml");
  ASSERT_TRUE(WaitFor([&] { return RunningPods() == 1; }));
  ASSERT_NO_FATAL_FAILURE(CancelAndExpectCancelled(id));
  EXPECT_EQ(LivePods(), 0);
  EXPECT_TRUE(server_->last_delete_options().contains("gracePeriodSeconds"))
      << server_->last_delete_options().dump();
}

TEST_F(K8sEngineTest, RestartedControllerAdoptsRunningPodsByLabel) {
  StartEngine();
  kubelet_->InjectNext("a", Inject::kHoldRunning);
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: adopt}
spec:
  pipeline:
    - name: a
      command: ["sh", "-c", "echo a > \"$RSL_OUTPUT/a\""]
    - name: b
      command: ["sh", "-c", "cat \"$RSL_INPUT_A/a\" > \"$RSL_OUTPUT/b\""]
      dependsOn: [a]
)yaml");
  ASSERT_TRUE(WaitFor([&] { return RunningPods() == 1; }));
  RestartController();  // the Pod of a keeps running meanwhile
  kubelet_->Release();
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message << "\n"
                                                    << EventText(run->id);
  EXPECT_EQ(Steps(run->id)["a"].attempts, 1);  // adopted, not relaunched
  EXPECT_EQ(Slurp(run->run_dir + "/outputs/b/b"), "a\n");
}

TEST_F(K8sEngineTest, AdoptingAVanishedPodIsNodeLost) {
  StartEngine();
  kubelet_->InjectNext("a", Inject::kHoldRunning);
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: vanish}
spec:
  pipeline:
    - name: a
      command: ["true"]
)yaml");
  ASSERT_TRUE(WaitFor([&] { return RunningPods() == 1; }));
  engine_->Stop(false);
  engine_.reset();
  backend_.reset();
  store_.reset();
  for (const auto& pod : server_->List("pods", "default")) {
    server_->DeleteObject("pods", "default", pod["metadata"]["name"]);
  }
  kubelet_->Release();
  StartEngine();
  ASSERT_TRUE(engine_->Recover().ok());
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << EventText(run->id);
  EXPECT_NE(EventText(run->id).find("not found after a controller restart"), std::string::npos)
      << EventText(run->id);
  EXPECT_EQ(Steps(run->id)["a"].retries_used, 0);
}

// A serving step on the k8s backend is a Deployment, a Service and an HPA; the attempt
// reports the cluster's readiness and scaling and lives until it is cancelled.
constexpr char kShopYaml[] = R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: shop}
spec:
  pipeline:
    - name: api
      serving: true
      port: 9000
      command: ["python3", "serve.py", "--v1"]
      readinessProbe: {httpGet: {path: /ready}, periodSeconds: 2, failureThreshold: 4}
      resources:
        autoscaling: {targetUtilization: 60, minReplicas: 2, maxReplicas: 5, scaleDownDelay: 2m}
)yaml";

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(K8sEngineTest, ServingStepIsADeploymentServiceAndHpaUntilCancelled) {
  StartEngine();
  std::string id = Submit(kShopYaml);
  ASSERT_FALSE(id.empty());
  const std::string run_id = store::RunIdFor(id);
  const std::string name = "rsl-shop-api";
  ASSERT_TRUE(WaitFor([&] { return server_->Has("horizontalpodautoscalers", "default", name); }))
      << EventText(run_id);
  nlohmann::json d = server_->Get("deployments", "default", name);
  nlohmann::json svc = server_->Get("services", "default", name);
  nlohmann::json hpa = server_->Get("horizontalpodautoscalers", "default", name);
  const std::string owner = k8s::RunOwnerName("shop", run_id);
  for (const auto* o : {&d, &svc, &hpa}) {
    EXPECT_EQ((*o)["metadata"]["ownerReferences"][0]["name"], owner) << o->dump();
    EXPECT_EQ((*o)["metadata"]["labels"]["rsl.dev/step"], "api");
  }
  EXPECT_EQ(d["spec"]["replicas"], 2);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
  EXPECT_FALSE(d["spec"]["selector"]["matchLabels"].contains("rsl.dev/run"));
  const auto& tpl = d["spec"]["template"];
  EXPECT_EQ(tpl["spec"]["restartPolicy"], "Always");
  EXPECT_FALSE(tpl["spec"].contains("activeDeadlineSeconds"));
  const auto& c = tpl["spec"]["containers"][0];
  EXPECT_EQ(c["command"], nlohmann::json({"python3", "serve.py", "--v1"}));
  EXPECT_EQ(c["ports"][0]["containerPort"], 9000);
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/ready");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"], 9000);
  EXPECT_EQ(c["readinessProbe"]["periodSeconds"], 2);
  EXPECT_EQ(c["readinessProbe"]["failureThreshold"], 4);
  std::map<std::string, nlohmann::json> env;
  for (const auto& e : c["env"]) env[e["name"]] = e;
  EXPECT_EQ(env["RSL_PORT"]["value"], "9000");
  EXPECT_EQ(env["RSL_REPLICA"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name");
  EXPECT_EQ(env["RSL_STEP"]["value"], "api");
  EXPECT_EQ(env["RSL_BACKEND"]["value"], "k8s");
  // The Service routes to the Deployment's Pods, whatever version runs them.
  EXPECT_EQ(svc["spec"]["selector"], d["spec"]["selector"]["matchLabels"]);
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], 9000);
  EXPECT_EQ(hpa["spec"]["scaleTargetRef"]["name"], name);
  EXPECT_EQ(hpa["spec"]["minReplicas"], 2);
  EXPECT_EQ(hpa["spec"]["maxReplicas"], 5);
  EXPECT_EQ(hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 60);
  EXPECT_EQ(hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"], 120);
  const std::string ip = svc["spec"]["clusterIP"];

  // Not ready until minReplicas are.
  server_->SetDeploymentReplicas("default", name, 2, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(EventText(run_id).find("ServingReady"), std::string::npos) << EventText(run_id);
  kubelet_->ReadyDeployments(true);
  const std::string ready =
      "2/2 replica(s) ready behind http://rsl-shop-api.default.svc:9000 "
      "(ClusterIP " +
      ip + ":9000)";
  ASSERT_TRUE(WaitFor([&] { return EventText(run_id).find(ready) != std::string::npos; }))
      << EventText(run_id);
  const std::string attempt = Steps(run_id)["api"].attempt_id;
  ASSERT_TRUE(WaitFor([&] {
    auto sv = backend_->Serving(attempt);
    return sv && sv->ready_replicas == 2;
  }));
  EXPECT_EQ(backend_->Serving(attempt)->endpoint, "http://rsl-shop-api.default.svc:9000");
  EXPECT_EQ(Steps(run_id)["api"].phase, spec::StepPhase::kRunning);

  // The HPA scales up: the attempt says so.
  server_->SetDeploymentReplicas("default", name, 4, 4);
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run_id).find("ScaledUp: replicas 2 -> 4") != std::string::npos;
  })) << EventText(run_id);
  ASSERT_TRUE(WaitFor([&] {
    auto sv = backend_->Serving(attempt);
    return sv && sv->ready_replicas == 4 && sv->desired_replicas == 4;
  }));
  // Ready replicas below minReplicas: ServingNotReady (a warning), then ready again.
  kubelet_->ReadyDeployments(false);
  server_->SetDeploymentReplicas("default", name, 4, 1);
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run_id).find("ServingNotReady: 1 of 2 replica(s) ready") != std::string::npos;
  })) << EventText(run_id);
  kubelet_->ReadyDeployments(true);
  ASSERT_TRUE(WaitFor([&] { return CountOf(EventText(run_id), "ServingReady:") == 2; }))
      << EventText(run_id);

  // A controller restart adopts the Deployment: nothing is created twice, watching resumes.
  const int posts = server_->requests("POST", "/deployments");
  EXPECT_EQ(posts, 1);
  RestartController();
  // The adopted attempt has seen the Deployment as it was; then the HPA scales down.
  ASSERT_TRUE(WaitFor([&] {
    auto sv = backend_->Serving(attempt);
    return sv && sv->desired_replicas == 4 && sv->ready_replicas == 4;
  }));
  server_->SetDeploymentReplicas("default", name, 3, 3);
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run_id).find("ScaledDown: replicas 4 -> 3") != std::string::npos;
  })) << EventText(run_id);
  EXPECT_EQ(server_->requests("POST", "/deployments"), posts);
  EXPECT_EQ(server_->requests("POST", "/services"), 1);
  EXPECT_EQ(server_->requests("POST", "/horizontalpodautoscalers"), 1);
  EXPECT_EQ(server_->List("deployments", "default").size(), 1u);
  EXPECT_EQ(server_->List("services", "default").size(), 1u);
  ASSERT_TRUE(WaitFor([&] {
    auto sv = backend_->Serving(attempt);
    return sv && sv->ready_replicas == 3;
  }));

  // Cancel deletes the three objects and ends the attempt.
  ASSERT_NO_FATAL_FAILURE(CancelAndExpectCancelled(id));
  EXPECT_TRUE(server_->List("deployments", "default").empty());
  EXPECT_TRUE(server_->List("services", "default").empty());
  EXPECT_TRUE(server_->List("horizontalpodautoscalers", "default").empty());
  EXPECT_FALSE(backend_->Serving(attempt).has_value());
}

// The owners named in `obj`'s ownerReferences.
std::vector<std::string> OwnerNames(const nlohmann::json& obj) {
  std::vector<std::string> out;
  for (const auto& r : obj["metadata"].value("ownerReferences", nlohmann::json::array())) {
    out.push_back(r["name"]);
  }
  return out;
}

std::string AnnotationOf(const nlohmann::json& obj, const std::string& key) {
  return obj["metadata"].value("annotations", nlohmann::json::object()).value(key, "");
}

// A new version of the workload updates the Deployment in place; the old run keeps serving
// until the new version's Pods are ready, and only then ends superseded.
TEST_F(K8sEngineTest, NewVersionOfAServingWorkloadSupersedesTheOldOnlyOnceReady) {
  StartEngine();
  const std::string name = "rsl-shop-api";
  kubelet_->ReadyDeployments(true);
  std::string v1 = Submit(kShopYaml);
  const std::string run1 = store::RunIdFor(v1);
  ASSERT_TRUE(WaitForEvent(run1, "ServingReady")) << EventText(run1);
  const std::string attempt1 = AttemptOf(run1, "api");
  kubelet_->ReadyDeployments(false);  // from now on the test moves the rollout
  std::string yaml2 = kShopYaml;
  yaml2.replace(yaml2.find("--v1"), 4, "--v2");
  // Version 2 does not scale: the HPA goes.
  yaml2.replace(yaml2.find("maxReplicas: 5"), 14, "maxReplicas: 2");
  std::string v2 = Submit(yaml2);
  const std::string run2 = store::RunIdFor(v2);
  // Launch says so once the Deployment, the Service and the HPA are updated.
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run2).find("in place (rolling update from " + attempt1) != std::string::npos;
  })) << EventText(run2);
  const std::string attempt2 = AttemptOf(run2, "api");
  nlohmann::json d = server_->Get("deployments", "default", name);
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"][0]["command"][2], "--v2");
  EXPECT_EQ(AnnotationOf(d, "rsl.dev/previous-attempt-id"), attempt1);
  // Both runs own the objects while the rollout is in flight: either run's cleanup alone
  // leaves them to the other; the new run's owner controls them.
  const std::string owner1 = k8s::RunOwnerName("shop", run1);
  const std::string owner2 = k8s::RunOwnerName("shop", run2);
  EXPECT_EQ(OwnerNames(d), (std::vector<std::string>{owner2, owner1})) << d.dump();
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(d["metadata"]["ownerReferences"][1]["controller"], false);
  EXPECT_EQ(OwnerNames(server_->Get("services", "default", name)),
            (std::vector<std::string>{owner2, owner1}));
  EXPECT_NE(EventText(run2).find("in place (rolling update from " + attempt1 +
                                 ", which serves until this version is ready)"),
            std::string::npos)
      << EventText(run2);

  // Mid-rollout: one new Pod up, not ready, beside the two old ready ones (maxSurge 1).
  server_->SetDeploymentStatus(
      "default", name,
      {{"replicas", 3}, {"updatedReplicas", 1}, {"readyReplicas", 2}, {"availableReplicas", 2}});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(Steps(run1)["api"].phase, spec::StepPhase::kRunning) << EventText(run1);
  EXPECT_EQ(EventText(run1).find("Superseded"), std::string::npos) << EventText(run1);
  EXPECT_EQ(EventText(run2).find("ServingReady"), std::string::npos) << EventText(run2);
  auto sv1 = backend_->Serving(attempt1);
  ASSERT_TRUE(sv1.has_value());
  EXPECT_EQ(sv1->ready_replicas, 2);

  // One new Pod ready, one old left: still not enough of the new version.
  server_->SetDeploymentStatus(
      "default", name,
      {{"replicas", 3}, {"updatedReplicas", 2}, {"readyReplicas", 2}, {"availableReplicas", 2}});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(Steps(run1)["api"].phase, spec::StepPhase::kRunning) << EventText(run1);
  EXPECT_EQ(EventText(run2).find("ServingReady"), std::string::npos) << EventText(run2);

  // The rollout completes: the new version is ready, and only then is the old one superseded.
  server_->SetDeploymentStatus(
      "default", name,
      {{"replicas", 2}, {"updatedReplicas", 2}, {"readyReplicas", 2}, {"availableReplicas", 2}});
  auto old = engine_->Wait(v1, 60'000);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->phase, spec::RunPhase::kSucceeded) << EventText(run1);
  EXPECT_NE(EventText(run1).find("Superseded: " + attempt2 + " is ready behind"), std::string::npos)
      << EventText(run1);
  EXPECT_NE(EventText(run2).find("ServingReady: 2/2 replica(s) ready"), std::string::npos)
      << EventText(run2);
  // The objects are the new run's alone; nothing is left to roll back to.
  ASSERT_TRUE(WaitFor([&] {
    return AnnotationOf(server_->Get("deployments", "default", name), "rsl.dev/previous-attempt-id")
        .empty();
  }));
  d = server_->Get("deployments", "default", name);
  EXPECT_EQ(AnnotationOf(d, "rsl.dev/rollback"), "");
  EXPECT_EQ(OwnerNames(d), std::vector<std::string>{owner2});
  ASSERT_TRUE(WaitFor([&] {
    return OwnerNames(server_->Get("services", "default", name)) ==
           std::vector<std::string>{owner2};
  }));
  // One create, one create answered 409 AlreadyExists, then the rollout's merge patch and the
  // takeover's.
  EXPECT_EQ(server_->requests("POST", "/deployments"), 2);
  EXPECT_GE(server_->requests("PATCH", "/deployments"), 2);
  ASSERT_EQ(server_->List("deployments", "default").size(), 1u);
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"][0]["command"][2], "--v2");
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
  EXPECT_TRUE(server_->List("horizontalpodautoscalers", "default").empty());
  ASSERT_NO_FATAL_FAILURE(CancelAndExpectCancelled(v2));
  EXPECT_TRUE(server_->List("deployments", "default").empty());
  EXPECT_TRUE(server_->List("services", "default").empty());
}

// A controller restart in the middle of a rollout: both attempts are adopted and go on from
// what the Deployment's annotations say; the old one is superseded once the new one is ready.
TEST_F(K8sEngineTest, RestartMidRolloutResumesFromTheDeploymentsAnnotations) {
  StartEngine();
  const std::string name = "rsl-shop-api";
  kubelet_->ReadyDeployments(true);
  std::string v1 = Submit(kShopYaml);
  const std::string run1 = store::RunIdFor(v1);
  ASSERT_TRUE(WaitForEvent(run1, "ServingReady")) << EventText(run1);
  const std::string attempt1 = AttemptOf(run1, "api");
  kubelet_->ReadyDeployments(false);
  std::string yaml2 = kShopYaml;
  yaml2.replace(yaml2.find("--v1"), 4, "--v2");
  std::string v2 = Submit(yaml2);
  const std::string run2 = store::RunIdFor(v2);
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run2).find("in place (rolling update from " + attempt1) != std::string::npos;
  })) << EventText(run2);
  server_->SetDeploymentStatus(
      "default", name,
      {{"replicas", 3}, {"updatedReplicas", 1}, {"readyReplicas", 2}, {"availableReplicas", 2}});
  RestartController();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(Steps(run1)["api"].phase, spec::StepPhase::kRunning) << EventText(run1);
  EXPECT_EQ(Steps(run2)["api"].phase, spec::StepPhase::kRunning) << EventText(run2);
  EXPECT_EQ(EventText(run1).find("Superseded"), std::string::npos) << EventText(run1);
  server_->SetDeploymentStatus(
      "default", name,
      {{"replicas", 2}, {"updatedReplicas", 2}, {"readyReplicas", 2}, {"availableReplicas", 2}});
  auto old = engine_->Wait(v1, 60'000);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->phase, spec::RunPhase::kSucceeded) << EventText(run1);
  EXPECT_NE(EventText(run1).find("Superseded: " + AttemptOf(run2, "api")), std::string::npos)
      << EventText(run1);
  EXPECT_EQ(server_->requests("POST", "/deployments"), 2);  // nothing created again
  ASSERT_TRUE(WaitFor([&] {
    return OwnerNames(server_->Get("deployments", "default", name)) ==
           std::vector<std::string>{k8s::RunOwnerName("shop", run2)};
  }));
  ASSERT_NO_FATAL_FAILURE(CancelAndExpectCancelled(v2));
  EXPECT_TRUE(server_->List("deployments", "default").empty());
}

// A new version that never gets ready fails SERVING_NOT_READY; the objects go back to the old
// version (template, owners, HPA), which keeps serving and is not superseded.
TEST_F(K8sEngineTest, NewVersionNeverReadyRollsBackAndTheOldKeepsServing) {
  StartEngine();
  const std::string name = "rsl-shop-api";
  kubelet_->ReadyDeployments(true);
  std::string v1 = Submit(kShopYaml);
  const std::string run1 = store::RunIdFor(v1);
  ASSERT_TRUE(WaitForEvent(run1, "ServingReady")) << EventText(run1);
  const std::string attempt1 = AttemptOf(run1, "api");
  const nlohmann::json d1 = server_->Get("deployments", "default", name);
  const nlohmann::json hpa1 = server_->Get("horizontalpodautoscalers", "default", name);
  const std::string ip = server_->Get("services", "default", name)["spec"]["clusterIP"];
  kubelet_->ReadyDeployments(false);

  std::string yaml2 = kShopYaml;
  yaml2.replace(yaml2.find("--v1"), 4, "--v2");
  yaml2.replace(yaml2.find("maxReplicas: 5"), 14, "maxReplicas: 3");
  yaml2.replace(yaml2.find("      resources:"), 0, "      readyTimeout: 2s\n");
  std::string v2 = Submit(yaml2);
  const std::string run2 = store::RunIdFor(v2);
  // Launch says so once the Deployment, the Service and the HPA are updated.
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run2).find("in place (rolling update from " + attempt1) != std::string::npos;
  })) << EventText(run2);
  EXPECT_EQ(server_->Get("horizontalpodautoscalers", "default", name)["spec"]["maxReplicas"], 3);
  // The new Pod never gets ready; the old ones serve.
  server_->SetDeploymentStatus(
      "default", name,
      {{"replicas", 3}, {"updatedReplicas", 1}, {"readyReplicas", 2}, {"availableReplicas", 2}});
  auto failed = engine_->Wait(v2, 60'000);
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  EXPECT_EQ(failed->phase, spec::RunPhase::kFailed) << EventText(run2);
  EXPECT_EQ(Steps(run2)["api"].failure_code, "SERVING_NOT_READY") << EventText(run2);
  EXPECT_NE(EventText(run2).find("0 of 2 replica(s) ready after 2s (readyTimeout)"),
            std::string::npos)
      << EventText(run2);
  EXPECT_NE(Steps(run2)["api"].message.find("rolled back to " + attempt1 + ", which keeps serving"),
            std::string::npos)
      << Steps(run2)["api"].message;

  // The old run still serves, not superseded; it says the rollout went back to it.
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run1).find("RolledBack: the rollout to " + AttemptOf(run2, "api") +
                                " ended before it was ready: deployment default/rsl-shop-api "
                                "is back on this version, which kept serving") != std::string::npos;
  })) << EventText(run1);
  EXPECT_EQ(Steps(run1)["api"].phase, spec::StepPhase::kRunning) << EventText(run1);
  EXPECT_EQ(EventText(run1).find("Superseded"), std::string::npos) << EventText(run1);
  auto sv1 = backend_->Serving(attempt1);
  ASSERT_TRUE(sv1.has_value());
  EXPECT_EQ(sv1->endpoint, "http://rsl-shop-api.default.svc:9000");

  // The Deployment's template, labels and owners are the old version's again; the Service
  // and the HPA too (the HPA's maxReplicas back to 5).
  nlohmann::json d = server_->Get("deployments", "default", name);
  EXPECT_EQ(d["spec"]["template"], d1["spec"]["template"]);
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"][0]["command"][2], "--v1");
  EXPECT_EQ(d["spec"]["selector"], d1["spec"]["selector"]);
  EXPECT_EQ(d["metadata"]["labels"], d1["metadata"]["labels"]);
  EXPECT_EQ(AnnotationOf(d, "rsl.dev/attempt-id"), attempt1);
  EXPECT_EQ(AnnotationOf(d, "rsl.dev/previous-attempt-id"), "");
  EXPECT_EQ(AnnotationOf(d, "rsl.dev/rollback"), "");
  const std::vector<std::string> owners1{k8s::RunOwnerName("shop", run1)};
  EXPECT_EQ(OwnerNames(d), owners1);
  nlohmann::json svc = server_->Get("services", "default", name);
  EXPECT_EQ(svc["spec"]["clusterIP"], ip);
  EXPECT_EQ(OwnerNames(svc), owners1);
  EXPECT_EQ(AnnotationOf(svc, "rsl.dev/attempt-id"), attempt1);
  nlohmann::json hpa = server_->Get("horizontalpodautoscalers", "default", name);
  EXPECT_EQ(hpa["spec"], hpa1["spec"]);
  EXPECT_EQ(OwnerNames(hpa), owners1);

  // It goes on serving: scaling is reported, and a cancel deletes everything.
  server_->SetDeploymentReplicas("default", name, 3, 3);
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run1).find("ScaledUp: replicas 2 -> 3") != std::string::npos;
  })) << EventText(run1);
  ASSERT_NO_FATAL_FAILURE(CancelAndExpectCancelled(v1));
  EXPECT_TRUE(server_->List("deployments", "default").empty());
  EXPECT_TRUE(server_->List("services", "default").empty());
  EXPECT_TRUE(server_->List("horizontalpodautoscalers", "default").empty());
}

// Cancelling a new version mid-rollout rolls the objects back: the old version serves on.
TEST_F(K8sEngineTest, CancelledMidRolloutRollsBackToTheServingVersion) {
  StartEngine();
  const std::string name = "rsl-shop-api";
  kubelet_->ReadyDeployments(true);
  std::string v1 = Submit(kShopYaml);
  const std::string run1 = store::RunIdFor(v1);
  ASSERT_TRUE(WaitForEvent(run1, "ServingReady")) << EventText(run1);
  const std::string attempt1 = AttemptOf(run1, "api");
  const nlohmann::json d1 = server_->Get("deployments", "default", name);
  kubelet_->ReadyDeployments(false);
  std::string yaml2 = kShopYaml;
  yaml2.replace(yaml2.find("--v1"), 4, "--v2");
  std::string v2 = Submit(yaml2);
  const std::string run2 = store::RunIdFor(v2);
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run2).find("in place (rolling update from " + attempt1) != std::string::npos;
  })) << EventText(run2);
  ASSERT_TRUE(WaitFor([&] { return backend_->Serving(AttemptOf(run2, "api")).has_value(); }));
  ASSERT_TRUE(engine_->Cancel(v2, "test").ok());
  auto cancelled = engine_->Wait(v2, 60'000);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(cancelled->phase, spec::RunPhase::kCancelled) << EventText(run2);
  ASSERT_TRUE(WaitFor([&] {
    return EventText(run1).find("RolledBack: the rollout to " + AttemptOf(run2, "api")) !=
           std::string::npos;
  })) << EventText(run1);
  nlohmann::json d = server_->Get("deployments", "default", name);
  EXPECT_EQ(d["spec"]["template"], d1["spec"]["template"]);
  EXPECT_EQ(AnnotationOf(d, "rsl.dev/attempt-id"), attempt1);
  EXPECT_EQ(OwnerNames(d), std::vector<std::string>{k8s::RunOwnerName("shop", run1)});
  EXPECT_TRUE(server_->Has("services", "default", name));
  EXPECT_TRUE(server_->Has("horizontalpodautoscalers", "default", name));
  EXPECT_EQ(Steps(run1)["api"].phase, spec::StepPhase::kRunning) << EventText(run1);
  EXPECT_EQ(EventText(run1).find("Superseded"), std::string::npos) << EventText(run1);
  ASSERT_NO_FATAL_FAILURE(CancelAndExpectCancelled(v1));
  EXPECT_TRUE(server_->List("deployments", "default").empty());
}

// Two RSL namespaces mapped onto one Kubernetes namespace keep their serving objects apart,
// even with equal workload and step names.
TEST_F(K8sEngineTest, TwoNamespacesOnOneKubernetesNamespaceServeApart) {
  namespaces_ = {{"team-a", "default"}, {"team-b", "default"}};
  StartEngine();
  kubelet_->ReadyDeployments(true);
  auto in = [](const std::string& ns) {
    std::string yaml = kShopYaml;
    yaml.replace(yaml.find("{name: shop}"), 12, "{name: shop, namespace: " + ns + "}");
    return yaml;
  };
  std::string va = Submit(in("team-a"));
  std::string vb = Submit(in("team-b"));
  const std::string run_a = store::RunIdFor(va), run_b = store::RunIdFor(vb);
  for (const auto& run : {run_a, run_b}) {
    ASSERT_TRUE(WaitForEvent(run, "ServingReady")) << EventText(run);
  }
  const std::string name_a = k8s::ServingObjectName("team-a", "default", "shop", "api");
  const std::string name_b = k8s::ServingObjectName("team-b", "default", "shop", "api");
  EXPECT_NE(name_a, name_b);
  for (const auto& name : {name_a, name_b}) {
    EXPECT_TRUE(k8s::IsDnsLabel(name)) << name;
    EXPECT_TRUE(server_->Has("deployments", "default", name)) << name;
    EXPECT_TRUE(server_->Has("services", "default", name)) << name;
    EXPECT_TRUE(server_->Has("horizontalpodautoscalers", "default", name)) << name;
  }
  EXPECT_EQ(name_a.rfind("rsl-team-a-shop-api-", 0), 0u) << name_a;
  EXPECT_EQ(server_->List("deployments", "default").size(), 2u);
  nlohmann::json da = server_->Get("deployments", "default", name_a);
  nlohmann::json db = server_->Get("deployments", "default", name_b);
  EXPECT_EQ(AnnotationOf(da, "rsl.dev/attempt-id"), AttemptOf(run_a, "api"));
  EXPECT_EQ(AnnotationOf(db, "rsl.dev/attempt-id"), AttemptOf(run_b, "api"));
  EXPECT_EQ(da["spec"]["selector"]["matchLabels"]["rsl.dev/namespace"], "team-a");
  EXPECT_EQ(db["spec"]["selector"]["matchLabels"]["rsl.dev/namespace"], "team-b");
  EXPECT_EQ(server_->Get("services", "default", name_b)["spec"]["selector"],
            db["spec"]["selector"]["matchLabels"]);
  EXPECT_EQ(backend_->Serving(AttemptOf(run_b, "api"))->endpoint,
            "http://" + name_b + ".default.svc:9000");
  // Neither took the other over.
  EXPECT_EQ(EventText(run_a).find("Superseded"), std::string::npos) << EventText(run_a);
  EXPECT_EQ(EventText(run_b).find("rolling update"), std::string::npos) << EventText(run_b);

  // Deleting one (cancel) leaves the other serving.
  ASSERT_NO_FATAL_FAILURE(CancelAndExpectCancelled(va));
  EXPECT_FALSE(server_->Has("deployments", "default", name_a));
  EXPECT_FALSE(server_->Has("services", "default", name_a));
  EXPECT_FALSE(server_->Has("horizontalpodautoscalers", "default", name_a));
  EXPECT_TRUE(server_->Has("deployments", "default", name_b));
  EXPECT_TRUE(server_->Has("services", "default", name_b));
  EXPECT_TRUE(server_->Has("horizontalpodautoscalers", "default", name_b));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Steps(run_b)["api"].phase, spec::StepPhase::kRunning) << EventText(run_b);
  EXPECT_EQ(EventText(run_b).find("Superseded"), std::string::npos) << EventText(run_b);
  ASSERT_NO_FATAL_FAILURE(CancelAndExpectCancelled(vb));
  EXPECT_TRUE(server_->List("deployments", "default").empty());
}

TEST_F(K8sEngineTest, ServingStepNeverReadyFailsAndLeavesNothing) {
  StartEngine();
  std::string yaml = kShopYaml;
  yaml.replace(yaml.find("      resources:"), 0, "      readyTimeout: 1s\n");
  std::string id = Submit(yaml);
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed) << EventText(run->id);
  EXPECT_EQ(Steps(run->id)["api"].failure_code, "SERVING_NOT_READY") << EventText(run->id);
  EXPECT_NE(EventText(run->id).find("0 of 2 replica(s) ready after 1s (readyTimeout)"),
            std::string::npos)
      << EventText(run->id);
  EXPECT_TRUE(WaitFor([&] { return server_->List("deployments", "default").empty(); }));
  EXPECT_TRUE(server_->List("services", "default").empty());
  EXPECT_TRUE(server_->List("horizontalpodautoscalers", "default").empty());
}

TEST_F(K8sEngineTest, ServingScaleDownDelayOverAnHourIsRefused) {
  StartEngine();
  spec::Step step;
  step.name = "api";
  step.serving = true;
  EXPECT_TRUE(backend_->CheckServing(spec::Workload{}, step).ok());
  spec::Autoscaling as;
  as.target_utilization = 50;
  as.max_replicas = 3;
  as.scale_down_delay_ms = 2 * 3600 * 1000;
  step.effective.autoscaling = as;
  Status s = backend_->CheckServing(spec::Workload{}, step);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), "K8S_NOT_REPRESENTABLE");
  EXPECT_EQ(s.error().path, "spec.resources.autoscaling.scaleDownDelay");
  EXPECT_EQ(s.error().value, "7200s");
}

// What `seedctl run --backend k8s` and `rsl-controller --backend k8s` build: the runtime
// with its admission hooks, a kubeconfig naming the double, an image from a registry the
// controller cannot reach (the cluster pulls it: admission checks the reference's form).
TEST_F(K8sEngineTest, RuntimeWithBackendK8sRunsAWorkloadThroughItsKubeconfig) {
  std::string kubeconfig = dir_ + "/kubeconfig";
  ASSERT_TRUE(
      WriteFileAtomic(kubeconfig,
                      "apiVersion: v1\nkind: Config\n"
                      "current-context: test\n"
                      "clusters:\n- name: double\n  cluster:\n"
                      "    server: " +
                          server_->url() +
                          "\n"
                          "    certificate-authority: " +
                          PkiDir() +
                          "/ca.crt\n"
                          "users:\n- name: me\n  user:\n"
                          "    client-certificate: " +
                          PkiDir() +
                          "/client.crt\n"
                          "    client-key: " +
                          PkiDir() +
                          "/client.key\n"
                          "contexts:\n- name: test\n  context: {cluster: double, user: me}\n")
          .ok());
  runtime::RuntimeOptions ro;
  ro.state_dir = dir_ + "/rt-state";
  ro.backend = "k8s";
  ro.sync_full = false;
  ro.backend_options.kubeconfig = kubeconfig;
  ro.backend_options.k8s_namespaces = {"ml=default"};
  ro.backend_options.k8s_staging = "file://" + dir_ + "/staging";
  auto rt = runtime::Runtime::Open(ro);
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  EXPECT_EQ((*rt)->backend()->name(), "k8s");
  ASSERT_TRUE((*rt)->engine()->Start().ok());
  auto parsed = spec::ParseWorkload(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: pulled, namespace: ml}
spec:
  pipeline:
    - name: ingest
      image: "volc/ingest:v1.0"
      command: ["sh", "-c", "echo $RSL_IMAGE > \"$RSL_OUTPUT/image\""]
)yaml",
                                    "test.yaml");
  ASSERT_TRUE(parsed.ok());
  auto id = (*rt)->engine()->Submit(parsed.workload, "test");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto run = (*rt)->engine()->Wait(*id, 60'000);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->phase, spec::RunPhase::kSucceeded)
      << run->failure_code << ": " << run->failure_message;
  EXPECT_EQ(Slurp(run->run_dir + "/outputs/ingest/image"), "volc/ingest:v1.0\n");
  bool pod_image = false;
  for (const auto& pod : server_->List("pods", "default")) {
    pod_image = pod_image || pod["spec"]["containers"][0]["image"] == "volc/ingest:v1.0";
  }
  EXPECT_TRUE(pod_image);
}

// The staging fetch for non-file staging goes through the data layer's storage; over a
// file:// URI here (s3:// takes the same path with the S3 client): nested objects keep their
// relative paths, hidden names (_SUCCESS, .crc) are not copied, an empty prefix is no error.
TEST_F(K8sEngineTest, FetchPrefixCopiesAStagingPrefixIntoALocalDirectory) {
  std::string src = dir_ + "/store/ns/run/staging/train";
  ASSERT_TRUE(MakeDirs(src + "/part=1").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/model.bin", "weights").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/part=1/rows.csv", "a,b\n").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/_SUCCESS", "").ok());
  std::string dst = dir_ + "/local-staging/train";
  Status s = runtime::FetchPrefix("file://" + src, dst);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Slurp(dst + "/model.bin"), "weights");
  EXPECT_EQ(Slurp(dst + "/part=1/rows.csv"), "a,b\n");
  EXPECT_FALSE(PathExists(dst + "/_SUCCESS"));
  s = runtime::FetchPrefix("file://" + dir_ + "/store/nothing-here", dir_ + "/empty");
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(IsDirectory(dir_ + "/empty"));
}

TEST_F(K8sEngineTest, BackendK8sFlagsAreCheckedWithClearErrors) {
  runtime::RuntimeOptions ro;
  ro.state_dir = dir_ + "/rt-bad";
  ro.backend = "k8s";
  ro.backend_options.kubeconfig = dir_ + "/missing-kubeconfig";
  ro.backend_options.k8s_staging = "file:///tmp/x";
  auto rt = runtime::Runtime::Open(ro);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), "IO_ERROR") << rt.status().ToString();

  k8s::K8sBackendOptions ko;
  Status s = k8s::CheckK8sOptions(ko);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), "INVALID_ARGUMENT");
  EXPECT_NE(s.ToString().find("--k8s-staging"), std::string::npos) << s.ToString();
  ko.staging_prefix = "bucket/prefix";
  s = k8s::CheckK8sOptions(ko);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("no scheme"), std::string::npos) << s.ToString();
}

// Every object the backend creates (owner ConfigMap, Secret, Pods of a run; Pods of
// generated variations: GPUs and capabilities, timeouts, secrets, digests, long names; a
// serving attempt's Deployment, Service and HPA) through
// the schema validator (tests/k8s/validate.mjs under node, with kubernetes-models installed by
// scripts/npm-tests.sh; RSL_K8S_VALIDATE overrides the command). Without node it fails.
TEST_F(K8sEngineTest, ObjectsTheBackendCreatesValidate) {
  const char* env_validate = std::getenv("RSL_K8S_VALIDATE");
  const std::string validate =
      env_validate ? std::string(env_validate)
                   : std::string("node ") + RSL_SOURCE_DIR + "/tests/k8s/validate.mjs";
  StartEngine();
  store::ConfigMap secret;
  secret.namespace_ = "default";
  secret.name = "db";
  secret.secret = true;
  secret.data = {{"DB_PASSWORD", "hunter2-very-secret"}};
  ASSERT_TRUE(store_->PutConfigMap(secret).ok());
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: schema}
spec:
  pipeline:
    - name: a
      envFrom: [{secretRef: {name: db}}]
      command: ["sh", "-c", "echo a > \"$RSL_OUTPUT/a\""]
      timeout: 1h
    - name: b
      command: ["true"]
      dependsOn: [a]
)yaml");
  // Read the objects while the run lives (its end deletes the owner).
  nlohmann::json objects = nlohmann::json::array();
  ASSERT_TRUE(WaitFor([&] { return server_->List("pods", "default").size() >= 2; }, 30'000));
  for (const char* r : {"pods", "secrets", "configmaps"}) {
    for (auto& o : server_->List(r, "default")) objects.push_back(o);
  }
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok());
  backend::LaunchSpec spec;
  spec.attempt_id = "r/s/3";
  spec.run_id = "run-20260101-0000abcd";
  spec.workload_name = std::string(120, 'W') + ".with.dots";
  spec.namespace_ = "Team_A";
  spec.step = "Train_Model";
  spec.attempt = 3;
  spec.argv = {"python", "train.py"};
  spec.env = {{"RSL_OUTPUT", "/x"},
              {"RSL_IMAGE", "registry.example:5000/team/train:v2"},
              {"RSL_IMAGE_DIGEST", "sha256:" + std::string(64, 'a')},
              {"TOKEN", "s3cr3t-value"}};
  spec.secret_values = {"s3cr3t-value"};
  spec.cpu_millis = 2500;
  spec.memory_bytes = int64_t{3} << 30;
  spec.gpus = 2;
  spec.capabilities = {"fp16_support", "tensor_core"};
  spec.timeout_ms = 1500;
  auto pod = k8s_->PodFor(spec, "3f0c1a2b-0000-4000-8000-000000000001");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->dump().find("s3cr3t"), std::string::npos);
  objects.push_back(*pod);
  // A serving attempt's Deployment, Service and HPA (the same odd names).
  spec.serving = backend::ServingLaunch{};
  spec.serving->autoscaling = {70, 2, 6, 90'000};
  spec.serving->port = 8443;
  spec.serving->readiness.path = "/v1/ready";
  auto serving = k8s_->ServingObjectsFor(spec, "3f0c1a2b-0000-4000-8000-000000000001");
  ASSERT_TRUE(serving.ok()) << serving.status().ToString();
  ASSERT_EQ(serving->size(), 3u);
  EXPECT_EQ(nlohmann::json(*serving).dump().find("s3cr3t"), std::string::npos);
  for (auto& o : *serving) objects.push_back(o);
  std::string file = dir_ + "/objects.json";
  ASSERT_TRUE(WriteFileAtomic(file, objects.dump(2)).ok());
  std::string cmd = validate + " " + file + " > " + dir_ + "/validate.out 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << Slurp(dir_ + "/validate.out");
  EXPECT_GE(objects.size(), 8u);  // owner, secret, two pods, the generated pod, serving (3)
}

}  // namespace
}  // namespace rsl::k8stest
