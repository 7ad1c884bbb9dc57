// Golden tests for seedctl's table and text renderings (src/cli/workload_format.h): fixed
// objects in, the exact text out, compared with tests/api/golden/<name>.txt. Regenerate after
// an intended change with RSL_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "cli/workload_format.h"

namespace rsl::cli {
namespace {

constexpr int64_t kT0 = 1781942400000;  // 2026-06-20 08:00:00 UTC

std::string GoldenPath(const std::string& name) {
  return std::string(RSL_SOURCE_DIR) + "/tests/api/golden/" + name + ".txt";
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  if (std::getenv("RSL_UPDATE_GOLDEN")) {
    std::ofstream(GoldenPath(name)) << actual;
    return;
  }
  std::ifstream in(GoldenPath(name));
  ASSERT_TRUE(in) << "missing golden file " << GoldenPath(name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(actual, s.str()) << "golden " << name << " differs";
}

class GoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

Json Step(const std::string& name, int index, const std::string& phase, int64_t start, int64_t end,
          int exit_code, const Json& progress) {
  return {{"name", name},
          {"index", index},
          {"phase", phase},
          {"attempts", exit_code == 1 ? 2 : 1},
          {"node", "local"},
          {"exitCode", exit_code},
          {"signal", 0},
          {"startedAtMs", start},
          {"finishedAtMs", end},
          {"wallMs", end > start ? end - start : 0},
          {"cpuMs", 1500},
          {"peakCpuMillicores", start > 0 ? 12480 : 0},
          {"cpuLimitMillis", name == "preprocess" ? 0 : 16000},
          {"peakMemoryBytes", int64_t{45206069248}},
          {"memoryLimitBytes", int64_t{68719476736}},
          {"message", ""},
          {"progress", progress}};
}

Json Workload() {
  Json steps =
      Json::array({Step("ingest", 0, "SUCCEEDED", kT0 + 1000, kT0 + 61000, 0, nullptr),
                   Step("preprocess", 1, "SUCCEEDED", kT0 + 61000, kT0 + 125500, 0, nullptr),
                   Step("train", 2, "RUNNING", kT0 + 125500, 0, -1,
                        {{"done", 127}, {"total", 200}, {"percent", 63.5}}),
                   Step("validate", 3, "PENDING", 0, 0, -1, nullptr)});
  return {{"apiVersion", "aiengine.volc.com/v1"},
          {"kind", "AIWorkload"},
          {"metadata",
           {{"id", "wl-20260620-7a8b9c0d"},
            {"name", "fraud-detect-daily"},
            {"namespace", "risk"},
            {"labels", {{"team", "risk"}, {"priority", "high"}}},
            {"version", 2},
            {"digest", "sha256:0123456789abcdef0123456789abcdef"},
            {"createdBy", "eddie"},
            {"createdAtMs", kT0}}},
          {"status",
           {{"phase", "RUNNING"},
            {"runId", "run-20260620-7a8b9c0d"},
            {"failureCode", ""},
            {"startedAtMs", kT0 + 1000},
            {"finishedAtMs", 0},
            {"steps", steps},
            {"stepCount", 4},
            {"stepsSucceeded", 2},
            {"currentStep",
             {{"name", "train"},
              {"index", 2},
              {"phase", "RUNNING"},
              {"progress", {{"done", 127}, {"total", 200}, {"percent", 63.5}}},
              {"cpuMs", 178000},
              {"wallMs", 200000},
              {"peakCpuMillicores", 12480},
              {"peakMemoryBytes", int64_t{45206069248}},
              {"memoryLimitBytes", int64_t{68719476736}},
              {"cpuLimitMillis", 16000}}}}}};
}

TEST_F(GoldenTest, Status) { ExpectGolden("status", FormatStatus(Workload(), false)); }
TEST_F(GoldenTest, StatusWide) { ExpectGolden("status_wide", FormatStatus(Workload(), true)); }

TEST_F(GoldenTest, StatusOfAServingStep) {
  Json w = Workload();
  w["status"]["serving"] = {{"step", "serve"},
                            {"endpoint", "http://127.0.0.1:41234"},
                            {"replicas", 3},
                            {"readyReplicas", 2},
                            {"desiredReplicas", 3},
                            {"utilization", 0.64},
                            {"lastScaleTime", "2026-06-20T08:03:00Z"},
                            {"replicaList",
                             {{{"index", 0},
                               {"node", "local"},
                               {"port", 40111},
                               {"state", "Ready"},
                               {"restarts", 0},
                               {"utilization", 0.61}},
                              {{"index", 1},
                               {"node", "local"},
                               {"port", 40127},
                               {"state", "Ready"},
                               {"restarts", 1},
                               {"utilization", 0.67}},
                              {{"index", 2},
                               {"node", "local"},
                               {"port", 40133},
                               {"state", "Starting"},
                               {"restarts", 0},
                               {"utilization", 0.0}}}}};
  ExpectGolden("status_serving", FormatStatus(w, false));
}

TEST_F(GoldenTest, StatusLineAndBars) {
  EXPECT_EQ(FormatStatusLine(Workload()), "RUNNING step train (3/4) 63% (127/200)");
  ExpectGolden("status_bars", FormatStatusBars(Workload()));
}

TEST_F(GoldenTest, Submitted) {
  EXPECT_EQ(FormatSubmitted(Workload(), "Workload submitted successfully!"),
            "Workload submitted successfully!\nID: wl-20260620-7a8b9c0d\nStatus: RUNNING\n"
            "Logs: seedctl workload logs --id wl-20260620-7a8b9c0d\n");
}

TEST_F(GoldenTest, List) {
  Json a = Workload();
  Json b = Workload();
  b["metadata"]["id"] = "wl-20260620-00000001";
  b["metadata"]["name"] = "log-features";
  b["metadata"]["namespace"] = "ads";
  b["metadata"]["version"] = 1;
  b["metadata"]["rollbackOf"] = "wl-20260619-ffffffff";
  b["status"]["phase"] = "SUCCEEDED";
  b["status"]["stepsSucceeded"] = 3;  // and one skipped: not counted as succeeded
  b["status"]["stepsSkipped"] = 1;
  Json list = {{"items", {a, b}}};
  ExpectGolden("list", FormatList(list, false, false, kT0 + 3 * 3600 * 1000));
  ExpectGolden("list_wide_all", FormatList(list, true, true, kT0 + 3 * 86400 * 1000));
  EXPECT_EQ(FormatList({{"items", Json::array()}}, false, false, kT0), "No workloads found.\n");
}

TEST_F(GoldenTest, Events) {
  Json events = {{"items",
                  {{{"timeMs", kT0},
                    {"type", "Normal"},
                    {"reason", "Admitted"},
                    {"step", ""},
                    {"message", "3 admission checks passed"}},
                   {{"timeMs", kT0 + 1000},
                    {"type", "Normal"},
                    {"reason", "Scheduled"},
                    {"step", "ingest"},
                    {"message", "on node local"}},
                   {{"timeMs", kT0 + 61000},
                    {"type", "Warning"},
                    {"reason", "Retrying"},
                    {"step", "train"},
                    {"message", "exit 1; attempt 2 in 30s"}}}}};
  ExpectGolden("events", FormatEvents(events));
}

TEST_F(GoldenTest, Describe) {
  Json d = Workload();
  d["spec"] = {{"pipeline", {{"steps", {{{"name", "ingest"}, {"image", "volc/ingest:v1.0"}}}}}}};
  d["events"] = Json::array({{{"timeMs", kT0},
                              {"type", "Normal"},
                              {"reason", "Admitted"},
                              {"step", ""},
                              {"message", "ok"}}});
  d["status"]["cost"] = {{"currency", "USD"}, {"total", 12.3456},     {"gpuCost", 10.5},
                         {"cpuCost", 1.5},    {"memoryCost", 0.3456}, {"attempts", 3}};
  ExpectGolden("describe", FormatDescribe(d));
}

// A big run as the API pages it: a page of its steps, the counts, the steps that need
// attention beside the page, and the last events of many.
Json BigRun() {
  Json w = Workload();
  Json& st = w["status"];
  st["steps"] = Json::array({Step("s0", 0, "SUCCEEDED", kT0 + 1000, kT0 + 2000, 0, nullptr),
                             Step("s1", 1, "SUCCEEDED", kT0 + 1000, kT0 + 2500, 0, nullptr)});
  st["stepsContinue"] = "step-1";
  st["stepCount"] = 100000;
  st["stepsSucceeded"] = 99000;
  st["stepCounts"] = {{"SUCCEEDED", 99000}, {"FAILED", 60}, {"RUNNING", 2}, {"PENDING", 938}};
  Json active = Json::array();
  for (int i = 0; i < 50; ++i) {
    active.push_back(
        Step("s" + std::to_string(10 + i), 10 + i, "FAILED", kT0 + 1000, kT0 + 1200, 1, nullptr));
  }
  active.push_back(Step("s99000", 99000, "RUNNING", kT0 + 5000, 0, -1, nullptr));
  active.push_back(Step("s99001", 99001, "RUNNING", kT0 + 5000, 0, -1, nullptr));
  st["activeSteps"] = active;
  st["currentStep"]["name"] = "s99000";
  st["currentStep"]["index"] = 99000;
  return w;
}

TEST_F(GoldenTest, StatusOfABigRun) { ExpectGolden("status_big", FormatStatus(BigRun(), false)); }

TEST_F(GoldenTest, DescribeOfABigRun) {
  Json d = BigRun();
  d["spec"] = {{"pipeline", Json::array()}};
  d["events"] = Json::array({{{"timeMs", kT0},
                              {"type", "Normal"},
                              {"reason", "Succeeded"},
                              {"step", "s1"},
                              {"message", "exit 0"}}});
  d["eventCount"] = 300003;
  ExpectGolden("describe_big", FormatDescribe(d));
  // The next page keeps the page size the user chose.
  std::string paged = FormatDescribe(d, 200);
  EXPECT_NE(paged.find("more: seedctl workload describe --id wl-20260620-7a8b9c0d --limit 200 "
                       "--continue step-1;"),
            std::string::npos)
      << paged;
}

TEST_F(GoldenTest, NodesAndCluster) {
  Json nodes = {
      {"items",
       {{{"metadata", {{"name", "gpu-a10-1"}}},
         {"status",
          {{"state", "Ready"},
           {"cpuMillis", 32000},
           {"memoryBytes", int64_t{137438953472}},
           {"usedCpuMillis", 16000},
           {"usedMemoryBytes", int64_t{68719476736}},
           {"usedGpus", 1},
           {"gpus", {{{"model", "A10"}, {"probed", false}}, {{"model", "A10"}, {"probed", false}}}},
           {"capabilities", {"fp16_support", "low_latency", "tensor_core"}}}}},
        {{"metadata", {{"name", "cpu-1"}}},
         {"status",
          {{"state", "Ready"},
           {"cpuMillis", 2500},
           {"memoryBytes", int64_t{8589934592}},
           {"gpus", Json::array()},
           {"capabilities", Json::array()}}}}}}};
  ExpectGolden("nodes", FormatNodes(nodes, false));
  ExpectGolden("nodes_wide", FormatNodes(nodes, true));
  Json cluster = {
      {"controller", {{"state", "Running"}, {"version", "0.1.0"}, {"backend", "local"}}},
      {"dataSources", {{"total", 2}, {"registered", {"hdfs-prod", "ceph-models"}}}},
      {"gpuNodes", {{"total", 10}, {"ready", 10}, {"models", {{"A10", 8}, {"L4", 2}}}}},
      {"cpuNodes", {{"total", 10}, {"ready", 9}}},
      {"workloads", {{"RUNNING", 1}, {"SUCCEEDED", 12}}}};
  ExpectGolden("cluster_status", FormatClusterStatus(cluster));
}

TEST_F(GoldenTest, AuditAndHistory) {
  Json audit = {{"items",
                 {{{"timeMs", kT0},
                   {"subject", "eddie"},
                   {"verb", "submit"},
                   {"resource", "workloads"},
                   {"namespace", "risk"},
                   {"objectId", "wl-20260620-7a8b9c0d"},
                   {"result", "OK"},
                   {"message", "fraud-detect-daily"}},
                  {{"timeMs", kT0 + 5000},
                   {"subject", "vera"},
                   {"verb", "submit"},
                   {"resource", "workloads"},
                   {"namespace", "risk"},
                   {"objectId", ""},
                   {"result", "FORBIDDEN"},
                   {"message", ""}}}}};
  ExpectGolden("audit", FormatAudit(audit));
  Json v2 = Workload();
  Json v1 = Workload();
  v1["metadata"]["id"] = "wl-20260619-00000001";
  v1["metadata"]["version"] = 1;
  v1["metadata"]["createdAtMs"] = kT0 - 86400000;
  v1["status"]["phase"] = "SUCCEEDED";
  ExpectGolden("history", FormatHistory({{"items", {v2, v1}}}));
}

TEST_F(GoldenTest, Helpers) {
  EXPECT_EQ(BinaryBytes(45206069248), "42.1Gi");
  EXPECT_EQ(BinaryBytes(68719476736), "64Gi");
  EXPECT_EQ(BinaryBytes(0), "0");
  EXPECT_EQ(Duration(1500), "1.5s");
  EXPECT_EQ(Duration(125000), "2m5s");
  EXPECT_EQ(Age(kT0, kT0 + 90 * 1000), "90s");
  EXPECT_EQ(Age(kT0, kT0 + 3 * 86400 * 1000), "3d");
  EXPECT_EQ(ProgressBar(50, 10), "[#####-----]");
  EXPECT_EQ(LocalTime(kT0), "2026-06-20 08:00:00");
  EXPECT_EQ(JsonToYaml(Json{{"a", 1}, {"b", {"x", "y"}}}), "a: 1\nb:\n  - x\n  - y\n");
}

}  // namespace
}  // namespace rsl::cli
