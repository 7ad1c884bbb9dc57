#include "sched/inventory.h"

#include <gtest/gtest.h>

#include "base/codes.h"

namespace rsl::sched {
namespace {

TEST(InventoryTest, ProbesThisMachine) {
  Node n = ProbeLocalNode("");
  EXPECT_EQ(n.name, "local");
  EXPECT_GE(n.cpu_millis, 1000);
  EXPECT_GT(n.memory_bytes, 0);
  EXPECT_TRUE(n.gpus.empty());
}

TEST(InventoryTest, ParsesNvidiaSmiCsv) {
  auto devs = ParseNvidiaSmi("NVIDIA A100-SXM4-80GB, 81920\nNVIDIA A10, 23028\n");
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(devs[0].memory_bytes, 81920LL << 20);
  EXPECT_TRUE(devs[0].probed);
  EXPECT_NE(std::find(devs[1].capabilities.begin(), devs[1].capabilities.end(), "low_latency"),
            devs[1].capabilities.end());
}

TEST(InventoryTest, NodeFileDeclaresDevicesNotProbed) {
  Node probed = ProbeLocalNode("");
  auto nodes = ParseNodeFile(
      "nodes:\n"
      "  - name: local\n"
      "    gpus:\n"
      "      - {model: A10, memory: 24Gi, count: 2}\n"
      "  - name: big\n"
      "    cpu: 64\n"
      "    memory: 256Gi\n"
      "    gpus: [{model: A100, capabilities: [tensor_core]}]\n",
      "nodes.yaml", probed);
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].cpu_millis, probed.cpu_millis);
  ASSERT_EQ((*nodes)[0].gpus.size(), 2u);
  EXPECT_FALSE((*nodes)[0].gpus[0].probed);
  EXPECT_EQ(DescribeDevice((*nodes)[0].gpus[0]), "A10 24Gi (declared, not probed)");
  EXPECT_EQ((*nodes)[1].cpu_millis, 64000);
  EXPECT_EQ((*nodes)[1].gpus[0].capabilities, std::vector<std::string>{"tensor_core"});
}

TEST(InventoryTest, NodeFileErrorsHavePlaceAndHint) {
  auto bad = ParseNodeFile("nodes:\n  - name: x\n    gpuz: []\n", "n.yaml", Node{});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.error().ToString(),
      "n.yaml:3:5: SPEC_INVALID nodes[0].gpuz: unknown field \"gpuz\" (did you mean \"gpus\"?)");
  auto mem = ParseNodeFile("memory: lots\n", "n.yaml", Node{});
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.error().code, codes::kSpecInvalid);
  EXPECT_EQ(mem.error().path, "node.memory");
  auto state = ParseNodeFile("nodes:\n  - {name: x, state: Asleep}\n", "n.yaml", Node{});
  ASSERT_FALSE(state.ok());
  EXPECT_EQ(state.error().ToString(),
            "n.yaml:2:22: SPEC_INVALID nodes[0].state: unknown node state 'Asleep' "
            "(one of Ready, NotReady, Drained, Down)");
  auto drained = ParseNodeFile("nodes:\n  - {name: x, state: Drained}\n", "n.yaml", Node{});
  ASSERT_TRUE(drained.ok()) << drained.error().ToString();
  ASSERT_EQ(drained->size(), 2u);  // the probed local node first
  EXPECT_EQ((*drained)[1].state, spec::NodeState::kDrained);
}

}  // namespace
}  // namespace rsl::sched
