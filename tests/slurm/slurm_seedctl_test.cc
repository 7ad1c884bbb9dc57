// `seedctl run -f FILE --backend slurm` end to end on the fixture's cluster: the same YAML that
// runs on the local backend, only the backend flag differs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/file.h"
#include "base/strings.h"
#include "cluster_util.h"

namespace rsl {
namespace {

using namespace rsl::slurm_test;  // NOLINT

class SeedctlSlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UseFixtureCluster();
    ASSERT_TRUE(PathExists(EnvVar("SLURM_CONF"))) << "run through ctest (fixture slurm_cluster)";
    EnsureAllNodesIdle();
    dir_ = ::testing::TempDir() + "slurm_seedctl_test/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(MakeDirs(dir_).ok());
  }
  void TearDown() override { Sh("squeue -h -o %A | xargs -r scancel"); }

  // Runs seedctl with the workload; returns its combined output and sets *rc.
  std::string Run(const std::string& yaml, const std::string& backend, int* rc) {
    std::string file = dir_ + "/" + backend + ".yaml";
    std::ofstream(file) << yaml;
    std::string out_file = dir_ + "/" + backend + ".out";
    std::string cmd = std::string(RSL_BINARY_DIR) + "/bin/seedctl run -f " + file + " --backend " +
                      backend + " --no-hooks --state-dir " + dir_ + "/state-" + backend + " > " +
                      out_file + " 2>&1; echo $?";
    *rc = std::atoi(Sh(cmd).c_str());
    return Slurp(out_file);
  }

  std::string dir_;
};

constexpr char kYaml[] = R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata:
  name: fraud-seedctl
  labels: {team: risk}
spec:
  resources: {cpu: "1", memory: "100Mi"}
  pipeline:
    - name: ingest
      command: ["sh", "-c", "echo rows=100 > \"$RSL_OUTPUT/rows\""]
    - name: train
      command: ["python3", "-c", "import json, os; json.dump({'auc': 0.95}, open(os.environ['RSL_METRICS_FILE'], 'w'))"]
      dependsOn: [ingest]
      resources:
        gpu: {count: 1, capability: [tensor_core, fp16_support]}
    - name: validate
      command: ["true"]
      dependsOn: [train]
      when: "output.train.metrics.auc > 0.92"
)yaml";

TEST_F(SeedctlSlurmTest, SameYamlSucceedsOnSlurm) {
  int rc = -1;
  std::string out = Run(kYaml, "slurm", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;
  EXPECT_EQ(Sh("squeue -h -t PD,R,CG -o %A"), "");
}

TEST_F(SeedctlSlurmTest, ImpossibleCapabilityEndsWithInsufficientResources) {
  std::string yaml = kYaml;
  yaml.replace(yaml.find("[tensor_core, fp16_support]"), 27, "[low_latency]");
  int rc = -1;
  std::string out = Run(yaml, "slurm", &rc);
  EXPECT_EQ(rc, 1) << out;
  auto lines = Split(std::string(Trim(out)), '\n');
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "INSUFFICIENT_RESOURCES") << out;
}

// A site's Slurm Features are capabilities for `seedctl run --backend slurm` as they are for
// the controller: cpu_only (not in the built-in catalog) validates, and placement, not the
// spec check, says that no node has a GPU with it.
TEST_F(SeedctlSlurmTest, SiteFeaturesAreCapabilities) {
  std::string yaml = kYaml;
  yaml.replace(yaml.find("[tensor_core, fp16_support]"), 27, "[cpu_only]");
  int rc = -1;
  std::string out = Run(yaml, "slurm", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_EQ(out.find("unknown capability"), std::string::npos) << out;
  auto lines = Split(std::string(Trim(out)), '\n');
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "INSUFFICIENT_RESOURCES") << out;
  // On the local backend it is still an unknown capability, found before anything runs.
  std::string local = Run(yaml, "local", &rc);
  EXPECT_EQ(rc, 1) << local;
  EXPECT_NE(local.find("unknown capability \"cpu_only\""), std::string::npos) << local;
}

// Step isolation on Slurm (docs/security.md): a step of namespace team-b, run as a Slurm job,
// tries what tests/security/attack.py tries against the state directory and a run of
// team-a that failed and kept its staging. Every attempt is refused; its own output works.
TEST_F(SeedctlSlurmTest, AStepReachesNeitherTheStateDirectoryNorAnotherNamespace) {
  std::string victim = R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: victim, namespace: team-a}
spec:
  resources: {cpu: "1", memory: "100Mi"}
  pipeline:
    - name: hold
      command: ["sh", "-c", "echo private-TEAMA-SECRET-slurm > \"$RSL_OUTPUT/private.txt\"; exit 3"]
      keepOnFailure: true
)yaml";
  int rc = -1;
  std::string out = Run(victim, "slurm", &rc);
  ASSERT_EQ(rc, 1) << out;
  std::string runs = dir_ + "/state-slurm-runs";
  std::string staging(Trim(Sh("ls -d " + runs + "/*/staging/hold* | head -1")));
  ASSERT_FALSE(staging.empty()) << out;
  ASSERT_TRUE(PathExists(staging + "/private.txt"));

  std::string attack = dir_ + "/attack.py";
  ASSERT_TRUE(
      WriteFileAtomic(attack, Slurp(std::string(RSL_SOURCE_DIR) + "/tests/security/attack.py"))
          .ok());
  std::string yaml = R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: attack, namespace: team-b}
spec:
  resources: {cpu: "1", memory: "100Mi"}
  pipeline:
    - name: attack
      command: ["/usr/bin/python3", "@SCRIPT@"]
      env:
        ATTACK_STATE_DIR: "@STATE@"
        ATTACK_RUNS_DIR: "@RUNS@"
        ATTACK_VICTIM_STAGING: "@VICTIM@"
        ATTACK_SECRET_PREFIX: "TEAMA-SECRET-"
)yaml";
  auto put = [&](const std::string& what, const std::string& value) {
    yaml.replace(yaml.find(what), what.size(), value);
  };
  put("@SCRIPT@", attack);
  put("@STATE@", dir_ + "/state-slurm");
  put("@RUNS@", runs);
  put("@VICTIM@", staging);
  out = Run(yaml, "slurm", &rc);
  ASSERT_EQ(rc, 0) << out;
  std::string log =
      Slurp(std::string(Trim(Sh("ls " + runs + "/*/attempts/attack.1.log | head -1"))));
  for (const char* name :
       {"forge-token", "read-db", "grep-db", "grep-wal", "list-state", "list-runs",
        "list-victim-staging", "read-victim-output", "write-victim-staging", "list-victim-run",
        "read-victim-logs", "environ-of-others"}) {
    EXPECT_NE(log.find(std::string(name) + ": DENIED"), std::string::npos)
        << name << " was not denied:\n"
        << log;
  }
  EXPECT_NE(log.find("own-output: ALLOWED"), std::string::npos) << log;
  EXPECT_NE(log.find("own-workdir: ALLOWED"), std::string::npos) << log;
  EXPECT_EQ(log.find("uid 0 "), std::string::npos) << log;
  EXPECT_EQ(log.find("TEAMA-SECRET-slurm"), std::string::npos) << log;
  EXPECT_FALSE(PathExists(staging + "/planted"));
}

}  // namespace
}  // namespace rsl
