// The controller's memory does not grow with its history (label `api`): after more workloads
// finished through a real rsl-controller than any of its bounded caches holds, /metrics shows
// that it holds no run and that its caches stayed at their bounds, and the oldest workload
// still answers status, describe, events and the list from the store.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "api/http_test_util.h"
#include "harness.h"

namespace rsl::apitest {
namespace {

using Json = nlohmann::json;
using api::testing::BodyOf;
using api::testing::RawRequest;
using api::testing::StatusOf;

// What the controller bounds (engine_internal.h kRememberFinished, controller_service.cc
// kMaxCachedSnapshots): the test finishes more workloads than either.
constexpr int kBound = 256;
constexpr int kWorkloads = kBound + 64;

// An unlabelled sample's value in a /metrics text (-1 when absent).
double Sample(const std::string& text, const std::string& name) {
  size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

Json GetJson(int port, const std::string& token, const std::string& path, int* status) {
  std::string answer = RawRequest(port, "GET", path, token);
  *status = StatusOf(answer);
  return Json::parse(BodyOf(answer), nullptr, false);
}

TEST(ControllerMemoryTest, FinishedWorkloadsAreReadFromTheStoreNotHeld) {
  Controller c;
  ASSERT_TRUE(c.Start()) << c.Log();
  const std::string admin = c.CreateToken("*", "admin", "ada");
  const std::string yaml =
      "apiVersion: aiengine.volc.com/v1\n"
      "kind: AIWorkload\n"
      "metadata: {name: short, namespace: mem}\n"
      "spec:\n"
      "  pipeline:\n"
      "    - {name: a, command: [\"true\"]}\n";
  std::vector<std::string> ids;
  for (int i = 0; i < kWorkloads; ++i) {
    std::string answer = RawRequest(c.port(), "POST", "/api/v1/workloads", admin, yaml,
                                    std::chrono::seconds(60), "Content-Type: application/yaml\r\n");
    ASSERT_EQ(StatusOf(answer), 201) << answer;
    Json obj = Json::parse(BodyOf(answer), nullptr, false);
    ASSERT_TRUE(obj.is_object()) << answer;
    ids.push_back(obj["metadata"].value("id", ""));
    ASSERT_FALSE(ids.back().empty()) << answer;
  }
  // Every one ends; a loaded machine may take minutes (ASan), so the wait is generous.
  int status = 0;
  int64_t succeeded = 0;
  for (int waited = 0; waited < 600; ++waited) {
    Json page = GetJson(c.port(), admin, "/api/v1/workloads?namespace=mem&phase=SUCCEEDED&limit=1",
                        &status);
    ASSERT_EQ(status, 200) << page.dump();
    succeeded = page["metadata"].value("total", int64_t{0});
    if (succeeded == kWorkloads) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ASSERT_EQ(succeeded, kWorkloads) << c.Log();

  // Status of every workload: more versions than the API's cache holds go through it.
  for (const auto& id : ids) {
    Json obj = GetJson(c.port(), admin, "/api/v1/workloads/" + id, &status);
    ASSERT_EQ(status, 200) << id;
    EXPECT_EQ(obj["status"].value("phase", ""), "SUCCEEDED") << id;
  }
  std::string metrics = BodyOf(RawRequest(c.port(), "GET", "/metrics", admin));
  // No run is held once it finished; what is remembered stays at its bound.
  EXPECT_EQ(Sample(metrics, "rsl_engine_runs_in_memory"), 0) << metrics;
  double remembered = Sample(metrics, "rsl_engine_finished_runs_remembered");
  EXPECT_GE(remembered, 1) << metrics;
  EXPECT_LE(remembered, kBound) << metrics;
  double snapshots = Sample(metrics, "rsl_api_cached_snapshots");
  EXPECT_GE(snapshots, 1) << metrics;
  EXPECT_LE(snapshots, kBound) << metrics;
  // One client, one submission at a time: each went in a transaction of its own.
  EXPECT_EQ(Sample(metrics, "rsl_engine_submits_total"), kWorkloads) << metrics;
  EXPECT_EQ(Sample(metrics, "rsl_engine_submit_commits_total"), kWorkloads) << metrics;
  // One step each, launched once; the loop committed at least once for each (its launch
  // and its end may share a turn with other workloads' transitions, never with nothing).
  EXPECT_EQ(Sample(metrics, "rsl_engine_launches_total"), kWorkloads) << metrics;
  double turns = Sample(metrics, "rsl_engine_turn_commits_total");
  EXPECT_GE(turns, kWorkloads) << metrics;
  EXPECT_LE(turns, 8 * kWorkloads) << metrics;
  // The counts come from the store: every workload and step of the history.
  EXPECT_NE(metrics.find("rsl_workloads{phase=\"SUCCEEDED\"} " + std::to_string(kWorkloads)),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("rsl_steps{phase=\"SUCCEEDED\"} " + std::to_string(kWorkloads)),
            std::string::npos)
      << metrics;

  // The oldest workload, long out of every cache, answers from the store.
  const std::string& oldest = ids.front();
  Json obj = GetJson(c.port(), admin, "/api/v1/workloads/" + oldest, &status);
  ASSERT_EQ(status, 200) << obj.dump();
  EXPECT_EQ(obj["status"].value("phase", ""), "SUCCEEDED");
  Json described = GetJson(c.port(), admin, "/api/v1/workloads/" + oldest + "/describe", &status);
  ASSERT_EQ(status, 200) << described.dump();
  EXPECT_EQ(described["status"].value("phase", ""), "SUCCEEDED");
  ASSERT_TRUE(described["spec"].is_object()) << described.dump();
  EXPECT_NE(described["spec"].dump().find("\"true\""), std::string::npos) << described.dump();
  ASSERT_TRUE(described["events"].is_array());
  EXPECT_FALSE(described["events"].empty());
  Json events = GetJson(c.port(), admin, "/api/v1/workloads/" + oldest + "/events", &status);
  ASSERT_EQ(status, 200) << events.dump();
  EXPECT_FALSE(events["items"].empty());
  // The last page of the list (oldest first there) holds it too.
  Json last = GetJson(c.port(), admin, "/api/v1/workloads?namespace=mem&limit=1000", &status);
  ASSERT_EQ(status, 200);
  ASSERT_EQ(last["items"].size(), static_cast<size_t>(kWorkloads));
  EXPECT_EQ(last["items"].back()["metadata"].value("id", ""), oldest);
  // seedctl reads it the same way (status of the oldest).
  CmdResult st = c.Seedctl(admin, {"workload", "status", "--id", oldest, "-o", "json"});
  ASSERT_EQ(st.exit_code, 0) << st.out << st.err;
  EXPECT_NE(st.out.find("SUCCEEDED"), std::string::npos) << st.out;
}

}  // namespace
}  // namespace rsl::apitest
