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
    ASSERT_TRUE(PathExists(Env("SLURM_CONF"))) << "run through ctest (fixture slurm_cluster)";
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
    std::string cmd = std::string(RSL_BINARY_DIR) + "/bin/seedctl run -f " + file +
                      " --backend " + backend + " --no-hooks --state-dir " + dir_ + "/state-" +
                      backend + " > " + out_file + " 2>&1; echo $?";
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

}  // namespace
}  // namespace rsl
