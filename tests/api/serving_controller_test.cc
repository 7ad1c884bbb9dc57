// Serving through a real rsl-controller, driven by seedctl and HTTP: a controller killed with
// SIGKILL while it serves, then restarted, adopts the replicas and HAProxy it left (the
// endpoint answers all along, no replica is started twice), and a later cancel leaves no
// process and no frontend; `seedctl rollback` rolls the service onto the earlier version.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <iostream>
#include <set>
#include <thread>

#include "api/http_test_util.h"
#include "harness.h"

namespace rsl::apitest {
namespace {

using Json = nlohmann::json;
using api::testing::BodyOf;
using api::testing::RawRequest;
using api::testing::StatusOf;
using namespace std::chrono_literals;

constexpr char kHaproxy[] = "/usr/sbin/haproxy";

constexpr char kServer[] = R"PY(
import http.server, os
port = int(os.environ["RSL_PORT"])
print("replica", os.environ["RSL_REPLICA"], "listening", flush=True)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/pid":
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

class ServingControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(kHaproxy, X_OK), 0) << "haproxy is not installed (scripts/deps/serve.txt)";
    ASSERT_TRUE(c_.Start()) << c_.Log();
    editor_ = c_.CreateToken("risk", "editor", "eddie");
    chmod(c_.work_dir().c_str(), 0755);  // steps may run as other users
    script_ = c_.work_dir() + "/server.py";
    WriteText(script_, kServer);
    chmod(script_.c_str(), 0644);
  }

  std::string Yaml(const std::string& version) {
    return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
           "metadata: {name: svc, namespace: risk}\n"
           "spec:\n  resources: {cpu: 500m, memory: 256Mi}\n  pipeline:\n"
           "    - name: serve\n      serving: true\n"
           "      command: [/usr/bin/python3, " +
           script_ + "]\n      env: {VERSION: \"" + version +
           "\"}\n"
           "      resources:\n"
           "        autoscaling: {targetUtilization: 90, minReplicas: 2, maxReplicas: 2}\n";
  }

  std::string Submit(const std::string& version) {
    WriteText(c_.work_dir() + "/svc.yaml", Yaml(version));
    CmdResult r = c_.Seedctl(editor_, {"workload", "submit", "-f", "svc.yaml"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return IdFromSubmit(r.out);
  }

  Json Status(const std::string& id) {
    CmdResult s = c_.Seedctl(editor_, {"workload", "status", "--id", id, "-o", "json"});
    return Json::parse(s.out, nullptr, false);
  }

  // status.serving once `ready` replicas are ready (null after `timeout`).
  Json WaitServing(const std::string& id, int ready, std::chrono::seconds timeout = 90s) {
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

  // Reasons and messages of the run's events.
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
  std::string EventMessage(const std::string& id, const std::string& reason) {
    for (const auto& [r, m] : Events(id)) {
      if (r == reason) return m;
    }
    return "";
  }

  static int PortOf(const std::string& endpoint) {
    return atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str());
  }
  // GET path on the endpoint: the body, or "" when it did not answer 200.
  static std::string Get(int port, const std::string& path) {
    std::string answer = RawRequest(port, "GET", path, "", "", 5s);
    return StatusOf(answer) == 200 ? BodyOf(answer) : "";
  }
  static std::set<int> Pids(int port) {
    std::set<int> pids;
    for (int i = 0; i < 30; ++i) {
      std::string body = Get(port, "/pid");
      if (!body.empty()) pids.insert(atoi(body.c_str()));
    }
    return pids;
  }
  static bool Alive(int pid) { return kill(pid, 0) == 0; }

  Controller c_;
  std::string editor_;
  std::string script_;
};

TEST_F(ServingControllerTest, AKilledControllerAdoptsTheReplicasAndCancelLeavesNothing) {
  std::string id = Submit("1");
  ASSERT_FALSE(id.empty());
  Json sv = WaitServing(id, 2);
  ASSERT_TRUE(sv.is_object()) << Status(id).dump() << c_.Log();
  std::string endpoint = sv["endpoint"];
  int port = PortOf(endpoint);
  std::set<int> pids = Pids(port);
  ASSERT_EQ(pids.size(), 2u);
  std::string running = EventMessage(id, "Running");
  size_t at = running.find("HAProxy pid ");
  ASSERT_NE(at, std::string::npos) << running;
  int proxy_pid = atoi(running.c_str() + at + 12);

  // Each replica's log, and all of them under headers.
  CmdResult one =
      c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "serve", "--replica", "1"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "replica 1 listening\n");
  CmdResult all = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "serve"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out,
            "==> serve replica 0 <==\nreplica 0 listening\n"
            "==> serve replica 1 <==\nreplica 1 listening\n");
  CmdResult none =
      c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "serve", "--replica", "7"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("replica 7 of step \"serve\" in " + id + " has no log"),
            std::string::npos)
      << none.err;
  EXPECT_NE(none.err.find("replicas with a log: 0, 1"), std::string::npos) << none.err;
  EXPECT_EQ(none.LastErrLine(), "NOT_FOUND");

  c_.Kill9();
  // The data plane does not need the controller: HAProxy and the replicas keep answering.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Get(port, "/version"), "1") << i;

  ASSERT_TRUE(c_.Start()) << c_.Log();
  sv = WaitServing(id, 2);
  ASSERT_TRUE(sv.is_object()) << Status(id).dump() << c_.Log();
  EXPECT_EQ(sv["endpoint"], endpoint);
  EXPECT_EQ(sv["replicas"], 2);
  std::string recovered = EventMessage(id, "Recovered");
  bool adopted = false;
  for (const auto& [reason, message] : Events(id)) {
    adopted =
        adopted || (reason == "Recovered" &&
                    message.find("adopted 2 replica(s) behind " + endpoint + " (HAProxy pid " +
                                 std::to_string(proxy_pid) + " adopted)") != std::string::npos);
  }
  EXPECT_TRUE(adopted) << Events(id).size() << " events; " << recovered;
  // The same two processes: adopted, not started again.
  EXPECT_EQ(Pids(port), pids);
  EXPECT_TRUE(Alive(proxy_pid));
  EXPECT_EQ(Status(id)["status"].value("phase", ""), "RUNNING");

  CmdResult cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  EXPECT_EQ(c_.WaitPhase(editor_, id, 60000), "CANCELLED");
  for (int pid : pids) EXPECT_FALSE(Alive(pid)) << "replica " << pid << " still runs";
  for (int i = 0; i < 100 && Alive(proxy_pid); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(Alive(proxy_pid)) << "HAProxy still runs";
  EXPECT_EQ(Get(port, "/version"), "") << "the frontend still answers";
}

// A controller stopped with SIGTERM (a restart, an upgrade) leaves the service up: HAProxy
// and the replicas keep answering while it is down, the next start adopts them (no replica
// started twice), and no request fails. The step's secret values stay masked in the replica
// logs the API serves after each adoption (SIGTERM, then SIGKILL), also for a replica
// restarted after the adoption.
TEST_F(ServingControllerTest, ASigtermedControllerLeavesTheServiceUpAndSecretsMasked) {
  const std::string secret = "tok-5f2a9c81e7d3b6a4";
  CmdResult created = c_.Seedctl(
      editor_, {"secret", "create", "svc-creds", "--from-literal", "API_TOKEN=" + secret});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  std::string leaky = c_.work_dir() + "/leaky.py";
  WriteText(leaky, "import os\nprint('token', os.environ.get('API_TOKEN', ''), flush=True)\n" +
                       std::string(kServer));
  chmod(leaky.c_str(), 0644);
  WriteText(c_.work_dir() + "/svc.yaml",
            "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
            "metadata: {name: svc, namespace: risk}\n"
            "spec:\n  resources: {cpu: 500m, memory: 256Mi}\n  pipeline:\n"
            "    - name: serve\n      serving: true\n"
            "      command: [/usr/bin/python3, " +
                leaky +
                "]\n      envFrom: [{secretRef: svc-creds}]\n"
                "      resources:\n"
                "        autoscaling: {targetUtilization: 90, minReplicas: 2, maxReplicas: 2}\n");
  CmdResult sub = c_.Seedctl(editor_, {"workload", "submit", "-f", "svc.yaml"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  std::string id = IdFromSubmit(sub.out);
  Json sv = WaitServing(id, 2);
  ASSERT_TRUE(sv.is_object()) << Status(id).dump() << c_.Log();
  std::string endpoint = sv["endpoint"];
  int port = PortOf(endpoint);
  std::set<int> pids = Pids(port);
  ASSERT_EQ(pids.size(), 2u);
  std::string running = EventMessage(id, "Running");
  size_t at = running.find("HAProxy pid ");
  ASSERT_NE(at, std::string::npos) << running;
  int proxy_pid = atoi(running.c_str() + at + 12);
  auto logs_masked = [&](const std::string& when) {
    CmdResult all = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "serve"});
    EXPECT_EQ(all.exit_code, 0) << when << all.err;
    EXPECT_EQ(all.out.find(secret), std::string::npos) << when << ": " << all.out;
    EXPECT_NE(all.out.find("token ***"), std::string::npos) << when << ": " << all.out;
  };
  logs_masked("before any restart");

  // Requests all along, from before the SIGTERM to after the second adoption.
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0}, failed{0};
  std::thread load([&] {
    while (!stop) {
      ++sent;
      if (Get(port, "/version").empty()) ++failed;
      std::this_thread::sleep_for(20ms);
    }
  });

  EXPECT_EQ(c_.Terminate(), 0) << c_.Log();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Get(port, "/version"), "1") << "controller down " << i;
  EXPECT_TRUE(Alive(proxy_pid)) << "SIGTERM took HAProxy down";
  for (int pid : pids) EXPECT_TRUE(Alive(pid)) << "SIGTERM stopped replica " << pid;

  ASSERT_TRUE(c_.Start()) << c_.Log();
  sv = WaitServing(id, 2);
  ASSERT_TRUE(sv.is_object()) << Status(id).dump() << c_.Log();
  EXPECT_EQ(sv["endpoint"], endpoint);
  bool adopted = false;
  for (const auto& [reason, message] : Events(id)) {
    adopted =
        adopted || (reason == "Recovered" &&
                    message.find("adopted 2 replica(s) behind " + endpoint + " (HAProxy pid " +
                                 std::to_string(proxy_pid) + " adopted)") != std::string::npos);
  }
  EXPECT_TRUE(adopted) << EventMessage(id, "Recovered");
  EXPECT_EQ(Pids(port), pids);  // adopted, not started again
  logs_masked("after the SIGTERM restart");

  c_.Kill9();
  ASSERT_TRUE(c_.Start()) << c_.Log();
  ASSERT_TRUE(WaitServing(id, 2).is_object()) << Status(id).dump() << c_.Log();
  logs_masked("after the SIGKILL restart");
  // A replica restarted after the adoption: its log is masked too.
  int victim = *pids.begin();
  kill(victim, SIGKILL);
  bool restarted = false;
  for (int i = 0; i < 300 && !restarted; ++i) {
    std::set<int> now = Pids(port);
    restarted = now.size() == 2 && !now.count(victim) && WaitServing(id, 2, 1s).is_object();
    if (!restarted) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(restarted) << Status(id).dump();
  logs_masked("after a replica restarted after the adoption");
  stop = true;
  load.join();
  std::cout << "controller SIGTERM + restart + SIGKILL + restart + replica kill: " << failed
            << " failed of " << sent << " requests" << std::endl;
  EXPECT_EQ(failed, 0) << "of " << sent;

  CmdResult cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  EXPECT_EQ(c_.WaitPhase(editor_, id, 60000), "CANCELLED");
  for (int i = 0; i < 100 && Alive(proxy_pid); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(Alive(proxy_pid)) << "HAProxy still runs";
}

TEST_F(ServingControllerTest, RollbackRollsTheServiceOntoTheEarlierVersion) {
  std::string v1 = Submit("1");
  ASSERT_FALSE(v1.empty());
  Json sv = WaitServing(v1, 2);
  ASSERT_TRUE(sv.is_object()) << Status(v1).dump() << c_.Log();
  int port = PortOf(sv["endpoint"]);
  std::string v2 = Submit("2");
  ASSERT_FALSE(v2.empty());
  EXPECT_EQ(c_.WaitPhase(editor_, v1, 90000), "SUCCEEDED") << c_.Log();
  EXPECT_NE(EventMessage(v1, "Superseded").find(v2 + " is ready"), std::string::npos);
  EXPECT_EQ(Get(port, "/version"), "2");

  CmdResult rb = c_.Seedctl(editor_, {"rollback", "--id", v1});
  ASSERT_EQ(rb.exit_code, 0) << rb.out << rb.err;
  std::string v3 = IdFromSubmit(rb.out);
  ASSERT_FALSE(v3.empty()) << rb.out;
  EXPECT_EQ(c_.WaitPhase(editor_, v2, 90000), "SUCCEEDED") << c_.Log();
  EXPECT_NE(EventMessage(v2, "Superseded").find(v3 + " is ready"), std::string::npos);
  sv = WaitServing(v3, 2);
  ASSERT_TRUE(sv.is_object());
  EXPECT_EQ(PortOf(sv["endpoint"]), port);  // the same endpoint throughout
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Get(port, "/version"), "1") << i;
  CmdResult cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", v3});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  EXPECT_EQ(c_.WaitPhase(editor_, v3, 60000), "CANCELLED");
}

}  // namespace
}  // namespace rsl::apitest
