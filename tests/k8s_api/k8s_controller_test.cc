// A real rsl-controller with `--backend k8s` against the API-server double, driven only
// through the real seedctl: `seedctl node list` shows the cluster's nodes (allocatable cpu,
// memory and nvidia.com/gpu, GPU feature discovery labels as capabilities, the Ready
// condition), and admission decides on that inventory, including a node added to the cluster
// while the controller runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "../api/harness.h"
#include "harness.h"

namespace rsl::k8stest {
namespace {

using apitest::CmdResult;

nlohmann::json GpuNode(const std::string& name, int gpus) {
  return {{"metadata",
           {{"name", name},
            {"labels",
             {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
              {"nvidia.com/gpu.memory", "81559"},
              {"nvidia.com/gpu.compute.major", "9"}}}}},
          {"status",
           {{"allocatable",
             {{"cpu", "31750m"}, {"memory", "250Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

// A workload of one step asking for `gpus` GPUs (the pods it makes stay Pending: no kubelet).
std::string GpuWorkload(const std::string& name, int gpus) {
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
         "metadata: {name: " +
         name +
         "}\n"
         "spec:\n"
         "  pipeline:\n"
         "    - name: train\n"
         "      image: \"volc/train:v1\"\n"
         "      command: [\"python\", \"train.py\"]\n"
         "      resources: {cpu: \"2\", memory: 4Gi, gpu: {count: \"" +
         std::to_string(gpus) + "\"}}\n";
}

class K8sControllerTest : public DoubleTest {
 protected:
  void SetUp() override {
    DoubleTest::SetUp();
    server_->Add("nodes", "", GpuNode("gpu-1", 4));
    server_->Add("nodes", "",
                 {{"metadata", {{"name", "cpu-1"}}},
                  {"status",
                   {{"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}}},
                    {"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}});
    const std::string kubeconfig = c_.root() + "/kubeconfig";
    apitest::WriteText(kubeconfig,
                       "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                       "clusters:\n- name: double\n  cluster:\n    server: " +
                           server_->url() + "\n    certificate-authority: " + PkiDir() +
                           "/ca.crt\n"
                           "users:\n- name: me\n  user:\n    client-certificate: " +
                           PkiDir() + "/client.crt\n    client-key: " + PkiDir() +
                           "/client.key\n"
                           "contexts:\n- name: test\n"
                           "  context: {cluster: double, user: me}\n");
    std::filesystem::create_directories(c_.root() + "/staging");
    c_.UseArgs({"--backend", "k8s", "--kubeconfig", kubeconfig, "--k8s-staging",
                "file://" + c_.root() + "/staging"});
    ASSERT_TRUE(c_.Start()) << c_.Log();
    admin_ = c_.CreateToken("*", "admin", "ada");
    ASSERT_FALSE(admin_.empty());
  }

  nlohmann::json Nodes(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"node", "list", "-o", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    CmdResult r = c_.Seedctl(admin_, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_discarded() ? nlohmann::json::object() : j;
  }

  CmdResult Submit(const std::string& file, const std::string& yaml) {
    apitest::WriteText(c_.work_dir() + "/" + file, yaml);
    return c_.Seedctl(admin_, {"workload", "submit", "-f", file});
  }

  apitest::Controller c_;
  std::string admin_;
};

TEST_F(K8sControllerTest, NodeListAndAdmissionComeFromTheClustersNodes) {
  // The table: one row per cluster node.
  CmdResult table = c_.Seedctl(admin_, {"node", "list"});
  ASSERT_EQ(table.exit_code, 0) << table.err << c_.Log();
  EXPECT_EQ(table.out.rfind("NAME", 0), 0u) << table.out;
  EXPECT_NE(table.out.find("4xNVIDIA-H100-80GB-HBM3"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("cpu-1"), std::string::npos) << table.out;

  nlohmann::json nodes = Nodes();
  ASSERT_EQ(nodes["items"].size(), 2u) << nodes.dump(2);
  const nlohmann::json& cpu = nodes["items"][0];  // the double lists by name
  const nlohmann::json& gpu = nodes["items"][1];
  EXPECT_EQ(cpu["metadata"]["name"], "cpu-1");
  EXPECT_EQ(cpu["status"]["state"], "NotReady");
  EXPECT_EQ(cpu["status"]["cpuMillis"], 8000);
  EXPECT_EQ(cpu["status"]["memoryBytes"], int64_t{32} << 30);
  EXPECT_EQ(gpu["metadata"]["name"], "gpu-1");
  EXPECT_EQ(gpu["status"]["state"], "Ready");
  EXPECT_EQ(gpu["status"]["cpuMillis"], 31750);
  EXPECT_EQ(gpu["status"]["memoryBytes"], int64_t{250} << 30);
  ASSERT_EQ(gpu["status"]["gpus"].size(), 4u);
  EXPECT_EQ(gpu["status"]["gpus"][0]["model"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(gpu["status"]["gpus"][0]["memoryBytes"], int64_t{81559} << 20);
  EXPECT_EQ(gpu["metadata"]["labels"]["nvidia.com/gpu.compute.major"], "9");
  bool cc9 = false;
  for (const auto& c : gpu["status"]["capabilities"]) cc9 = cc9 || c == "compute_capability_9";
  EXPECT_TRUE(cc9) << gpu.dump(2);

  // --capability filters on what the labels say.
  nlohmann::json cc9_nodes = Nodes({"--capability", "compute_capability_9"});
  ASSERT_EQ(cc9_nodes["items"].size(), 1u) << cc9_nodes.dump(2);
  EXPECT_EQ(cc9_nodes["items"][0]["metadata"]["name"], "gpu-1");
  EXPECT_TRUE(Nodes({"--capability", "mig"})["items"].empty());

  // Admission: 8 GPUs fit no node of the cluster (rejected); 2 do.
  CmdResult eight = Submit("eight.yaml", GpuWorkload("eight", 8));
  ASSERT_EQ(eight.exit_code, 0) << eight.err;
  const std::string eight_id = apitest::IdFromSubmit(eight.out);
  EXPECT_EQ(c_.WaitPhase(admin_, eight_id), "REJECTED");
  CmdResult status = c_.Seedctl(admin_, {"workload", "status", "--id", eight_id, "-o", "json"});
  nlohmann::json st = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_TRUE(st.is_object()) << status.out;
  EXPECT_EQ(st["status"]["failureCode"], "INSUFFICIENT_RESOURCES") << st.dump(2);
  // Word for word: the cluster's nodes, each with why it cannot hold the step.
  EXPECT_EQ(st["status"]["failureMessage"],
            "eight.yaml:9:18: INSUFFICIENT_RESOURCES spec.pipeline.steps[0].resources: step "
            "\"train\": no node can ever satisfy it: cpu-1: gpu 8 > 0; gpu-1: gpu 8 > 4 (request "
            "less, or add a node that has it to the k8s cluster (`seedctl node list`))");
  CmdResult two = Submit("two.yaml", GpuWorkload("two", 2));
  EXPECT_EQ(two.exit_code, 0) << two.err;
  const std::string two_id = apitest::IdFromSubmit(two.out);
  EXPECT_FALSE(two_id.empty()) << two.out;
  // Admitted: its Pod is created (and stays Pending: no kubelet here).
  ASSERT_TRUE(WaitFor([&] { return !server_->List("pods", "default").empty(); }, 30'000))
      << c_.Log();

  // A node joins the cluster: the controller's inventory follows (nodes are read every 2 s),
  // and 8 GPUs are admitted now.
  server_->Add("nodes", "", GpuNode("gpu-2", 8));
  ASSERT_TRUE(WaitFor([&] { return Nodes()["items"].size() == 3u; }, 30'000));
  std::string later_id;
  ASSERT_TRUE(WaitFor(
      [&] {
        CmdResult later = Submit("eight.yaml", GpuWorkload("eight", 8));
        later_id = apitest::IdFromSubmit(later.out);
        return !later_id.empty() && c_.WaitPhase(admin_, later_id, 3000).rfind("TIMEOUT", 0) == 0;
      },
      30'000));
  EXPECT_TRUE(WaitFor([&] { return server_->List("pods", "default").size() == 2u; }, 30'000));
  for (const auto& id : {two_id, later_id}) {
    CmdResult cancel = c_.Seedctl(admin_, {"workload", "cancel", "--id", id});
    EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  }
}

}  // namespace
}  // namespace rsl::k8stest
