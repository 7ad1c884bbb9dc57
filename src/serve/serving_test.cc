// Serving steps end to end on the local backend: a real HAProxy, real replica processes
// (Debian's python3 answering HTTP), loopback only. Delays come from the spec and are short;
// time bounds are generous (the machine may be busy).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "base/codes.h"
#include "base/file.h"
#include "base/http_client.h"
#include "base/strings.h"
#include "nlohmann/json.hpp"
#include "runtime/runtime.h"
#include "serve/haproxy.h"
#include "serve/replica_set.h"
#include "spec/parse.h"

namespace rsl::serve {
namespace {

// A replica: /healthz, /pid, /version ($VERSION) and /burn (about 10 ms of CPU per request).
constexpr char kServer[] = R"PY(
import http.server, os, time
port = int(os.environ["RSL_PORT"])
print("replica", os.environ["RSL_REPLICA"], "listening on", port, flush=True)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/burn":
            t = time.process_time()
            while time.process_time() - t < 0.01:
                pass
            body = b"burned"
        elif self.path == "/pid":
            body = str(os.getpid()).encode()
        elif self.path == "/version":
            body = os.environ.get("VERSION", "1").encode()
        else:
            body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
)PY";

constexpr char kNeverReady[] = R"PY(
import time
print("booting model: weights file missing", flush=True)
time.sleep(600)
)PY";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class ServingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kDefaultHaproxy, X_OK) != 0) GTEST_SKIP() << "haproxy is not installed";
    dir_ = "/tmp/rsl-serving-test-" + std::to_string(getpid());
    RemoveAll(dir_);
    ASSERT_TRUE(MakeDirs(dir_).ok());
    ::chmod(dir_.c_str(), 0755);  // steps run as other users
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/server.py", kServer).ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/never_ready.py", kNeverReady).ok());
    ::chmod((dir_ + "/server.py").c_str(), 0644);
    ::chmod((dir_ + "/never_ready.py").c_str(), 0644);
    setenv("RSL_SHIM", (std::string(RSL_BINARY_DIR) + "/bin/rsl-shim").c_str(), 1);
  }
  void TearDown() override {
    if (rt_) {
      rt_->engine()->Stop(/*stop_steps=*/true);
      rt_.reset();
    }
    if (!dir_.empty()) RemoveAll(dir_);
  }

  void Open(ServeOptions serve = {}, bool hooks = false) {
    runtime::RuntimeOptions o;
    o.state_dir = dir_ + "/state";
    o.hooks = hooks;
    o.serve = serve;
    auto rt = runtime::Runtime::Open(o);
    ASSERT_TRUE(rt.ok()) << rt.error().ToString();
    rt_ = std::move(*rt);
    ASSERT_TRUE(rt_->engine()->Start().ok());
  }

  std::string Yaml(const std::string& script, const std::string& step_extra,
                   const std::string& autoscaling) {
    return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: svc\n"
           "spec:\n  resources: {cpu: 500m, memory: 256Mi}\n  pipeline:\n"
           "    - name: serve\n      serving: true\n      command: [/usr/bin/python3, " +
           dir_ + "/" + script + "]\n" + step_extra +
           "      resources:\n        autoscaling: " + autoscaling + "\n";
  }

  Result<std::string> Submit(const std::string& yaml) {
    auto parsed = spec::ParseWorkload(yaml, "svc.yaml");
    if (!parsed.ok()) return parsed.errors[0];
    return rt_->engine()->Submit(parsed.workload, "test");
  }

  // The first event `reason` of the run, waiting up to `timeout_ms`.
  std::optional<store::Event> WaitEvent(const std::string& id, const std::string& reason,
                                        int64_t timeout_ms, int64_t after_seq = 0) {
    int64_t deadline = NowMs() + timeout_ms;
    auto run_id = rt_->engine()->ResolveRunId(id);
    if (!run_id.ok()) return std::nullopt;
    while (NowMs() < deadline) {
      auto events = rt_->store()->ListEvents(*run_id, after_seq);
      if (events.ok()) {
        for (const auto& e : *events) {
          if (e.reason == reason) return e;
        }
      }
      usleep(100'000);
    }
    return std::nullopt;
  }

  // Opens the runtime, submits server.py with `autoscaling` and waits for ServingReady; sets
  // `id` and `endpoint` (a fatal failure leaves them empty).
  void StartReady(const std::string& autoscaling, std::string* id, std::string* endpoint) {
    Open();
    auto submitted = Submit(Yaml("server.py", "", autoscaling));
    ASSERT_TRUE(submitted.ok()) << submitted.error().ToString();
    ASSERT_TRUE(WaitEvent(*submitted, "ServingReady", 60'000)) << "never ready";
    auto sv = Serving(*submitted);
    ASSERT_TRUE(sv);
    ASSERT_FALSE(sv->endpoint.empty());
    *id = *submitted;
    *endpoint = sv->endpoint;
  }

  // The step's attempt id of the run of `id`, "" when none.
  std::string AttemptOf(const std::string& id) {
    auto run_id = rt_->engine()->ResolveRunId(id);
    if (!run_id.ok()) return "";
    auto steps = rt_->store()->ListSteps(*run_id);
    if (!steps.ok() || steps->empty()) return "";
    return (*steps)[0].attempt_id;
  }

  std::optional<backend::ServingStatus> Serving(const std::string& id) {
    auto run_id = rt_->engine()->ResolveRunId(id);
    if (!run_id.ok()) return std::nullopt;
    auto steps = rt_->store()->ListSteps(*run_id);
    if (!steps.ok() || steps->empty()) return std::nullopt;
    return rt_->backend()->Serving((*steps)[0].attempt_id);
  }

  static bool Get(const std::string& url, std::string* body = nullptr) {
    HttpRequest req;
    req.url = url;
    req.connect_timeout_ms = 2'000;
    req.timeout_ms = 10'000;
    auto r = HttpSend(req);
    if (body && r.ok()) *body = r->body;
    return r.ok() && r->status == 200;
  }

  // Replica pids seen through the endpoint.
  static std::set<int> Pids(const std::string& endpoint, int tries) {
    std::set<int> pids;
    for (int i = 0; i < tries; ++i) {
      std::string body;
      if (Get(endpoint + "/pid", &body)) pids.insert(atoi(body.c_str()));
    }
    return pids;
  }

  std::string dir_;
  std::unique_ptr<runtime::Runtime> rt_;
};

// Load: `clients` threads requesting `path` until stopped; counts failures.
class Load {
 public:
  //! `pause_ms` between a client's requests.
  Load(std::string url, int clients, int pause_ms = 0) : url_(std::move(url)) {
    for (int i = 0; i < clients; ++i) {
      threads_.emplace_back([this, pause_ms] {
        while (!stop_) {
          HttpRequest req;
          req.url = url_;
          req.connect_timeout_ms = 2'000;
          req.timeout_ms = 30'000;
          auto r = HttpSend(req);
          ++total_;
          if (!r.ok() || r->status != 200) ++failed_;
          if (pause_ms) usleep(useconds_t(pause_ms) * 1000);
        }
      });
    }
  }
  ~Load() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int64_t total() const { return total_; }
  int64_t failed() const { return failed_; }

 private:
  std::string url_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> total_{0}, failed_{0};
  std::vector<std::thread> threads_;
};

TEST_F(ServingTest, ScalesUpUnderLoadAndDownAfterTheDelayWithoutAFailedRequest) {
  std::string id, endpoint;
  ASSERT_NO_FATAL_FAILURE(
      StartReady("{targetUtilization: 50, minReplicas: 1, maxReplicas: 2, scaleDownDelay: 4s}", &id,
                 &endpoint));
  EXPECT_TRUE(Get(endpoint + "/healthz"));
  {
    Load load(endpoint + "/burn", 3);
    auto up = WaitEvent(id, "ScaledUp", 60'000);
    ASSERT_TRUE(up) << "no ScaledUp under load";
    EXPECT_NE(up->message.find("target 50%, 1 ready: 1 -> 2"), std::string::npos) << up->message;
    int64_t deadline = NowMs() + 60'000;
    while (NowMs() < deadline && Serving(id)->ready_replicas < 2) usleep(100'000);
    EXPECT_EQ(Serving(id)->ready_replicas, 2);
    usleep(1'000'000);  // both take requests
    load.Stop();
    EXPECT_EQ(load.failed(), 0) << "of " << load.total();
  }
  {
    Load light(endpoint + "/healthz", 1, 20);  // keeps going through the scale-down
    auto down = WaitEvent(id, "ScaledDown", 60'000);
    ASSERT_TRUE(down) << "no ScaledDown after the load";
    EXPECT_NE(down->message.find("2 -> 1"), std::string::npos) << down->message;
    int64_t deadline = NowMs() + 60'000;
    while (NowMs() < deadline && Serving(id)->replicas > 1) usleep(100'000);
    usleep(500'000);
    light.Stop();
    EXPECT_EQ(Serving(id)->replicas, 1);
    EXPECT_EQ(light.failed(), 0) << "of " << light.total();
    EXPECT_GT(light.total(), 0);
  }
  auto run = rt_->store()->GetRun(id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kRunning);
  // The status keeps the evaluations: time ordered, busy and 2 desired under the load, back
  // to 1 after it.
  auto history = Serving(id)->history;
  ASSERT_GE(history.size(), 3u);
  EXPECT_LE(history.size(), kServingHistorySamples);
  bool busy_two = false;
  for (size_t i = 0; i < history.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(history[i].time_ms, history[i - 1].time_ms);
    }
    busy_two |= history[i].desired_replicas == 2 && history[i].utilization > 0.25;
  }
  EXPECT_TRUE(busy_two);
  EXPECT_EQ(history.back().desired_replicas, 1);
}

TEST_F(ServingTest, AKilledReplicaIsReplacedWhileTheEndpointAnswers) {
  std::string id, endpoint;
  ASSERT_NO_FATAL_FAILURE(
      StartReady("{targetUtilization: 90, minReplicas: 2, maxReplicas: 2}", &id, &endpoint));
  std::set<int> pids = Pids(endpoint, 20);
  ASSERT_FALSE(pids.empty());
  Load load(endpoint + "/healthz", 2);
  usleep(300'000);
  int victim = *pids.begin();
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  auto restarted = WaitEvent(id, "ReplicaRestarted", 30'000);
  ASSERT_TRUE(restarted);
  EXPECT_NE(restarted->message.find("killed by signal 9"), std::string::npos) << restarted->message;
  int64_t deadline = NowMs() + 60'000;
  while (NowMs() < deadline) {
    auto now = Serving(id);
    if (now && now->ready_replicas == 2) {
      bool restarted_one = false;
      for (const auto& r : now->replica_list) restarted_one = restarted_one || r.restarts == 1;
      if (restarted_one) break;
    }
    usleep(100'000);
  }
  EXPECT_EQ(Serving(id)->ready_replicas, 2);
  load.Stop();
  EXPECT_GT(load.total(), 0);
  // A request the replica had half answered when it was killed cannot be retried (HAProxy
  // retries only what never got an answer): at most one per client may fail.
  EXPECT_LE(load.failed(), 2) << "of " << load.total();
  // The endpoint answers every request now.
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(Get(endpoint + "/healthz")) << i;
  std::set<int> after = Pids(endpoint, 20);
  EXPECT_EQ(after.count(victim), 0u);
}

TEST_F(ServingTest, CancelLeavesNoProcessAndNoFrontend) {
  std::string id, endpoint;
  ASSERT_NO_FATAL_FAILURE(
      StartReady("{targetUtilization: 90, minReplicas: 2, maxReplicas: 2}", &id, &endpoint));
  std::set<int> pids = Pids(endpoint, 20);
  ASSERT_FALSE(pids.empty());
  auto running = WaitEvent(id, "Running", 1'000);
  ASSERT_TRUE(running);
  size_t at = running->message.find("HAProxy pid ");
  ASSERT_NE(at, std::string::npos) << running->message;
  int proxy_pid = atoi(running->message.c_str() + at + 12);
  int port = atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str());

  ASSERT_TRUE(rt_->engine()->Cancel(id, "test").ok());
  auto run = rt_->engine()->Wait(id, 60'000);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kCancelled);
  for (int pid : pids) EXPECT_NE(kill(pid, 0), 0) << "replica " << pid << " still runs";
  EXPECT_NE(kill(proxy_pid, 0), 0) << "HAProxy still runs";
  EXPECT_TRUE(PortFree(port)) << "the frontend still listens";
  EXPECT_FALSE(Serving(id));
}

TEST_F(ServingTest, NeverReadyReplicasFailTheRunWithTheirLastLogLines) {
  Open();
  auto id = Submit(Yaml("never_ready.py", "      readyTimeout: 3s\n",
                        "{targetUtilization: 90, minReplicas: 1, maxReplicas: 1}"));
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  auto run = rt_->engine()->Wait(*id, 60'000);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  auto ev = WaitEvent(*id, "ServingNotReady", 1'000);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, "Warning");
  EXPECT_NE(ev->message.find("0 of 1 replica(s) ready after 3s (readyTimeout)"), std::string::npos)
      << ev->message;
  EXPECT_NE(ev->message.find("booting model: weights file missing"), std::string::npos)
      << ev->message;
  // The stable code is the step's and the run's failure code, not a word in a message.
  EXPECT_EQ(run->failure_code, codes::kServingNotReady) << run->failure_message;
  EXPECT_EQ(run->failure_message.rfind("step serve: 0 of 1 replica(s) ready after 3s", 0), 0u)
      << run->failure_message;
  auto steps = rt_->store()->ListSteps(run->id);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[0].failure_code, codes::kServingNotReady);
}

TEST_F(ServingTest, AdmissionRefusesAPortInUseAMissingProxyAndReplicasThatCannotFit) {
  // A port in use.
  Open();
  auto busy = FreePort();
  ASSERT_TRUE(busy.ok());
  auto holder = HaproxyProcess::Start(kDefaultHaproxy, dir_ + "/holder",
                                      {"0.0.0.0", *busy, dir_ + "/holder.sock"});
  ASSERT_TRUE(holder.ok()) << holder.error().ToString();
  auto id = Submit(Yaml("server.py", "      port: " + std::to_string(*busy) + "\n",
                        "{targetUtilization: 90, minReplicas: 1, maxReplicas: 1}"));
  ASSERT_TRUE(id.ok());
  auto run = rt_->engine()->Wait(*id, 30'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(run->failure_code, codes::kServingPortInUse) << run->failure_message;
  EXPECT_EQ(run->failure_message,
            "svc.yaml:11:13: SERVING_PORT_IN_USE spec.pipeline.steps[0].port: port " +
                std::to_string(*busy) +
                " of serving step \"serve\" is in use (choose another port, or leave port: unset "
                "and RSL allocates one)");
  (*holder)->Stop();

  // maxReplicas that the nodes cannot hold (500m each: 10000 need 5000 cores).
  id = Submit(Yaml("server.py", "", "{targetUtilization: 90, minReplicas: 1, maxReplicas: 10000}"));
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  run = rt_->engine()->Wait(*id, 30'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(run->failure_code, codes::kInsufficientResources);
  EXPECT_NE(run->failure_message.find("maxReplicas 10000 cannot fit the nodes"), std::string::npos)
      << run->failure_message;
  rt_->engine()->Stop(true);
  rt_.reset();

  // No HAProxy.
  ServeOptions missing;
  missing.haproxy = dir_ + "/no-haproxy";
  Open(missing);
  id = Submit(Yaml("server.py", "", "{targetUtilization: 90, minReplicas: 1, maxReplicas: 1}"));
  ASSERT_TRUE(id.ok());
  run = rt_->engine()->Wait(*id, 30'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kRejected);
  EXPECT_EQ(run->failure_code, codes::kServingProxyMissing) << run->failure_message;
}

}  // namespace
}  // namespace rsl::serve

namespace rsl::serve {
namespace {

// A new version of the same workload name rolls the service under continuous load: its
// replicas start on the same endpoint, take traffic once ready, the old ones drain and stop,
// the old run ends superseded, and not one request fails.
TEST_F(ServingTest, ANewVersionRollsTheServiceWithoutAFailedRequest) {
  const std::string scaling = "{targetUtilization: 90, minReplicas: 2, maxReplicas: 2}";
  std::string old_id, endpoint;
  ASSERT_NO_FATAL_FAILURE(StartReady(scaling, &old_id, &endpoint));
  std::set<int> old_pids = Pids(endpoint, 30);
  ASSERT_EQ(old_pids.size(), 2u);
  std::string body;
  ASSERT_TRUE(Get(endpoint + "/version", &body));
  EXPECT_EQ(body, "1");

  Load load(endpoint + "/version", 4);
  usleep(500'000);
  auto new_id = Submit(Yaml("server.py", "      env: {VERSION: \"2\"}\n", scaling));
  ASSERT_TRUE(new_id.ok()) << new_id.error().ToString();
  auto superseded = WaitEvent(old_id, "Superseded", 90'000);
  ASSERT_TRUE(superseded) << "the old version was never superseded";
  EXPECT_NE(superseded->message.find(*new_id + " is ready behind " + endpoint + ": draining 2"),
            std::string::npos)
      << superseded->message;
  auto old_run = rt_->engine()->Wait(old_id, 60'000);
  ASSERT_TRUE(old_run.ok()) << old_run.error().ToString();
  EXPECT_EQ(old_run->phase, spec::RunPhase::kSucceeded);
  auto steps = rt_->store()->ListSteps(old_run->id);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[0].message, "superseded by " + *new_id);
  usleep(500'000);  // requests keep flowing after the old replicas are gone
  load.Stop();
  EXPECT_EQ(load.failed(), 0) << "of " << load.total();
  EXPECT_GT(load.total(), 20);

  // The same endpoint, the new version's replicas only.
  auto now = Serving(*new_id);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->endpoint, endpoint);
  EXPECT_EQ(now->ready_replicas, 2);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(Get(endpoint + "/version", &body));
    EXPECT_EQ(body, "2");
  }
  for (int pid : old_pids) EXPECT_NE(kill(pid, 0), 0) << "old replica " << pid << " still runs";
  auto run = rt_->store()->GetRun(*new_id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kRunning);
}

// A new version that never becomes ready takes nothing over: the old one keeps serving, and
// the new one fails with SERVING_NOT_READY without touching the shared endpoint.
TEST_F(ServingTest, ANewVersionThatNeverBecomesReadyLeavesTheOldOneServing) {
  const std::string scaling = "{targetUtilization: 90, minReplicas: 1, maxReplicas: 1}";
  std::string old_id, endpoint;
  ASSERT_NO_FATAL_FAILURE(StartReady(scaling, &old_id, &endpoint));
  Load load(endpoint + "/version", 2, 10);
  auto bad = Submit(Yaml("never_ready.py", "      readyTimeout: 3s\n", scaling));
  ASSERT_TRUE(bad.ok()) << bad.error().ToString();
  auto run = rt_->engine()->Wait(*bad, 60'000);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  usleep(500'000);
  load.Stop();
  EXPECT_EQ(load.failed(), 0) << "of " << load.total();
  EXPECT_GT(load.total(), 0);
  std::string body;
  ASSERT_TRUE(Get(endpoint + "/version", &body));
  EXPECT_EQ(body, "1");
  EXPECT_FALSE(WaitEvent(old_id, "Superseded", 100));
  auto old_run = rt_->store()->GetRun(old_id);
  ASSERT_TRUE(old_run.ok());
  EXPECT_EQ(old_run->phase, spec::RunPhase::kRunning);
}

}  // namespace
}  // namespace rsl::serve

namespace rsl::serve {
namespace {

HttpResponse Post(const std::string& url, const std::string& body) {
  HttpRequest req;
  req.method = "POST";
  req.url = url;
  req.headers = {"Content-Type: application/json"};
  req.body = body;
  req.connect_timeout_ms = 2'000;
  req.timeout_ms = 10'000;
  auto r = HttpSend(req);
  EXPECT_TRUE(r.ok()) << url << ": " << r.error().ToString();
  return r.ok() ? *r : HttpResponse{};
}

// "[[0.01, 0.01, ...]]": one row of `n` numbers.
std::string Row(int n) {
  std::string s = "[[";
  for (int i = 0; i < n; ++i) s += i ? ", 0.01" : "0.01";
  return s + "]]";
}

// The serving example as a user runs it (examples/recommend-serving: train, then serve, with
// the model hooks on): its replicas get model.signature and check requests against
// signature.inputs (python/rsl_signature.py), through the endpoint.
TEST_F(ServingTest, TheExampleAnswersRequestsThatContradictTheSignatureWith400) {
  ASSERT_EQ(system("/usr/bin/python3 -c 'import numpy' 2>/dev/null"), 0)
      << "the example needs Debian's python3-numpy (scripts/deps/serve.txt)";
  const std::string example = std::string(RSL_SOURCE_DIR) + "/examples/recommend-serving";
  auto text = ReadFile(example + "/workload.yaml");
  ASSERT_TRUE(text.ok());
  std::string yaml = *text;
  for (size_t at; (at = yaml.find("EXAMPLE_DIR")) != std::string::npos;) {
    yaml.replace(at, 11, example);
  }
  Open({}, /*hooks=*/true);
  auto parsed = spec::ParseWorkload(yaml, "workload.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0].ToString();
  auto id = rt_->engine()->Submit(parsed.workload, "test");
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  ASSERT_TRUE(WaitEvent(*id, "ServingReady", 120'000)) << "never ready";
  // The serving step is the second (train runs first).
  auto run_id = rt_->engine()->ResolveRunId(*id);
  ASSERT_TRUE(run_id.ok());
  auto steps = rt_->store()->ListSteps(*run_id);
  ASSERT_TRUE(steps.ok());
  std::optional<backend::ServingStatus> sv;
  for (const auto& step : *steps) {
    if (step.name == "serve") sv = rt_->backend()->Serving(step.attempt_id);
  }
  ASSERT_TRUE(sv && !sv->endpoint.empty());
  const std::string url = sv->endpoint + "/predict";

  // Good requests, in both forms, are answered with a prediction in [0, 1].
  for (const std::string& body :
       {"{\"user_features\": " + Row(128) + ", \"item_features\": " + Row(64) + "}",
        "{\"inputs\": {\"user_features\": " + Row(128) + ", \"item_features\": " + Row(64) +
            "}}"}) {
    HttpResponse r = Post(url, body);
    ASSERT_EQ(r.status, 200) << r.body;
    auto answer = nlohmann::json::parse(r.body);
    double p = answer["prediction"][0][0].get<double>();
    EXPECT_TRUE(p >= 0.0 && p <= 1.0) << r.body;
  }

  // A wrong shape: 400 with the mismatch, word for word as the C++ check words it.
  HttpResponse bad =
      Post(url, "{\"user_features\": " + Row(127) + ", \"item_features\": " + Row(64) + "}");
  ASSERT_EQ(bad.status, 400) << bad.body;
  auto error = nlohmann::json::parse(bad.body)["error"];
  EXPECT_EQ(error["code"], "INPUT_SCHEMA_MISMATCH");
  EXPECT_EQ(error["tensor"], "user_features");
  EXPECT_EQ(error["field"], "shape");
  EXPECT_EQ(error["expected"], "[1, 128]");
  EXPECT_EQ(error["actual"], "[1, 127]");
  EXPECT_EQ(error["message"], "user_features.shape expected [1, 128], got [1, 127]");
  EXPECT_EQ(error["hint"], "send user_features as float32 [1, 128]");
  EXPECT_EQ(error["path"], "spec.model.signature.inputs[0]");

  // A wrong dtype, a missing tensor and an unknown one.
  std::string with_text = Row(128);
  with_text.replace(2, 4, "\"x\"");  // [["x", 0.01, ...]]
  HttpResponse typed =
      Post(url, "{\"user_features\": " + with_text + ", \"item_features\": " + Row(64) + "}");
  ASSERT_EQ(typed.status, 400) << typed.body;
  EXPECT_EQ(nlohmann::json::parse(typed.body)["error"]["message"],
            "user_features.dtype expected float32, got string at index [0, 0]");
  HttpResponse missing = Post(url, "{\"inputs\": {\"user_feature\": " + Row(128) + "}}");
  ASSERT_EQ(missing.status, 400) << missing.body;
  std::vector<std::string> messages;
  const auto missing_answer = nlohmann::json::parse(missing.body);
  for (const auto& e : missing_answer["errors"]) {
    messages.push_back(e["message"].get<std::string>() + " (" + e["hint"].get<std::string>() + ")");
  }
  EXPECT_EQ(messages,
            (std::vector<std::string>{
                "user_features missing from the request (expected float32 [1, 128]) (send "
                "user_features as float32 [1, 128])",
                "item_features missing from the request (expected float32 [1, 64]) (send "
                "item_features as float32 [1, 64])",
                "user_feature is not an input of the signature (did you mean "
                "\"user_features\"?)"}));

  // The endpoint still answers good requests after bad ones.
  EXPECT_EQ(
      Post(url, "{\"user_features\": " + Row(128) + ", \"item_features\": " + Row(64) + "}").status,
      200);
}

}  // namespace
}  // namespace rsl::serve
