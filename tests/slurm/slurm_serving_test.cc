// Serving on Slurm through a real rsl-controller (--backend slurm) on the fixture's cluster:
// each replica is a Slurm job that chooses its port on its node, HAProxy on this host routes
// to node-address:port. Two replicas land on two nodes behind one endpoint and both answer
// through it; a replica job killed with scancel is replaced while the endpoint keeps
// answering; cancel leaves no job and no frontend. Under load the replicas' live usage scales
// the service out (a second replica job) and, after scaleDownDelay, back in.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "api/http_test_util.h"
#include "base/strings.h"
#include "cluster_util.h"
#include "harness.h"

namespace rsl::apitest {
namespace {

using Json = nlohmann::json;
using api::testing::BodyOf;
using api::testing::RawRequest;
using api::testing::StatusOf;
using namespace std::chrono_literals;
using slurm_test::Sh;

constexpr char kHaproxy[] = "/usr/sbin/haproxy";

// Each replica says who it is: its index and the Slurm node its job runs on; /signature
// answers the model signature RSL gave it (RSL_MODEL_SIGNATURE).
constexpr char kServer[] = R"PY(
import http.server, os
port = int(os.environ["RSL_PORT"])
who = "replica %s node %s" % (os.environ["RSL_REPLICA"], os.environ.get("SLURMD_NODENAME", "?"))
print(who, "listening on", port, flush=True)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/signature":
            body = os.environ.get("RSL_MODEL_SIGNATURE", "none").encode()
        else:
            body = who.encode() if self.path == "/who" else b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
)PY";

// A replica whose every /burn request uses about 10 ms of CPU (autoscaling under load).
constexpr char kBurner[] = R"PY(
import http.server, os, time
port = int(os.environ["RSL_PORT"])
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/burn":
            t = time.process_time()
            while time.process_time() - t < 0.01:
                pass
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
)PY";

// Clients sending GETs back to back (after `pause_ms`), counting failures (non-2xx or no
// answer).
class Load {
 public:
  Load(int port, std::string path, int clients, int pause_ms = 0) {
    for (int i = 0; i < clients; ++i) {
      threads_.emplace_back([this, port, path, pause_ms] {
        while (!stop_) {
          std::string answer = RawRequest(port, "GET", path, "", "", 30s);
          ++total_;
          if (StatusOf(answer) != 200) ++failed_;
          if (pause_ms) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
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
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> total_{0}, failed_{0};
  std::vector<std::thread> threads_;
};

class SlurmServingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(kHaproxy, X_OK), 0) << "haproxy is not installed (scripts/deps/serve.txt)";
    slurm_test::UseFixtureCluster();
    slurm_test::EnsureAllNodesIdle();
    c_.UseArgs({"--backend", "slurm"});
    ASSERT_TRUE(c_.Start()) << c_.Log();
    editor_ = c_.CreateToken("risk", "editor", "eddie");
    chmod(c_.work_dir().c_str(), 0755);  // steps may run as other users
    script_ = c_.work_dir() + "/server.py";
    WriteText(script_, kServer);
    chmod(script_.c_str(), 0644);
  }
  void TearDown() override { Sh("squeue -h -o %A | xargs -r scancel"); }

  // cpu 2 and one GPU: only n1 and n2 (2 CPUs each, GPUs) fit a replica, one each, so the
  // two replicas run on two different nodes.
  std::string Submit() {
    WriteText(c_.work_dir() + "/svc.yaml",
              "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
              "metadata: {name: svc, namespace: risk}\n"
              "spec:\n  resources: {cpu: \"2\", memory: 256Mi, gpu: \"1\"}\n"
              "  model:\n    framework: custom\n    version: \"1.0.0\"\n"
              "    signature: {inputs: [{name: x, dtype: float32, shape: [-1, 4]}]}\n"
              "  pipeline:\n"
              "    - name: serve\n      serving: true\n"
              "      command: [/usr/bin/python3, " +
                  script_ +
                  "]\n"
                  "      resources:\n"
                  "        autoscaling: {targetUtilization: 90, minReplicas: 2, maxReplicas: 2}\n");
    CmdResult r = c_.Seedctl(editor_, {"workload", "submit", "-f", "svc.yaml"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return IdFromSubmit(r.out);
  }

  Json Status(const std::string& id) {
    CmdResult s = c_.Seedctl(editor_, {"workload", "status", "--id", id, "-o", "json"});
    return Json::parse(s.out, nullptr, false);
  }

  Json WaitServing(const std::string& id, int ready, std::chrono::seconds timeout = 120s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      Json st = Status(id);
      if (st.is_object()) {
        Json sv = st["status"].value("serving", Json());
        if (sv.is_object() && sv.value("readyReplicas", 0) == ready) return sv;
      }
      std::this_thread::sleep_for(200ms);
    }
    return Json();
  }

  std::vector<std::pair<std::string, std::string>> Events(const std::string& id) {
    std::string body =
        BodyOf(RawRequest(c_.port(), "GET", "/api/v1/workloads/" + id + "/events", editor_));
    std::vector<std::pair<std::string, std::string>> out;
    Json j = Json::parse(body, nullptr, false);
    if (!j.is_object()) return out;
    for (const auto& e : j["items"])
      out.emplace_back(e.value("reason", ""), e.value("message", ""));
    return out;
  }
  int CountEvents(const std::string& id, const std::string& reason) {
    int n = 0;
    for (const auto& [r, m] : Events(id)) n += r == reason ? 1 : 0;
    return n;
  }
  std::string EventMessage(const std::string& id, const std::string& reason) {
    for (const auto& [r, m] : Events(id)) {
      if (r == reason) return m;
    }
    return "";
  }

  static int PortOf(const std::string& endpoint) {
    return atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str());
  }
  static std::string Get(int port, const std::string& path) {
    std::string answer = RawRequest(port, "GET", path, "", "", 5s);
    return StatusOf(answer) == 200 ? BodyOf(answer) : "";
  }
  // The Slurm jobs of the run: job id -> state (their comment names the run's attempts).
  std::map<std::string, std::string> Jobs(const std::string& run_id) {
    std::map<std::string, std::string> jobs;
    for (const auto& line : Split(Sh("squeue -h -o '%A %T %k'"), '\n')) {
      auto f = Split(line, ' ');
      if (f.size() >= 3 && line.find(run_id) != std::string::npos) jobs[f[0]] = f[1];
    }
    return jobs;
  }

  Controller c_;
  std::string editor_;
  std::string script_;
};

TEST_F(SlurmServingTest, TwoReplicaJobsOnTwoNodesBehindOneEndpoint) {
  auto t0 = std::chrono::steady_clock::now();
  std::string id = Submit();
  ASSERT_FALSE(id.empty());
  Json sv = WaitServing(id, 2);
  ASSERT_TRUE(sv.is_object()) << Status(id).dump() << c_.Log() << Sh("squeue");
  double ready_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "submit to 2 ready replicas on Slurm: " << ready_s << " s" << std::endl;
  std::string run_id = Status(id)["status"].value("runId", "");
  ASSERT_FALSE(run_id.empty());
  std::string endpoint = sv["endpoint"];
  int port = PortOf(endpoint);
  ASSERT_GT(port, 0);

  // Two replica jobs, on two nodes (the status rows say so too).
  std::map<std::string, std::string> jobs = Jobs(run_id);
  EXPECT_EQ(jobs.size(), 2u) << Sh("squeue -o '%A %T %N %k'");
  std::set<std::string> status_nodes;
  for (const auto& r : sv["replicaList"]) status_nodes.insert(r.value("node", ""));
  EXPECT_EQ(status_nodes.size(), 2u) << sv.dump();

  // Requests through the endpoint reach both replicas, each on its own node.
  std::set<std::string> who;
  for (int i = 0; i < 40; ++i) who.insert(Get(port, "/who"));
  std::set<std::string> nodes;
  for (const auto& w : who) {
    ASSERT_FALSE(w.empty()) << "a request failed";
    nodes.insert(w.substr(w.rfind(' ') + 1));
  }
  EXPECT_EQ(who.size(), 2u) << Join(std::vector<std::string>(who.begin(), who.end()), "; ");
  EXPECT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes, status_nodes);
  // The replica jobs got the model signature through the job's environment.
  std::set<std::string> signatures;
  for (int i = 0; i < 10; ++i) signatures.insert(Get(port, "/signature"));
  EXPECT_EQ(signatures,
            (std::set<std::string>{R"({"inputs":[{"dtype":"float32","name":"x","shape":[-1,4]}],)"
                                   R"("outputs":[]})"}));

  // A replica's job killed with scancel (outside RSL): restarted as a new job, the endpoint
  // answering all along (HAProxy retries a refused connection on the other replica).
  std::string victim = jobs.begin()->first;
  Sh("scancel " + victim);
  int failed = 0, sent = 0;
  std::string failures;  // what each failed request got, for the message below
  auto deadline = std::chrono::steady_clock::now() + 120s;
  bool replaced = false;
  while (std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 5; ++i, ++sent) {
      std::string answer = RawRequest(port, "GET", "/who", "", "", 5s);
      if (StatusOf(answer) == 200) continue;
      ++failed;
      failures += "[" + answer.substr(0, 120) + "] ";
    }
    if (CountEvents(id, "ReplicaRestarted") >= 1) {
      Json now = WaitServing(id, 2, 1s);
      auto j = Jobs(run_id);
      if (now.is_object() && j.size() == 2 && !j.count(victim)) {
        replaced = true;
        break;
      }
    }
    std::this_thread::sleep_for(100ms);
  }
  std::cout << "replica job replaced: " << failed << " failed of " << sent << " requests"
            << std::endl;
  EXPECT_TRUE(replaced) << Status(id).dump() << Sh("squeue -o '%A %T %N %k'");
  // One client sends one request at a time: the request the killed replica had half answered
  // cannot be retried by HAProxy (it retries only what got no answer), so at most one fails,
  // as in the local ServingTest.
  EXPECT_LE(failed, 1) << "of " << sent << ": " << failures;
  EXPECT_NE(EventMessage(id, "ReplicaRestarted").find("restart 1"), std::string::npos)
      << EventMessage(id, "ReplicaRestarted");
  EXPECT_EQ(Status(id)["status"].value("phase", ""), "RUNNING");

  // Cancel: every replica job scancel'ed, the frontend gone.
  CmdResult cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  EXPECT_EQ(c_.WaitPhase(editor_, id, 90000), "CANCELLED") << c_.Log();
  for (int i = 0; i < 100 && !Jobs(run_id).empty(); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(Jobs(run_id).empty()) << Sh("squeue -o '%A %T %N %k'");
  EXPECT_EQ(Get(port, "/who"), "") << "the frontend still answers";
}

// Autoscaling on Slurm: the replica jobs' live usage (their batch scripts' samplers) is their
// utilization, CPU rate over the cpu request, as for local replicas. Under load a second
// replica job is submitted and routed once ready; after the load and scaleDownDelay one is
// drained and scancel'ed, no request failing.
TEST_F(SlurmServingTest, ScalesOutUnderLoadAndBackInAfterTheDelay) {
  std::string burner = c_.work_dir() + "/burner.py";
  WriteText(burner, kBurner);
  chmod(burner.c_str(), 0644);
  WriteText(c_.work_dir() + "/scale.yaml",
            "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
            "metadata: {name: scale, namespace: risk}\n"
            "spec:\n  resources: {cpu: \"1\", memory: 256Mi}\n  pipeline:\n"
            "    - name: serve\n      serving: true\n"
            "      command: [/usr/bin/python3, " +
                burner +
                "]\n"
                "      resources:\n"
                "        autoscaling: {targetUtilization: 20, minReplicas: 1, maxReplicas: 2, "
                "scaleDownDelay: 6s}\n");
  CmdResult r = c_.Seedctl(editor_, {"workload", "submit", "-f", "scale.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string id = IdFromSubmit(r.out);
  Json sv = WaitServing(id, 1);
  ASSERT_TRUE(sv.is_object()) << Status(id).dump() << c_.Log() << Sh("squeue");
  std::string run_id = Status(id)["status"].value("runId", "");
  int port = PortOf(sv["endpoint"]);
  ASSERT_GT(port, 0);
  EXPECT_EQ(Jobs(run_id).size(), 1u) << Sh("squeue -o '%A %T %N %k'");

  auto since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double up_s = -1, ready_s = -1, busy_utilization = 0;
  {
    Load load(port, "/burn", 3);
    auto t0 = std::chrono::steady_clock::now();
    auto deadline = t0 + 120s;
    while (std::chrono::steady_clock::now() < deadline) {
      Json st = Status(id);
      Json now = st.is_object() ? st["status"].value("serving", Json()) : Json();
      if (now.is_object()) {
        busy_utilization = std::max(busy_utilization, now.value("utilization", 0.0));
      }
      if (up_s < 0 && CountEvents(id, "ScaledUp") >= 1) up_s = since(t0);
      if (up_s >= 0 && now.is_object() && now.value("readyReplicas", 0) == 2 &&
          Jobs(run_id).size() == 2) {
        ready_s = since(t0);
        break;
      }
      std::this_thread::sleep_for(200ms);
    }
    std::this_thread::sleep_for(1s);  // both take requests
    EXPECT_EQ(CountEvents(id, "ScaledDown"), 0) << "scaled down under load";
    load.Stop();
    std::cout << "Slurm autoscaling: load to ScaledUp " << up_s << " s, to 2 ready replica jobs "
              << ready_s << " s, utilization seen " << busy_utilization << ", " << load.failed()
              << " failed of " << load.total() << " requests" << std::endl;
    ASSERT_GE(up_s, 0) << "no ScaledUp under load" << Status(id).dump();
    EXPECT_NE(EventMessage(id, "ScaledUp").find("target 20%, 1 ready: 1 -> 2"), std::string::npos)
        << EventMessage(id, "ScaledUp");
    EXPECT_GE(ready_s, 0) << Status(id).dump() << Sh("squeue -o '%A %T %N %k'");
    // Anti-affinity: every node can take a 1-CPU replica, so the second went elsewhere.
    std::set<std::string> nodes;
    for (const auto& line : Split(Sh("squeue -h -o '%N %k'"), '\n')) {
      if (line.find(run_id) != std::string::npos) nodes.insert(line.substr(0, line.find(' ')));
    }
    EXPECT_EQ(nodes.size(), 2u) << Sh("squeue -o '%A %T %N %k'");
    // The replica's CPU rate over its request of 1 CPU: about one busy core where the machine
    // has one to spare (its 2 cores are shared with other tests here).
    EXPECT_GT(busy_utilization, 0.2);
    EXPECT_EQ(load.failed(), 0) << "of " << load.total();
  }
  {
    Load light(port, "/healthz", 1, 50);  // keeps going through the scale-down
    auto t0 = std::chrono::steady_clock::now();
    auto deadline = t0 + 120s;
    double down_s = -1, gone_s = -1;
    while (std::chrono::steady_clock::now() < deadline) {
      if (down_s < 0 && CountEvents(id, "ScaledDown") >= 1) down_s = since(t0);
      if (down_s >= 0 && Jobs(run_id).size() == 1) {
        gone_s = since(t0);
        break;
      }
      std::this_thread::sleep_for(200ms);
    }
    std::this_thread::sleep_for(500ms);
    light.Stop();
    std::cout << "Slurm autoscaling: load off to ScaledDown " << down_s
              << " s (scaleDownDelay 6s), to one replica job " << gone_s << " s, " << light.failed()
              << " failed of " << light.total() << " requests" << std::endl;
    ASSERT_GE(down_s, 0) << "no ScaledDown after the load" << Status(id).dump();
    EXPECT_NE(EventMessage(id, "ScaledDown").find("2 -> 1"), std::string::npos)
        << EventMessage(id, "ScaledDown");
    EXPECT_GE(gone_s, 0) << Sh("squeue -o '%A %T %N %k'");
    EXPECT_EQ(light.failed(), 0) << "of " << light.total();
    EXPECT_GT(light.total(), 0);
  }
  EXPECT_EQ(CountEvents(id, "ScaledUp"), 1) << "no flapping";
  EXPECT_EQ(Status(id)["status"].value("phase", ""), "RUNNING");
  CmdResult cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  EXPECT_EQ(c_.WaitPhase(editor_, id, 90000), "CANCELLED") << c_.Log();
}

// The same controller, a batch step: `seedctl workload status` shows a running Slurm step's
// CPU and memory so far (the batch script's samples), as it does for a local step
// (tests/api/live_status_inputs_test.cc).
using SlurmControllerTest = SlurmServingTest;
TEST_F(SlurmControllerTest, StatusShowsTheUseOfARunningSlurmStep) {
  WriteText(
      c_.work_dir() + "/hog.yaml",
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
      "metadata: {name: hog, namespace: risk}\nspec:\n  pipeline:\n"
      "    - name: hog\n      resources: {cpu: \"1\", memory: 256Mi}\n"
      "      command: [/usr/bin/python3, -c, \"x = b'a' * (80 << 20)\\nwhile True: pass\\n\"]\n");
  CmdResult submitted = c_.Seedctl(editor_, {"workload", "submit", "-f", "hog.yaml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  std::string id = IdFromSubmit(submitted.out);
  Json cur;
  auto until = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < until) {
    Json w = Status(id);
    if (w.is_object() && w["status"].contains("currentStep")) cur = w["status"]["currentStep"];
    if (cur.is_object() && cur.value("cpuMs", 0) >= 300 &&
        cur.value("peakMemoryBytes", int64_t(0)) >= (80LL << 20)) {
      break;
    }
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(cur.is_object()) << Status(id).dump();
  std::cout << "running Slurm step in status: " << cur.dump() << std::endl;
  EXPECT_EQ(cur.value("phase", ""), "RUNNING");
  EXPECT_GE(cur.value("cpuMs", 0), 300) << cur.dump();
  EXPECT_GE(cur.value("peakMemoryBytes", int64_t(0)), 80LL << 20) << cur.dump();
  EXPECT_LE(cur.value("peakMemoryBytes", int64_t(0)), 256LL << 20) << cur.dump();
  EXPECT_GE(cur.value("wallMs", 0), 2000) << cur.dump();
  CmdResult text = c_.Seedctl(editor_, {"workload", "status", "--id", id});
  EXPECT_NE(text.out.find("\nCPU: "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("MEMORY_USED: 0/"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("/256Mi\n"), std::string::npos) << text.out;
  CmdResult cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(c_.WaitPhase(editor_, id, 90000), "CANCELLED") << c_.Log();
}

}  // namespace
}  // namespace rsl::apitest
