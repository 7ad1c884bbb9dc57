// rsl-controller end to end: the real daemon on an ephemeral port, a temporary state
// directory, driven only through seedctl and HTTP (label `api`).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "api/http_test_util.h"
#include "base/strings.h"
#include "harness.h"

namespace rsl::apitest {
namespace {

using Json = nlohmann::json;
using api::testing::BodyOf;
using api::testing::RawConn;
using api::testing::RawRequest;
using api::testing::SecondsOf;
using api::testing::StatusOf;
using namespace std::chrono_literals;

// A gauge's value from GET /metrics (-1 when absent).
double Gauge(int port, const std::string& admin, const std::string& name) {
  std::string text = BodyOf(RawRequest(port, "GET", "/metrics", admin));
  size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

// Three steps; `train` reports progress, a metric and writes an output file.
std::string ThreeStepYaml(const std::string& name, const std::string& ns,
                          const std::string& train_extra = "") {
  return "apiVersion: aiengine.volc.com/v1\n"
         "kind: AIWorkload\n"
         "metadata:\n"
         "  name: " +
         name +
         "\n"
         "  namespace: " +
         ns +
         "\n"
         "  labels: {team: risk}\n"
         "spec:\n"
         "  resources: {cpu: \"1\", memory: 256Mi}\n"
         "  pipeline:\n"
         "    - name: ingest\n"
         "      command: [\"sh\", \"-c\", \"echo ingest-ran; echo rows > $RSL_OUTPUT/rows.txt\"]\n"
         "    - name: train\n"
         "      command: [\"sh\", \"-c\", \"" +
         train_extra +
         "echo 1/2 > $RSL_PROGRESS_FILE; echo epoch-1; echo 2/2 > $RSL_PROGRESS_FILE; "
         "echo '{\\\"auc\\\": 0.95}' > $RSL_METRICS_FILE; echo model > $RSL_OUTPUT/model.bin\"]\n"
         "      dependsOn: [ingest]\n"
         "    - name: validate\n"
         "      command: [\"sh\", \"-c\", \"echo validated\"]\n"
         "      dependsOn: [train]\n"
         "      when: \"output.train.metrics.auc > 0.92\"\n";
}

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.Start()) << c_.Log();
    admin_ = c_.CreateToken("*", "admin", "ada");
    editor_ = c_.CreateToken("risk", "editor", "eddie");
    viewer_ = c_.CreateToken("risk", "viewer", "vera");
    ads_editor_ = c_.CreateToken("ads", "editor", "adam");
    ASSERT_EQ(editor_.rfind("rsl_", 0), 0u) << editor_;
  }

  std::string SubmitFile(const std::string& token, const std::string& file,
                         const std::string& yaml) {
    WriteText(c_.work_dir() + "/" + file, yaml);
    CmdResult r = c_.Seedctl(token, {"workload", "submit", "-f", file});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return IdFromSubmit(r.out);
  }

  // Three workloads whose first step waits for a gate file, the controller killed (-9) while
  // all three run, started again: each ends SUCCEEDED with both steps' output.
  void KillMidRunAndRecover();

  Controller c_;
  std::string admin_, editor_, viewer_, ads_editor_;
};

TEST_F(ControllerTest, SeedCommandsWorkAsWritten) {
  WriteText(c_.work_dir() + "/fraud-detect-workload.yaml",
            ThreeStepYaml("fraud-detect-daily", "risk"));
  CmdResult submit =
      c_.Seedctl(editor_, {"workload", "submit", "-f", "fraud-detect-workload.yaml"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  std::string id = IdFromSubmit(submit.out);
  ASSERT_FALSE(id.empty()) << submit.out;
  EXPECT_TRUE(std::regex_match(
      submit.out, std::regex("Workload submitted successfully!\nID: wl-[0-9]{8}-[0-9a-f]{8}\n"
                             "Status: PENDING\nLogs: seedctl workload logs --id " +
                             id + "\n")))
      << submit.out;
  ASSERT_EQ(c_.WaitPhase(editor_, id), "SUCCEEDED") << c_.Log();

  CmdResult status = c_.Seedctl(editor_, {"workload", "status", "--id", id});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("STATUS: SUCCEEDED\n"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("STEP: validate (3/3)\n"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("MEMORY_USED: "), std::string::npos);
  EXPECT_NE(status.out.find("/256Mi"), std::string::npos) << status.out;

  CmdResult logs = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "train"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "epoch-1\n");

  CmdResult events = c_.Seedctl(editor_, {"workload", "events", "--id", id});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  size_t started = events.out.find("Started");
  size_t succeeded = events.out.rfind("Succeeded");
  EXPECT_NE(started, std::string::npos) << events.out;
  EXPECT_NE(succeeded, std::string::npos) << events.out;
  EXPECT_LT(started, succeeded);
  EXPECT_EQ(events.out.rfind("TIME", 0), 0u);

  CmdResult describe = c_.Seedctl(editor_, {"workload", "describe", "--id", id});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("Name:         fraud-detect-daily\n"), std::string::npos)
      << describe.out;
  EXPECT_NE(describe.out.find("Digest:       sha256:"), std::string::npos);
  EXPECT_NE(describe.out.find("Spec:\n"), std::string::npos);
  EXPECT_NE(describe.out.find("when: output.train.metrics.auc > 0.92"), std::string::npos)
      << describe.out;
  // The run's cost from the attempts' cost records, priced by the state directory's table.
  EXPECT_TRUE(std::regex_search(
      describe.out,
      std::regex("\nCost: +[0-9.]+ USD \\(GPU [0-9.]+ USD, CPU [0-9.]+ USD, memory [0-9.]+ USD; "
                 "3 attempts\\)\n")))
      << describe.out;
  CmdResult described = c_.Seedctl(editor_, {"workload", "describe", "--id", id, "-o", "json"});
  ASSERT_EQ(described.exit_code, 0) << described.err;
  Json cost = Json::parse(described.out)["status"]["cost"];
  ASSERT_TRUE(cost.is_object()) << described.out;
  EXPECT_EQ(cost["currency"], "USD");
  EXPECT_GT(cost["total"].get<double>(), 0);
  ASSERT_EQ(cost["steps"].size(), 3u) << cost.dump();
  double by_step = 0;
  for (const auto& st : cost["steps"]) by_step += st["total"].get<double>();
  EXPECT_NEAR(by_step, cost["total"].get<double>(), 1e-12);
  EXPECT_NEAR(cost["gpuCost"].get<double>() + cost["cpuCost"].get<double>() +
                  cost["memoryCost"].get<double>(),
              cost["total"].get<double>(), 1e-12);
  // CPU-PEAK: each step's peak against its CPU limit of 1 core.
  EXPECT_TRUE(std::regex_search(describe.out, std::regex("CPU-TIME +CPU-PEAK +MAX-MEMORY")))
      << describe.out;

  CmdResult lineage = c_.Seedctl(editor_, {"workload", "lineage", "--id", id});
  ASSERT_EQ(lineage.exit_code, 0) << lineage.err;
  EXPECT_NE(lineage.out.find("→ ingest → train → validate"), std::string::npos) << lineage.out;
  CmdResult ol = c_.Seedctl(editor_, {"workload", "lineage", "--id", id, "-o", "openlineage"});
  ASSERT_EQ(ol.exit_code, 0) << ol.err;
  Json ev = Json::parse(ol.out);
  EXPECT_EQ(ev["eventType"], "COMPLETE");
  EXPECT_EQ(ev["job"]["name"], "fraud-detect-daily");

  CmdResult rollback = c_.Seedctl(editor_, {"rollback", "--id", id});
  ASSERT_EQ(rollback.exit_code, 0) << rollback.err;
  std::string rid = IdFromSubmit(rollback.out);
  ASSERT_FALSE(rid.empty()) << rollback.out;
  EXPECT_NE(rid, id);

  CmdResult cluster = c_.Seedctl(admin_, {"cluster", "status"});
  ASSERT_EQ(cluster.exit_code, 0) << cluster.err;
  EXPECT_EQ(cluster.out.rfind("RSL Controller: Running (v", 0), 0u) << cluster.out;
  EXPECT_NE(cluster.out.find("CPU Nodes: "), std::string::npos);

  CmdResult nodes = c_.Seedctl(admin_, {"node", "list", "--capability", "low_latency"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  CmdResult all_nodes = c_.Seedctl(admin_, {"node", "list"});
  ASSERT_EQ(all_nodes.exit_code, 0) << all_nodes.err;
  EXPECT_EQ(all_nodes.out.rfind("NAME", 0), 0u) << all_nodes.out;
}

TEST_F(ControllerTest, AuthenticationAndNamespaces) {
  CmdResult anon = c_.Seedctl("", {"workload", "list"});
  EXPECT_EQ(anon.exit_code, 1);
  EXPECT_EQ(anon.LastErrLine(), "UNAUTHENTICATED");
  CmdResult forged = c_.Seedctl("rsl_0000", {"workload", "list"});
  EXPECT_EQ(forged.LastErrLine(), "UNAUTHENTICATED");

  WriteText(c_.work_dir() + "/w.yaml", ThreeStepYaml("w", "risk"));
  CmdResult viewer_submit = c_.Seedctl(viewer_, {"workload", "submit", "-f", "w.yaml"});
  EXPECT_EQ(viewer_submit.exit_code, 1);
  EXPECT_EQ(viewer_submit.LastErrLine(), "FORBIDDEN");

  std::string ads_id = SubmitFile(ads_editor_, "ads.yaml", ThreeStepYaml("ads-job", "ads"));
  ASSERT_FALSE(ads_id.empty());
  CmdResult other = c_.Seedctl(editor_, {"workload", "status", "--id", ads_id});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(other.LastErrLine(), "NOT_FOUND");
  CmdResult other_logs =
      c_.Seedctl(viewer_, {"workload", "logs", "--id", ads_id, "--step", "train"});
  EXPECT_EQ(other_logs.LastErrLine(), "NOT_FOUND");
  CmdResult other_cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", ads_id});
  EXPECT_EQ(other_cancel.LastErrLine(), "NOT_FOUND");
  CmdResult list_other = c_.Seedctl(editor_, {"workload", "list", "-n", "ads"});
  EXPECT_EQ(list_other.LastErrLine(), "FORBIDDEN");
  CmdResult into_other = c_.Seedctl(editor_, {"workload", "submit", "-f", "ads.yaml"});
  EXPECT_EQ(into_other.LastErrLine(), "FORBIDDEN");
  CmdResult nodes = c_.Seedctl(editor_, {"node", "list"});
  EXPECT_EQ(nodes.LastErrLine(), "FORBIDDEN");

  CmdResult admin = c_.Seedctl(admin_, {"workload", "status", "--id", ads_id});
  EXPECT_EQ(admin.exit_code, 0) << admin.err;
  CmdResult all = c_.Seedctl(admin_, {"workload", "list", "-A"});
  EXPECT_NE(all.out.find(ads_id), std::string::npos) << all.out;
  CmdResult mine = c_.Seedctl(editor_, {"workload", "list", "-A"});
  EXPECT_EQ(mine.out.find(ads_id), std::string::npos) << mine.out;
}

// `workload list --limit N` prints a page and says how to get the next (--continue), as
// Kubernetes' list chunking; the pages together are the whole list, each item once.
TEST_F(ControllerTest, ListPagesWithLimitAndContinue) {
  std::set<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.insert(SubmitFile(editor_, "p" + std::to_string(i) + ".yaml",
                          ThreeStepYaml("page-" + std::to_string(i), "risk")));
  }
  auto rows = [](const std::string& out) {
    std::set<std::string> seen;
    for (const auto& line : Split(out, '\n')) {
      if (line.rfind("wl-", 0) == 0) seen.insert(line.substr(0, line.find(' ')));
    }
    return seen;
  };
  CmdResult first = c_.Seedctl(editor_, {"workload", "list", "--limit", "2"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(rows(first.out).size(), 2u) << first.out;
  const std::string hint = "more workloads follow: add --continue ";
  size_t at = first.err.find(hint);
  ASSERT_NE(at, std::string::npos) << first.err;
  std::string token(Trim(first.err.substr(at + hint.size())));
  CmdResult second = c_.Seedctl(editor_, {"workload", "list", "--limit", "2", "--continue", token});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.err.find(hint), std::string::npos) << second.err;
  std::set<std::string> all = rows(first.out);
  for (const auto& id : rows(second.out)) EXPECT_TRUE(all.insert(id).second) << id << " twice";
  EXPECT_EQ(all, ids);
  CmdResult bad = c_.Seedctl(editor_, {"workload", "list", "--limit", "0"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;  // a usage error
}

TEST_F(ControllerTest, SecretsNeverAppearInAnyOutputOrLog) {
  const std::string kSecret = "s3cr3t-Value-42";
  CmdResult created = c_.Seedctl(
      editor_, {"secret", "create", "db-creds", "--from-literal", "DB_PASSWORD=" + kSecret});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_EQ(created.out, "secret/db-creds created in namespace risk\n");
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: uses-secret, "
      "namespace: risk}\n"
      "spec:\n  pipeline:\n    - name: leak\n      command: [\"sh\", \"-c\", \"echo "
      "password=$DB_PASSWORD; "
      "echo $DB_PASSWORD >&2\"]\n      envFrom:\n        - secretRef: db-creds\n";
  std::string id = SubmitFile(editor_, "secret.yaml", yaml);
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(editor_, id), "SUCCEEDED") << c_.Log();

  std::vector<CmdResult> outputs = {
      c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "leak"}),
      c_.Seedctl(editor_, {"workload", "logs", "--id", id}),
      c_.Seedctl(editor_, {"workload", "describe", "--id", id}),
      c_.Seedctl(editor_, {"workload", "describe", "--id", id, "-o", "json"}),
      c_.Seedctl(editor_, {"workload", "status", "--id", id, "-o", "yaml"}),
      c_.Seedctl(editor_, {"workload", "events", "--id", id, "-o", "json"}),
      c_.Seedctl(admin_, {"audit"}),
      c_.Seedctl(admin_, {"audit", "-o", "json"}),
  };
  EXPECT_NE(outputs[0].out.find("password=***"), std::string::npos) << outputs[0].out;
  for (const auto& r : outputs) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find(kSecret), std::string::npos) << r.err;
  }
  // Every file the controller wrote (logs, exit records, launch specs) except the database,
  // which has to hold the secret to hand it to steps.
  for (const auto& f : FilesUnder(c_.state_dir())) {
    if (f.find("rsl.db") != std::string::npos) continue;
    EXPECT_EQ(ReadText(f).find(kSecret), std::string::npos) << f;
  }
  EXPECT_EQ(c_.Log().find(kSecret), std::string::npos);
  // `secret list` names the secret and its keys, never a value.
  CmdResult listed = c_.Seedctl(viewer_, {"secret", "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("db-creds  DB_PASSWORD  "), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find(kSecret), std::string::npos) << listed.out;
  CmdResult none = c_.Seedctl(viewer_, {"configmap", "list"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "No ConfigMapList items in namespace risk.\n");
}

// `status --watch` ends as the workload does (exit 1 and the code unless it SUCCEEDED);
// `list` counts a skipped step apart from the succeeded ones; a rejected workload's steps are
// REJECTED, not CANCELLED; describe's spec reads like the YAML (spec.pipeline).
TEST_F(ControllerTest, WatchExitsWithTheOutcomeAndStepsAreCountedAsTheyEnded) {
  // Submits `name` with these pipeline lines and follows it with `status --watch`.
  auto submit_and_watch = [&](const std::string& name, const std::string& pipeline) {
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: " + name +
        ", namespace: risk}\nspec:\n  pipeline:\n" + pipeline;
    std::string id = SubmitFile(editor_, name + ".yaml", yaml);
    return std::make_pair(id, c_.Seedctl(editor_, {"workload", "status", "--id", id, "--watch",
                                                   "--interval-ms", "100"}));
  };
  auto [ok_id, watched] = submit_and_watch(
      "gate",
      "    - name: a\n      command: [sh, -c, 'echo {\\\"auc\\\": 0.5} > $RSL_METRICS_FILE']\n"
      "    - name: b\n      command: ['true']\n      dependsOn: [a]\n"
      "      when: 'output.a.metrics.auc > 0.92'\n");
  EXPECT_EQ(watched.exit_code, 0) << watched.out << watched.err;
  EXPECT_NE(watched.out.find("SKIPPED"), std::string::npos) << watched.out;
  CmdResult listed = c_.Seedctl(editor_, {"workload", "list"});
  EXPECT_NE(listed.out.find("SUCCEEDED  1/2 (1 skipped)"), std::string::npos) << listed.out;

  auto [failed_id, failed] =
      submit_and_watch("fails", "    - {name: bad, command: [sh, -c, 'exit 3']}\n");
  EXPECT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_EQ(failed.LastErrLine(), "STEP_FAILED") << failed.err;
  EXPECT_NE(failed.out.find("STATUS: FAILED"), std::string::npos) << failed.out;

  auto [rejected_id, rejected] =
      submit_and_watch("big", "    - {name: huge, command: ['true'], resources: {cpu: 4096}}\n");
  EXPECT_EQ(rejected.exit_code, 1) << rejected.out << rejected.err;
  EXPECT_EQ(rejected.LastErrLine(), "INSUFFICIENT_RESOURCES") << rejected.err;
  EXPECT_NE(rejected.out.find("huge  REJECTED"), std::string::npos) << rejected.out;
  EXPECT_EQ(rejected.out.find("CANCELLED"), std::string::npos) << rejected.out;
  CmdResult described =
      c_.Seedctl(editor_, {"workload", "describe", "--id", rejected_id, "-o", "json"});
  Json d = Json::parse(described.out, nullptr, false);
  ASSERT_TRUE(d.is_object()) << described.out;
  EXPECT_EQ(d["spec"]["pipeline"]["steps"][0].value("name", ""), "huge") << d["spec"].dump();
  EXPECT_EQ(d["status"]["steps"][0].value("phase", ""), "REJECTED");
}

// A step that prints nothing has no log file (the supervisor creates it at the first byte):
// its log is empty, not an error, alone, among the others, and followed.
TEST_F(ControllerTest, AStepThatPrintsNothingHasAnEmptyLog) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
      "metadata: {name: quiet, namespace: risk}\n"
      "spec:\n  pipeline:\n    - name: silent\n      command: [\"true\"]\n"
      "    - name: loud\n      command: [\"sh\", \"-c\", \"echo loud-ran\"]\n"
      "      dependsOn: [silent]\n";
  std::string id = SubmitFile(editor_, "quiet.yaml", yaml);
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(editor_, id), "SUCCEEDED") << c_.Log();
  CmdResult silent = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "silent"});
  EXPECT_EQ(silent.exit_code, 0) << silent.err;
  EXPECT_EQ(silent.out, "");
  CmdResult followed =
      c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "silent", "-f"});
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_EQ(followed.out, "");
  CmdResult all = c_.Seedctl(editor_, {"workload", "logs", "--id", id});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("loud-ran\n"), std::string::npos) << all.out;
  // Followed, the silent step still has its header.
  CmdResult all_followed = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "-f"});
  EXPECT_EQ(all_followed.exit_code, 0) << all_followed.err;
  EXPECT_EQ(all_followed.out, "==> silent <==\n==> loud <==\nloud-ran\n");
}

TEST_F(ControllerTest, IdenticalSpecsAreTwoVersionsAndRollbackRerunsTheSnapshot) {
  std::string v1 = SubmitFile(editor_, "a.yaml", ThreeStepYaml("model-x", "risk"));
  std::string v1b = SubmitFile(editor_, "a.yaml", ThreeStepYaml("model-x", "risk"));
  std::string v2 = SubmitFile(editor_, "b.yaml", ThreeStepYaml("model-x", "risk", "echo v2; "));
  ASSERT_FALSE(v1.empty() || v1b.empty() || v2.empty());
  EXPECT_NE(v1, v1b);
  ASSERT_EQ(c_.WaitPhase(editor_, v2), "SUCCEEDED");

  CmdResult rb = c_.Seedctl(editor_, {"rollback", "--id", v1, "-o", "json"});
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  Json rolled = Json::parse(rb.out);
  std::string v3 = rolled["metadata"]["id"];
  EXPECT_EQ(rolled["metadata"]["rollbackOf"], v1);
  ASSERT_EQ(c_.WaitPhase(editor_, v3), "SUCCEEDED");

  CmdResult hist = c_.Seedctl(editor_, {"workload", "history", "--name", "model-x", "-o", "json"});
  ASSERT_EQ(hist.exit_code, 0) << hist.err;
  std::map<std::string, std::string> digest;
  std::map<std::string, int64_t> version;
  const Json history = Json::parse(hist.out);
  for (const auto& item : history["items"]) {
    digest[item["metadata"]["id"]] = item["metadata"]["digest"];
    version[item["metadata"]["id"]] = item["metadata"]["version"];
  }
  ASSERT_EQ(digest.size(), 4u) << hist.out;
  EXPECT_EQ(digest[v1], digest[v1b]);
  EXPECT_NE(digest[v1], digest[v2]);
  EXPECT_EQ(digest[v3], digest[v1]);
  EXPECT_EQ(version[v3], 4);
  CmdResult table = c_.Seedctl(editor_, {"workload", "history", "--name", "model-x"});
  EXPECT_EQ(table.out.rfind("VERSION  ID", 0), 0u) << table.out;

  // v3 runs v1's steps: no "v2" in its train log.
  CmdResult logs = c_.Seedctl(editor_, {"workload", "logs", "--id", v3, "--step", "train"});
  EXPECT_EQ(logs.out, "epoch-1\n");
  CmdResult events = c_.Seedctl(editor_, {"workload", "events", "--id", v3});
  EXPECT_NE(events.out.find("RolledBack"), std::string::npos) << events.out;
  CmdResult audit = c_.Seedctl(admin_, {"audit", "--id", v3, "-o", "json"});
  Json entries = Json::parse(audit.out)["items"];
  ASSERT_EQ(entries.size(), 1u) << audit.out;
  EXPECT_EQ(entries[0]["verb"], "rollback");
  EXPECT_EQ(entries[0]["subject"], "eddie");
  EXPECT_EQ(entries[0]["message"], "rolled back from " + v1);
}

TEST_F(ControllerTest, FollowWatchAndCancel) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: ticks, namespace: "
      "risk}\n"
      "spec:\n  pipeline:\n    - name: a\n      command: [\"sh\", \"-c\", \"for i in 1 2 3; do "
      "echo $i/3 > "
      "$RSL_PROGRESS_FILE; echo tick $i; sleep 0.3; done\"]\n"
      "    - name: b\n      command: [\"sh\", \"-c\", \"echo b-done\"]\n      dependsOn: [a]\n";
  std::string id = SubmitFile(editor_, "ticks.yaml", yaml);
  ASSERT_FALSE(id.empty());
  CmdResult follow = c_.Seedctl(viewer_, {"workload", "logs", "--id", id, "-f"});
  ASSERT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_EQ(follow.out, "==> a <==\ntick 1\ntick 2\ntick 3\n==> b <==\nb-done\n");
  // -f reads the workload's event stream, not the logs route.
  std::string metrics = BodyOf(RawRequest(c_.port(), "GET", "/metrics", admin_));
  EXPECT_NE(metrics.find("rsl_api_requests_total{route=\"/api/v1/workloads/{id}/watch\""),
            std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("rsl_api_requests_total{route=\"/api/v1/workloads/{id}/logs\""),
            std::string::npos)
      << metrics;
  CmdResult watch =
      c_.Seedctl(viewer_, {"workload", "status", "--id", id, "--watch", "--interval-ms", "200"});
  ASSERT_EQ(watch.exit_code, 0) << watch.err;
  EXPECT_TRUE(
      std::regex_search(watch.out, std::regex("[0-9-]+ [0-9:]+ SUCCEEDED step b \\(2/2\\)\n")))
      << watch.out;
  EXPECT_NE(watch.out.find("\nSTATUS: SUCCEEDED\n"), std::string::npos);

  std::string sleeper =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: sleeper, namespace: "
      "risk}\n"
      "spec:\n  pipeline:\n    - name: s\n      command: [\"sleep\", \"30\"]\n";
  std::string sid = SubmitFile(editor_, "sleeper.yaml", sleeper);
  ASSERT_FALSE(sid.empty());
  CmdResult viewer_cancel = c_.Seedctl(viewer_, {"workload", "cancel", "--id", sid});
  EXPECT_EQ(viewer_cancel.LastErrLine(), "FORBIDDEN");
  CmdResult cancel = c_.Seedctl(editor_, {"workload", "cancel", "--id", sid});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, "workload " + sid + " cancelled (status CANCELLED)\n");
  CmdResult again = c_.Seedctl(editor_, {"workload", "cancel", "--id", sid});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.LastErrLine(), "CONFLICT");
}

// GET /api/v1/nodes says which step runs on which node while it runs, and nothing after.
TEST_F(ControllerTest, TheNodesListShowsWhatRunsWhere) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: napper, namespace: "
      "risk}\nspec:\n  pipeline:\n    - name: nap\n      command: [\"sleep\", \"30\"]\n";
  std::string id = SubmitFile(editor_, "napper.yaml", yaml);
  ASSERT_FALSE(id.empty());
  auto running_on = [&]() {
    std::map<std::string, Json> where;  // node -> its running attempts
    Json nodes = Json::parse(BodyOf(RawRequest(c_.port(), "GET", "/api/v1/nodes", admin_)));
    for (const auto& n : nodes["items"]) {
      for (const auto& a : n["status"]["running"]) {
        where[n["metadata"]["name"].get<std::string>()].push_back(a);
      }
    }
    return where;
  };
  std::map<std::string, Json> where;
  for (int i = 0; i < 150 && where.empty(); ++i) {
    where = running_on();
    if (where.empty()) std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(where.size(), 1u) << c_.Log();
  const Json& a = where.begin()->second[0];
  EXPECT_EQ(a["workloadId"], id);
  EXPECT_EQ(a["workload"], "napper");
  EXPECT_EQ(a["namespace"], "risk");
  EXPECT_EQ(a["step"], "nap");
  EXPECT_EQ(a["attempt"], 1);
  EXPECT_EQ(a["phase"], "RUNNING");
  // The node is the one the step's status names.
  CmdResult st = c_.Seedctl(editor_, {"workload", "status", "--id", id, "-o", "json"});
  EXPECT_EQ(Json::parse(st.out)["status"]["steps"][0]["node"], where.begin()->first) << st.out;
  ASSERT_EQ(c_.Seedctl(editor_, {"workload", "cancel", "--id", id}).exit_code, 0);
  ASSERT_EQ(c_.WaitPhase(editor_, id), "CANCELLED");
  EXPECT_TRUE(running_on().empty());
}

TEST_F(ControllerTest, Kill9MidRunLosesNothingAcknowledged) { KillMidRunAndRecover(); }

// The same with --transition-log: the engine's turns are acknowledged once in the log, and
// the restarted controller applies what SQLite lacked. Meanwhile the controller owns the
// store: a `seedctl run` on its state directory is refused, not run beside it.
TEST_F(ControllerTest, Kill9WithTheTransitionLogLosesNothingAcknowledged) {
  ASSERT_EQ(c_.Terminate(), 0) << c_.Log();
  c_.UseArgs({"--transition-log"});
  ASSERT_TRUE(c_.Start()) << c_.Log();
  WriteText(c_.work_dir() + "/local.yaml", ThreeStepYaml("local", "risk"));
  CmdResult local = RunCmd(
      {SeedctlPath(), "run", "-f", "local.yaml", "--state-dir", c_.state_dir(), "--no-hooks"}, {},
      c_.work_dir());
  EXPECT_NE(local.exit_code, 0) << local.out;
  EXPECT_NE(local.err.find("CONFLICT"), std::string::npos) << local.err;
  KillMidRunAndRecover();
  EXPECT_TRUE(std::filesystem::exists(c_.state_dir() + "/translog")) << "the log was not used";
}

void ControllerTest::KillMidRunAndRecover() {
  // The first step of each workload waits for a gate file, so the kill surely lands while
  // all three run (a fixed sleep ended before a status call under ASan saw RUNNING, and the
  // kill then came after the end).
  std::string gate = c_.root() + "/gate";
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: slow, namespace: "
      "risk}\n"
      "spec:\n  pipeline:\n    - name: first\n      command: [\"sh\", \"-c\", \"i=0; while [ ! "
      "-e " +
      gate +
      " ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo first-done\"]\n"
      "    - name: second\n      command: [\"sh\", \"-c\", \"echo second-done\"]\n      dependsOn: "
      "[first]\n";
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(SubmitFile(editor_, "slow.yaml", yaml));
  for (const auto& id : ids) ASSERT_FALSE(id.empty());
  // Wait until every first step runs, then crash the controller.
  for (const auto& id : ids) {
    std::string phase;
    for (int i = 0; i < 300 && phase != "RUNNING"; ++i) {
      CmdResult s = c_.Seedctl(editor_, {"workload", "status", "--id", id, "-o", "json"});
      phase = Json::parse(s.out, nullptr, false).value("status", Json::object()).value("phase", "");
      if (phase != "RUNNING") std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_EQ(phase, "RUNNING") << id << "\n" << c_.Log();
  }
  c_.Kill9();
  WriteText(gate, "");
  ASSERT_TRUE(c_.Start()) << c_.Log();
  for (const auto& id : ids) {
    EXPECT_EQ(c_.WaitPhase(editor_, id, 60000), "SUCCEEDED") << id << "\n" << c_.Log();
    CmdResult logs = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "first"});
    EXPECT_EQ(logs.out, "first-done\n");
    logs = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "second"});
    EXPECT_EQ(logs.out, "second-done\n");
  }
  CmdResult list = c_.Seedctl(editor_, {"workload", "list", "-o", "json"});
  EXPECT_EQ(Json::parse(list.out)["items"].size(), 3u);
}

TEST_F(ControllerTest, MetricsSigtermAndValidationErrors) {
  WriteText(c_.work_dir() + "/bad.yaml",
            "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {nmae: x}\nspec: "
            "{pipeline: []}\n");
  CmdResult bad = c_.Seedctl(editor_, {"workload", "submit", "-f", "bad.yaml"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad.yaml:3:"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.LastErrLine(), "SPEC_INVALID");

  std::string id = SubmitFile(editor_, "m.yaml", ThreeStepYaml("metrics", "risk"));
  ASSERT_EQ(c_.WaitPhase(editor_, id), "SUCCEEDED");
  CmdResult forbidden = RunCmd(
      {"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", c_.server() + "/metrics"},
      {});
  EXPECT_EQ(forbidden.out, "401");
  CmdResult metrics = RunCmd(
      {"/usr/bin/curl", "-s", "-H", "Authorization: Bearer " + admin_, c_.server() + "/metrics"},
      {});
  EXPECT_NE(metrics.out.find("rsl_reconcile_duration_seconds_bucket{kind=\"AIWorkload\",phase="
                             "\"submit\",result=\"success\""),
            std::string::npos)
      << metrics.out;
  EXPECT_NE(metrics.out.find("phase=\"step\",result=\"succeeded\""), std::string::npos);
  EXPECT_NE(metrics.out.find("rsl_workloads{phase=\"SUCCEEDED\"} 1"), std::string::npos);
  EXPECT_NE(metrics.out.find("rsl_steps{phase=\"SUCCEEDED\"} 3"), std::string::npos);
  EXPECT_NE(metrics.out.find("rsl_api_requests_total{route=\"/api/v1/workloads\",code=\"201\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.out.find("rsl_step_queue_seconds_count 3"), std::string::npos);
  CmdResult ds = RunCmd({"/usr/bin/curl", "-s", "-H", "Authorization: Bearer " + admin_,
                         c_.server() + "/api/v1/datasources"},
                        {});
  EXPECT_EQ(Json::parse(ds.out, nullptr, false).value("kind", ""), "DatasourceList") << ds.out;
  CmdResult ds_editor = RunCmd({"/usr/bin/curl", "-s", "-H", "Authorization: Bearer " + editor_,
                                c_.server() + "/api/v1/datasources"},
                               {});
  EXPECT_EQ(Json::parse(ds_editor.out, nullptr, false).value("code", ""), "FORBIDDEN")
      << ds_editor.out;
  EXPECT_EQ(c_.Terminate(), 0) << c_.Log();
  EXPECT_NE(c_.Log().find("shutting down"), std::string::npos);
}

TEST_F(ControllerTest, AnOversizedSubmitShowsTheLimit) {
  std::string yaml = ThreeStepYaml("huge", "risk") + "# " + std::string(5 << 20, 'x') + "\n";
  WriteText(c_.work_dir() + "/huge.yaml", yaml);
  CmdResult r = c_.Seedctl(editor_, {"workload", "submit", "-f", "huge.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("request body of " + std::to_string(yaml.size()) +
                       " bytes is over the limit of 4 MiB"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.LastErrLine(), "INVALID_ARGUMENT");
}

TEST_F(ControllerTest, ASecondControllerOnTheSamePortFails) {
  Controller second;
  second.UsePort(c_.port());
  ASSERT_FALSE(second.Start()) << second.Log();
  EXPECT_EQ(second.exit_status(), 1) << second.Log();
  std::string address = "127.0.0.1:" + std::to_string(c_.port());
  EXPECT_NE(second.Log().find("CONFLICT: address " + address +
                              " is already in use (another "
                              "rsl-controller (or another program) listens there"),
            std::string::npos)
      << second.Log();
  // The first one still answers every request, always from its own database.
  for (int i = 0; i < 20; ++i) {
    CmdResult who = c_.Seedctl(viewer_, {"workload", "list"});
    ASSERT_EQ(who.exit_code, 0) << who.err;
  }
}

// The log's format (headers, attempts, a missing last newline, masking) through the streamed
// path, and a 30 MiB log served whole, alone and after another step.
TEST_F(ControllerTest, LogsKeepTheirFormatAndALargeLogIsServedWhole) {
  const std::string kSecret = "pa55-Word-for-logs";
  ASSERT_EQ(
      c_.Seedctl(editor_, {"secret", "create", "db", "--from-literal", "DB_PASSWORD=" + kSecret})
          .exit_code,
      0);
  const int kBigBytes = 30 << 20;
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: logs, namespace: "
      "risk}\n"
      "spec:\n  pipeline:\n"
      "    - name: flaky\n      command: [\"sh\", \"-c\", \"echo try $RSL_ATTEMPT $DB_PASSWORD; "
      "printf no-newline; [ $RSL_ATTEMPT -ge 2 ]\"]\n"
      "      retryPolicy: {maxRetries: 1}\n      envFrom:\n        - secretRef: db\n"
      "    - name: big\n      command: [\"sh\", \"-c\", \"yes 0123456789abcdefghijklmnopqrstuvwxyz "
      "| "
      "head -c " +
      std::to_string(kBigBytes) +
      "; echo; echo end=$DB_PASSWORD\"]\n"
      "      dependsOn: [flaky]\n      envFrom:\n        - secretRef: db\n";
  std::string id = SubmitFile(editor_, "logs.yaml", yaml);
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(editor_, id, 120000), "SUCCEEDED") << c_.Log();

  std::string flaky = "try 1 ***\nno-newline--- attempt 2 ---\ntry 2 ***\nno-newline";
  std::string big;
  big.reserve(kBigBytes + 64);
  while (big.size() < static_cast<size_t>(kBigBytes))
    big += "0123456789abcdefghijklmnopqrstuvwxyz\n";
  big.resize(kBigBytes);
  big += "\nend=***\n";

  CmdResult one = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "flaky"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, flaky);
  CmdResult followed =
      c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "flaky", "-f"});
  EXPECT_EQ(followed.out, flaky);
  CmdResult whole = c_.Seedctl(editor_, {"workload", "logs", "--id", id, "--step", "big"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(whole.out.size(), big.size());
  EXPECT_TRUE(whole.out == big);
  CmdResult all = c_.Seedctl(editor_, {"workload", "logs", "--id", id});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::string expected = "==> flaky <==\n" + flaky + "\n==> big <==\n" + big;
  EXPECT_EQ(all.out.size(), expected.size());
  EXPECT_TRUE(all.out == expected);
  EXPECT_EQ(all.out.find(kSecret), std::string::npos);
}

// 100 followers of a running step and 50 slow sockets (25 half-sent requests, 25 trickling a
// byte every 100 ms) against the real controller: /healthz, the workload's status and its
// cancel each answer within a second; the followers end with the step; every socket the
// controller opened for them is closed afterwards.
TEST_F(ControllerTest, FollowersAndSlowClientsDoNotStallTheController) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: long, namespace: "
      "risk}\n"
      "spec:\n  pipeline:\n    - name: s\n      command: [\"sh\", \"-c\", \"echo started; exec "
      "sleep 120\"]\n";
  std::string id = SubmitFile(editor_, "long.yaml", yaml);
  ASSERT_FALSE(id.empty());
  std::string status_path = "/api/v1/workloads/" + id;
  for (int i = 0; i < 300; ++i) {
    auto j =
        Json::parse(BodyOf(RawRequest(c_.port(), "GET", status_path, viewer_)), nullptr, false);
    if (j.is_object() && j["status"].value("phase", "") == "RUNNING") break;
    std::this_thread::sleep_for(100ms);
  }
  std::vector<std::unique_ptr<RawConn>> followers, slow;
  for (int i = 0; i < 100; ++i) {
    followers.push_back(std::make_unique<RawConn>(c_.port()));
    ASSERT_TRUE(followers.back()->Send("GET " + status_path +
                                       "/logs?follow=true HTTP/1.1\r\n"
                                       "Authorization: Bearer " +
                                       viewer_ + "\r\n\r\n"));
  }
  for (auto& f : followers) {
    EXPECT_NE(f->ReadUntil("started\n", 30s).find("started\n"), std::string::npos) << f->received();
  }
  for (int i = 0; i < 50; ++i) {
    slow.push_back(std::make_unique<RawConn>(c_.port()));
    ASSERT_TRUE(slow.back()->Send("GET " + status_path + " HTTP/1.1\r\nAuthorization: Bear"));
  }
  std::atomic<bool> trickling{true};
  std::thread trickle([&] {
    while (trickling) {
      for (int i = 0; i < 25; ++i) (void)slow[static_cast<size_t>(i)]->Send("e");
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(500ms);  // let the slow ones settle in

  EXPECT_EQ(Gauge(c_.port(), admin_, "rsl_api_open_streams"), 100);
  std::string health, status, cancel;
  double health_s = SecondsOf([&] { health = RawRequest(c_.port(), "GET", "/healthz"); });
  double status_s = SecondsOf([&] { status = RawRequest(c_.port(), "GET", status_path, viewer_); });
  double cancel_s = SecondsOf(
      [&] { cancel = RawRequest(c_.port(), "POST", status_path + "/cancel", editor_, "{}"); });
  EXPECT_EQ(BodyOf(health), "ok\n") << health;
  EXPECT_EQ(StatusOf(status), 200) << status;
  EXPECT_EQ(StatusOf(cancel), 200) << cancel;
  std::cout << "under 100 followers and 50 slow sockets: healthz " << health_s << " s, status "
            << status_s << " s, cancel " << cancel_s << " s\n";
  EXPECT_LT(health_s, 1.0);
  EXPECT_LT(status_s, 1.0);
  EXPECT_LT(cancel_s, 1.0);
  trickling = false;
  trickle.join();
  // The step ended: every follower's stream ends (the last chunk) on its own.
  for (auto& f : followers) {
    EXPECT_NE(f->ReadUntil("\r\n0\r\n\r\n", 30s).find("\r\n0\r\n\r\n"), std::string::npos)
        << f->received();
  }
  followers.clear();
  slow.clear();
  // Only the scrape's own connection is left.
  double open = -1, streams = -1;
  for (int i = 0; i < 150; ++i) {
    open = Gauge(c_.port(), admin_, "rsl_api_open_connections");
    streams = Gauge(c_.port(), admin_, "rsl_api_open_streams");
    if (open == 1 && streams == 0) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(open, 1);
  EXPECT_EQ(streams, 0);
  EXPECT_EQ(c_.WaitPhase(editor_, id), "CANCELLED");
}

// `events --watch` prints what there is, then each new event from the workload's event stream
// once, in order, and ends with the run; `-o json` prints one event object per line.
TEST_F(ControllerTest, EventsWatchFollowsTheStreamToTheEnd) {
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
      "metadata: {name: watched, namespace: risk}\n"
      "spec:\n  pipeline:\n    - name: first\n      command: [\"sh\", \"-c\", \"sleep 1\"]\n"
      "    - name: second\n      command: [\"true\"]\n      dependsOn: [first]\n";
  std::string id = SubmitFile(editor_, "watched.yaml", yaml);
  ASSERT_FALSE(id.empty());
  CmdResult watched = c_.Seedctl(viewer_, {"workload", "events", "--id", id, "--watch"});
  EXPECT_EQ(watched.exit_code, 0) << watched.out << watched.err;
  EXPECT_EQ(watched.out.rfind("TIME  TYPE  REASON  STEP  MESSAGE\n", 0), 0u) << watched.out;
  size_t first_done = watched.out.find("Succeeded  first");
  size_t second_done = watched.out.find("Succeeded  second");
  EXPECT_NE(first_done, std::string::npos) << watched.out;
  EXPECT_NE(second_done, std::string::npos) << watched.out;
  EXPECT_LT(first_done, second_done) << watched.out;
  EXPECT_EQ(watched.out.find("Succeeded  first", first_done + 1), std::string::npos)
      << "an event printed twice:\n"
      << watched.out;

  CmdResult json = c_.Seedctl(viewer_, {"workload", "events", "--id", id, "--watch", "-o", "json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  int64_t last = 0;
  std::istringstream lines(json.out);
  for (std::string line; std::getline(lines, line);) {
    Json e = Json::parse(line, nullptr, false);
    ASSERT_TRUE(e.is_object()) << line;
    EXPECT_GT(e.value("seq", int64_t{0}), last) << json.out;
    last = e.value("seq", int64_t{0});
  }
  EXPECT_GT(last, 0);
}

}  // namespace
}  // namespace rsl::apitest
