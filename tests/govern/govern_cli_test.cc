// Runs the real seedctl on the fixtures and checks exit codes (0 clean, 1 error, 2 warnings
// with --strict, 3 error findings) and what it prints.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "base/strings.h"
#include "govern/cost.h"

namespace rsl::govern {
namespace {

using nlohmann::json;

const std::string kSeedctl = std::string(RSL_BINARY_DIR) + "/bin/seedctl";
const std::string kData = std::string(RSL_SOURCE_DIR) + "/tests/govern/testdata/";

struct CliRun {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

CliRun Seedctl(const std::string& args) {
  std::string err_file = "/tmp/rsl-govern-cli-err-" + std::to_string(getpid());
  std::string cmd = kSeedctl + " " + args + " 2>" + err_file;
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto err = ReadFile(err_file);
  if (err.ok()) r.err = *err;
  RemoveAll(err_file);
  return r;
}

std::string LastLine(const std::string& s) {
  auto lines = Split(std::string(Trim(s)), '\n');
  return lines.empty() ? "" : lines.back();
}

std::vector<std::string> Ids(const std::string& json_out) {
  json j = json::parse(json_out, nullptr, false);
  std::vector<std::string> ids;
  if (!j.is_object()) return {"<not json>"};
  for (const auto& f : j["findings"]) ids.push_back(f["id"]);
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(GovernCli, AuditsExitCodesAndFindingIds) {
  ASSERT_TRUE(PathExists(kSeedctl)) << kSeedctl;
  struct Case {
    std::string args;
    int code;
    std::vector<std::string> ids;
  };
  const Case cases[] = {
      // LINT005 (an HPA target not among the inputs) is a note: no error left.
      {"k8s lint -f " + kData + "autoscaling.yaml -o json",
       0,
       {"LINT002", "LINT004", "LINT005", "LINT006", "LINT007", "LINT008"}},
      {"k8s crd-diff " + kData + "crd-v1beta1-old.yaml " + kData + "crd-v1beta1-new.yaml -o json",
       3,
       {"CRD001"}},
      {"k8s shadow-pods -f " + kData + "pods-only.json --now 2024-03-15T09:00:00Z -o json",
       0,
       {"SHADOW005", "SHADOW005"}},
      {"k8s crd-audit --log " + kData + "audit.jsonl --crds " + kData + "crds.json -o json",
       3,
       {"CRDA001", "CRDA002"}},
      {"k8s crd-audit --log " + kData + "precision.yaml --crds " + kData + "crds.json -o json",
       0,
       {"CRDA004"}},
      {"k8s crd-diff " + kData + "crd-v1.8.yaml " + kData + "crd-v2.3.yaml -o json",
       3,
       {"CRD003", "CRD008", "CRD015"}},
      {"k8s crd-diff " + kData + "crd-v1.8.yaml " + kData + "crd-v1.8.yaml -o json", 0, {}},
      {"k8s shadow-pods -f " + kData + "pods.json --now 2024-03-15T09:00:00Z -o json",
       3,
       {"SHADOW001", "SHADOW002"}},
      {"k8s shadow-pods -f " + kData + "pods.json --now 2024-03-15T08:05:00Z -o json",
       0,
       {"SHADOW002"}},
      {"k8s shadow-pods -f " + kData + "pods.json --now 2024-03-15T08:05:00Z -o json --strict",
       2,
       {"SHADOW002"}},
      {"k8s crd-audit --log " + kData + "apiserver.log --crds " + kData + "crds.json -o json",
       3,
       {"CRDA001", "CRDA002"}},
      {"k8s tenancy -f " + kData + "tenancy-dump.json -o json", 3, {"TEN001", "TEN004", "TEN005"}},
      {"k8s qos-check -f " + kData + "seed-pods.yaml --metrics " + kData + "metrics.json -o json",
       3,
       {"QOSV001", "QOSV002", "QOSV004"}},
      {"advise precision -f " + kData + "precision.yaml -o json --strict", 0, {}},
  };
  for (const auto& c : cases) {
    CliRun r = Seedctl(c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.out << r.err;
    EXPECT_EQ(Ids(r.out), c.ids) << c.args;
  }
}

TEST(GovernCli, QosJsonIsAListOfObjects) {
  CliRun r = Seedctl("k8s qos -f " + kData + "seed-pods.yaml -o json");
  EXPECT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 4u);
  std::vector<std::string> classes;
  for (const auto& o : j) {
    EXPECT_EQ(o["kind"], "Pod");
    EXPECT_EQ(o["namespace"], "media");
    classes.push_back(o["qosClass"]);
  }
  EXPECT_EQ(classes,
            (std::vector<std::string>{"Guaranteed", "Burstable", "BestEffort", "Burstable"}));
  EXPECT_EQ(j[1]["annotationCgroup"]["memory.high"], "3221225472");
  EXPECT_EQ(j[3]["containers"][0]["oomScoreAdj"], 985);
  EXPECT_EQ(Seedctl("k8s qos -f " + kData + "seed-pods.yaml -o json --strict").code, 2);
}

TEST(GovernCli, SarifAndTable) {
  CliRun sarif = Seedctl("k8s lint -f " + kData + "autoscaling.yaml -o sarif");
  EXPECT_EQ(sarif.code, 0);
  json log = json::parse(sarif.out);
  EXPECT_EQ(log["version"], "2.1.0");
  EXPECT_EQ(log["runs"][0]["tool"]["driver"]["name"], "seedctl k8s lint");
  CliRun table = Seedctl("k8s lint -f " + kData + "autoscaling.yaml");
  EXPECT_TRUE(StartsWith(table.out, "SEVERITY  ID       OBJECT")) << table.out;
  EXPECT_EQ(LastLine(table.out), "6 finding(s): 0 error, 4 warning, 2 note");
}

TEST(GovernCli, InputsThatProveNothingAreSaidSo) {
  // crd-diff on files without CRDs fails instead of passing.
  CliRun no_crd = Seedctl("k8s crd-diff " + kData + "seed-pods.yaml " + kData + "seed-pods.yaml");
  EXPECT_EQ(no_crd.code, 1) << no_crd.out << no_crd.err;
  EXPECT_EQ(LastLine(no_crd.err), "INVALID_ARGUMENT");
  // crd-audit says how many lines it recognised.
  CliRun audit =
      Seedctl("k8s crd-audit --log " + kData + "audit.jsonl --crds " + kData + "crds.json");
  EXPECT_NE(audit.err.find("3 line(s): 3 audit event(s), 0 klog line(s) recognised; 2 report"),
            std::string::npos)
      << audit.err;
  // lint searches directories recursively and warns when nothing was loaded.
  std::string dir = "/tmp/rsl-govern-lint-dir-" + std::to_string(getpid());
  RemoveAll(dir);
  ASSERT_TRUE(MakeDirs(dir + "/apps/web").ok());
  ASSERT_TRUE(MakeDirs(dir + "/empty").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/apps/web/hpa.yaml",
                              "kind: HorizontalPodAutoscaler\nmetadata: {name: h}\n"
                              "spec: {scaleTargetRef: {kind: Deployment, name: web}, "
                              "maxReplicas: 2}\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/empty/README.md", "no manifests\n").ok());
  CliRun nested = Seedctl("k8s lint -f " + dir + " -o json");
  EXPECT_EQ(nested.code, 0) << nested.err;
  EXPECT_EQ(Ids(nested.out), std::vector<std::string>{"LINT005"});
  CliRun empty = Seedctl("k8s lint -f " + dir + "/empty");
  EXPECT_EQ(empty.code, 0);
  EXPECT_NE(empty.err.find("warning: no Kubernetes object loaded from"), std::string::npos)
      << empty.err;
  RemoveAll(dir);
}

TEST(GovernCli, CostCompareSpotFallsBackToOnDemandGpuPrices) {
  std::string dir = "/tmp/rsl-govern-spot-" + std::to_string(getpid());
  RemoveAll(dir);
  ASSERT_TRUE(MakeDirs(dir).ok());
  auto text = ReadFile(kData + "strategy-default.yaml");
  ASSERT_TRUE(text.ok());
  std::string spot = *text;
  spot.replace(spot.find("rsl.cost/pricing: on-demand"), 27, "rsl.cost/pricing: spot");
  ASSERT_TRUE(WriteFileAtomic(dir + "/spot.yaml", spot).ok());
  // The default price table (written to the state dir) has no spot GPU prices.
  CliRun r = Seedctl("cost compare -f " + dir + "/spot.yaml --hours 1 --state-dir " + dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("note: llama7b-default: the price table has no spot price for A100 GPUs: "
                       "priced on-demand"),
            std::string::npos)
      << r.out;
  CliRun j =
      Seedctl("cost compare -f " + dir + "/spot.yaml --hours 1 --state-dir " + dir + " -o json");
  json out = json::parse(j.out);
  EXPECT_EQ(out["strategies"][0]["pricing"], "spot");
  EXPECT_EQ(out["strategies"][0]["gpu_pricing"], "on-demand");
  RemoveAll(dir);
}

TEST(GovernCli, ErrorsEndWithTheirCode) {
  CliRun missing = Seedctl("k8s lint -f /nonexistent/x.yaml");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(LastLine(missing.err), "IO_ERROR");
  CliRun bad_yaml = Seedctl("k8s qos -f " + kData + "apiserver.log");
  EXPECT_EQ(bad_yaml.code, 0);  // a log is a YAML scalar: no objects, no findings
  std::string odd = "/tmp/rsl-govern-odd-" + std::to_string(getpid()) + ".yaml";
  ASSERT_TRUE(WriteFileAtomic(odd,
                              "kind: HorizontalPodAutoscaler\nmetadata: {name: h}\n"
                              "spec: {scaleTargetRef: web, maxReplicas: 2}\n")
                  .ok());
  CliRun malformed = Seedctl("k8s lint -f " + odd);
  EXPECT_EQ(malformed.code, 1) << malformed.out << malformed.err;
  EXPECT_EQ(LastLine(malformed.err), "INVALID_ARGUMENT");
  RemoveAll(odd);
  CliRun params = Seedctl("advise memory --params -1 --gpus 8");
  EXPECT_EQ(params.code, 1);
  EXPECT_EQ(LastLine(params.err), "INVALID_ARGUMENT");
  EXPECT_NE(params.err.find("--params"), std::string::npos);
}

TEST(GovernCli, AdviseMemory) {
  CliRun r = Seedctl("advise memory --params 2851e6 --gpus 8 --zero 2 --offload optimizer -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["stages"].size(), 1u);
  EXPECT_EQ(j["stages"][0]["stage"], 2);
  EXPECT_NEAR(j["stages"][0]["cpu_bytes"].get<double>() / (1 << 30), 127.45, 0.005);
  EXPECT_NEAR(j["stages"][0]["gpu_bytes"].get<double>() / (1 << 30), 5.31, 0.005);
  CliRun all = Seedctl("advise memory --params 7.5e9 --gpus 64 -o json");
  json a = json::parse(all.out);
  ASSERT_EQ(a["stages"].size(), 4u);
  // GPU column: DeepSpeed's estimator (4Ψ + 16Ψ/N); the paper's 31.4 GB as its own column.
  EXPECT_NEAR(a["stages"][1]["gpu_bytes"].get<double>() / 1e9, 31.875, 0.001);
  EXPECT_NEAR(a["stages"][1]["paper_gpu_bytes"].get<double>() / 1e9, 31.4, 0.1);
  CliRun ds = Seedctl("advise memory --params 2851e6 --gpus 8 --zero 2");
  EXPECT_NE(ds.out.find("15.93 GiB"), std::string::npos) << ds.out;
  EXPECT_NE(ds.out.find("PAPER GPU"), std::string::npos) << ds.out;
  CliRun emit =
      Seedctl("advise memory --params 7e9 --gpus 8 --zero 2 --emit deepspeed --recompute full");
  EXPECT_EQ(emit.code, 0);
  EXPECT_NE(
      emit.out.find("export SEEDANCE_ZERO_STAGE=2\nexport SEEDANCE_GRADIENT_CHECKPOINTING=true"),
      std::string::npos)
      << emit.out;
}

TEST(GovernCli, CostCompareReproducesTheSeedTable) {
  CliRun r =
      Seedctl("cost compare -f " + kData + "strategy-default.yaml -f " + kData +
              "strategy-zero2.yaml --hours 9.2 --hours 7.1 --prices " + kData + "seed-prices.yaml");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("12.80"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("117.76"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8.45"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("60.00"), std::string::npos) << r.out;
  CliRun j = Seedctl("cost compare -f " + kData + "strategy-default.yaml -f " + kData +
                     "strategy-zero2.yaml --hours 9.2 --hours 7.1 --prices " + kData +
                     "seed-prices.yaml -o json");
  json out = json::parse(j.out);
  EXPECT_DOUBLE_EQ(out["strategies"][0]["total"].get<double>(), 117.76);
  EXPECT_DOUBLE_EQ(out["strategies"][1]["total"].get<double>(), 60.00);
}

TEST(GovernCli, CostReportAndPolicies) {
  std::string dir = "/tmp/rsl-govern-cli-" + std::to_string(getpid());
  RemoveAll(dir);
  {
    auto store = CostStore::Open(dir);
    ASSERT_TRUE(store.ok());
    CostRecord r;
    r.workload = "fraud";
    r.workload_id = "wl-1";
    r.namespace_ = "risk";
    r.step = "train";
    r.pricing = "on-demand";
    r.exit_kind = "Succeeded";
    r.ended_at_ms = static_cast<int64_t>(time(nullptr)) * 1000;
    r.labels = {{"team", "risk"}, {"stage", "train"}};
    r.run_id = "r1";
    r.metrics_json = R"({"auc": 0.80})";
    r.cost.total = 10;
    ASSERT_TRUE((*store)->Record(r).ok());
    r.run_id = "r2";
    r.ended_at_ms += 1000;
    r.metrics_json = R"({"auc": 0.84})";
    r.cost.total = 8;
    r.labels["team"] = "ads";
    ASSERT_TRUE((*store)->Record(r).ok());
  }
  CliRun rep = Seedctl("cost report --state-dir " + dir + " --by team --since 7d -o json");
  ASSERT_EQ(rep.code, 0) << rep.err;
  json j = json::parse(rep.out);
  EXPECT_DOUBLE_EQ(j["total"].get<double>(), 18);
  EXPECT_EQ(j["groups"][0]["key"], "risk");
  CliRun pm = Seedctl("cost report --state-dir " + dir + " --per-metric auc");
  EXPECT_EQ(pm.code, 0);
  EXPECT_NE(pm.out.find("2.00"), std::string::npos) << pm.out;  // 8 / 4 hundredths
  CliRun typo = Seedctl("cost report --state-dir " + dir + " --by teem");
  EXPECT_EQ(typo.code, 1);
  EXPECT_NE(typo.err.find("did you mean \"team\"?"), std::string::npos);

  CliRun apply = Seedctl("policy apply -f " + kData + "cost-policy.yaml --state-dir " + dir);
  EXPECT_EQ(apply.code, 0) << apply.err;
  EXPECT_EQ(apply.out, "policy cost-policy applied (2 rule(s))\n");
  CliRun list = Seedctl("policy list --state-dir " + dir + " -o json");
  json l = json::parse(list.out);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0]["rules"][0]["condition"], "loss_plateau_duration > 1800 && gpu_util_avg < 0.3");
  std::string bad = dir + "/bad.yaml";
  ASSERT_TRUE(
      WriteFileAtomic(bad, "rules:\n- {name: a, condition: \"gpu_util_avgg < 1\", action: stop}\n")
          .ok());
  CliRun rejected = Seedctl("policy apply -f " + bad + " --state-dir " + dir);
  EXPECT_EQ(rejected.code, 1);
  EXPECT_EQ(LastLine(rejected.err), "EXPRESSION_INVALID");
  EXPECT_NE(rejected.err.find("did you mean \"gpu_util_avg\"?"), std::string::npos) << rejected.err;
  RemoveAll(dir);
}

// The whole path a user takes: apply a policy, `seedctl run` a workload whose loss plateaus
// (a real process under the local backend), see it stopped early as a success with its
// output kept, and find its cost in `seedctl cost report`.
TEST(GovernCli, SeedctlRunHonoursAnAppliedPolicyAndRecordsCost) {
  std::string dir = "/tmp/rsl-govern-run-" + std::to_string(getpid());
  RemoveAll(dir);
  ASSERT_TRUE(MakeDirs(dir).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/policy.yaml",
                              "rules:\n- name: plateau\n"
                              "  condition: \"loss_plateau_duration > 2 && gpu_util_avg < 0.3\"\n"
                              "  action: stop_as_success\n")
                  .ok());
  CliRun apply = Seedctl("policy apply -f " + dir + "/policy.yaml --state-dir " + dir + "/state");
  ASSERT_EQ(apply.code, 0) << apply.err;
  const std::string step =
      "import json, os, time\n"
      "open(os.path.join(os.environ['RSL_OUTPUT'], 'model.txt'), 'w').write('weights')\n"
      "start = time.time(); loss = 2.0\n"
      "with open(os.environ['RSL_METRICS_STREAM'], 'a') as f:\n"
      "    while time.time() - start < 60:\n"
      "        if time.time() - start < 1.0: loss *= 0.8\n"
      "        f.write(json.dumps({'loss': loss, 'gpu_util': 0.1}) + '\\n'); f.flush()\n"
      "        time.sleep(0.1)\n";
  ASSERT_TRUE(WriteFileAtomic(dir + "/train.py", step).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/wl.yaml",
                              "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n"
                              "  name: plateau\n  namespace: llm\n  labels: {team: llm}\nspec:\n"
                              "  resources: {cpu: 500m, memory: 256Mi}\n"
                              "  data:\n    output:\n      uri: file://" +
                                  dir +
                                  "/published\n"
                                  "  pipeline:\n    - name: train\n      command: [python3, " +
                                  dir + "/train.py]\n")
                  .ok());
  auto t0 = std::chrono::steady_clock::now();
  CliRun run = Seedctl("run -f " + dir + "/wl.yaml --state-dir " + dir + "/state");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_LT(secs, 20.0) << "the policy did not stop the 60 s step";
  EXPECT_NE(run.out.find("SUCCEEDED"), std::string::npos) << run.out;
  auto model = ReadFile(dir + "/published/train/model.txt");
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  EXPECT_EQ(*model, "weights");
  CliRun report = Seedctl("cost report --state-dir " + dir + "/state --by team -o json");
  ASSERT_EQ(report.code, 0) << report.err;
  json j = json::parse(report.out);
  ASSERT_EQ(j["groups"].size(), 1u) << report.out;
  EXPECT_EQ(j["groups"][0]["key"], "llm");
  EXPECT_EQ(j["groups"][0]["steps"], 1);
  EXPECT_GT(j["total"].get<double>(), 0);
  RemoveAll(dir);
}

}  // namespace
}  // namespace rsl::govern
