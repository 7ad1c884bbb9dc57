#include "k8s/nodes.h"

#include <gtest/gtest.h>

#include "base/codes.h"

namespace rsl::k8s {
namespace {

// A GPU node as GPU feature discovery labels it, and a CPU node, in a NodeList.
constexpr char kNodes[] = R"({
  "kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "812"},
  "items": [
    {"metadata": {"name": "gpu-1", "labels": {
        "kubernetes.io/hostname": "gpu-1",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.memory": "81920",
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/mig.capable": "true",
        "feature.node.kubernetes.io/rdma.available": "false"}},
     "spec": {},
     "status": {
       "capacity": {"cpu": "64", "memory": "528280416Ki", "nvidia.com/gpu": "8", "pods": "110"},
       "allocatable": {"cpu": "63500m", "memory": "527178080Ki", "nvidia.com/gpu": "8",
                       "pods": "110", "ephemeral-storage": "1798332552693"},
       "conditions": [
         {"type": "MemoryPressure", "status": "False"},
         {"type": "Ready", "status": "True", "reason": "KubeletReady"}]}},
    {"metadata": {"name": "cpu-1", "labels": {"kubernetes.io/hostname": "cpu-1"}},
     "spec": {"unschedulable": true},
     "status": {"allocatable": {"cpu": "8", "memory": "32Gi"},
                "conditions": [{"type": "Ready", "status": "True"}]}},
    {"metadata": {"name": "cpu-2"},
     "status": {"allocatable": {"cpu": "4", "memory": "16Gi"},
                "conditions": [{"type": "Ready", "status": "Unknown",
                                "reason": "NodeStatusUnknown"}]}}
  ]})";

TEST(Nodes, InventoryFromANodeList) {
  auto nodes = NodesFromList(nlohmann::json::parse(kNodes), DefaultLabelCapabilities());
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  const sched::Node& gpu = (*nodes)[0];
  EXPECT_EQ(gpu.name, "gpu-1");
  EXPECT_EQ(gpu.state, spec::NodeState::kReady);
  EXPECT_EQ(gpu.cpu_millis, 63500);
  EXPECT_EQ(gpu.memory_bytes, 527178080LL * 1024);
  ASSERT_EQ(gpu.gpus.size(), 8u);
  EXPECT_EQ(gpu.gpus[0].model, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(gpu.gpus[0].memory_bytes, 81920LL * 1024 * 1024);
  EXPECT_EQ(gpu.capabilities, (std::vector<std::string>{"compute_capability_8", "mig"}));
  // The catalog's capabilities for an A100 come with the label ones.
  EXPECT_NE(std::find(gpu.gpus[0].capabilities.begin(), gpu.gpus[0].capabilities.end(), "mig"),
            gpu.gpus[0].capabilities.end());
  EXPECT_GT(gpu.gpus[0].capabilities.size(), 2u);
  EXPECT_EQ(gpu.labels.at("kubernetes.io/hostname"), "gpu-1");

  EXPECT_EQ((*nodes)[1].state, spec::NodeState::kDrained);  // cordoned
  EXPECT_TRUE((*nodes)[1].gpus.empty());
  EXPECT_EQ((*nodes)[1].memory_bytes, 32LL << 30);
  EXPECT_EQ((*nodes)[2].state, spec::NodeState::kNotReady);
}

TEST(Nodes, ACustomTableAndPresenceTerms) {
  LabelCapabilities table = {{"example.com/fast-disk", "nvme"},
                             {"topology.kubernetes.io/zone=eu-1a", "zone_a"}};
  auto n = NodeFromJson(nlohmann::json::parse(R"({"metadata":{"name":"a","labels":{
      "example.com/fast-disk":"yes","topology.kubernetes.io/zone":"eu-1a"}},
      "status":{"allocatable":{"cpu":"2","memory":"1Gi"}}})"),
                        table);
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(n->capabilities, (std::vector<std::string>{"nvme", "zone_a"}));
  EXPECT_EQ(n->state, spec::NodeState::kNotReady);  // no Ready condition reported yet
}

TEST(Nodes, BadQuantityNamesTheField) {
  auto nodes = NodesFromList(nlohmann::json::parse(R"({"items":[{"metadata":{"name":"x"},
      "status":{"allocatable":{"cpu":"lots"}}}]})"),
                             {});
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.error().code, codes::kK8sApiError);
  EXPECT_EQ(nodes.error().path, "items[0].status.allocatable.cpu");
  EXPECT_EQ(nodes.error().value, "lots");
  EXPECT_FALSE(NodesFromList(nlohmann::json::parse("[]"), {}).ok());
  EXPECT_FALSE(NodeFromJson(nlohmann::json::parse("{}"), {}).ok());
}

}  // namespace
}  // namespace rsl::k8s
