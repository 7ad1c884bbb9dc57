#include "sched/placement.h"

#include <gtest/gtest.h>

namespace rsl::sched {
namespace {

Node MakeNode(const std::string& name, int64_t cpu, int64_t mem_gi, std::vector<Device> gpus = {}) {
  Node n;
  n.name = name;
  n.cpu_millis = cpu * 1000;
  n.memory_bytes = mem_gi << 30;
  n.gpus = std::move(gpus);
  return n;
}

Device Gpu(const std::string& model, std::vector<std::string> caps) {
  Device d;
  d.model = model;
  d.memory_bytes = 24LL << 30;
  d.capabilities = std::move(caps);
  return d;
}

TEST(PlacementTest, PrefersLeastLoadedNotStrongest) {
  Node strong =
      MakeNode("a100-node", 16, 64, {Gpu("A100", {"tensor_core"}), Gpu("A100", {"tensor_core"})});
  Node weak =
      MakeNode("a10-node", 16, 64, {Gpu("A10", {"tensor_core"}), Gpu("A10", {"tensor_core"})});
  strong.used_gpus = 1;
  strong.used_cpu_millis = 4000;
  Request req{1000, 1LL << 30, 1, {"tensor_core"}, std::nullopt};
  Placement p = Place({strong, weak}, req, {{0}, {}});
  EXPECT_EQ(p.node, "a10-node");
  ASSERT_EQ(p.gpu_indices.size(), 1u);
  EXPECT_EQ(p.gpu_indices[0], 0);
}

TEST(PlacementTest, BusyNodeHasNoPlacementButCouldFitLater) {
  Node n = MakeNode("local", 2, 4);
  n.used_cpu_millis = 2000;
  Request req{1000, 0, 0, {}, std::nullopt};
  Placement p = Place({n}, req);
  EXPECT_EQ(p.node, "");
  ASSERT_EQ(p.misfits.size(), 1u);
  EXPECT_EQ(p.misfits[0].reason, "cpu 1 > free");
  EXPECT_EQ(WhyNeverFits({n}, req), "");
}

// A drained (or down) node takes nothing now, but may again: admission must not refuse a
// request only it can run.
TEST(PlacementTest, DrainedNodeWaitsButIsNeverImpossible) {
  Node n = MakeNode("n1", 2, 4);
  n.state = spec::NodeState::kDrained;
  Request req{1000, 0, 0, {}, std::nullopt};
  Placement p = Place({n}, req);
  EXPECT_EQ(p.node, "");
  ASSERT_EQ(p.misfits.size(), 1u);
  EXPECT_EQ(p.misfits[0].reason, "node is Drained");
  EXPECT_EQ(WhyNeverFits({n}, req), "");
}

TEST(PlacementTest, NeverFitsNamesTheMissingCapability) {
  Node n = MakeNode("local", 8, 32, {Gpu("A100", {"tensor_core", "fp16_support"})});
  Request req{1000, 0, 1, {"tensor_core", "low_latency"}, std::nullopt};
  EXPECT_EQ(WhyNeverFits({n}, req), "local: no GPU with capability low_latency");
  Request big{16000, 0, 0, {}, std::nullopt};
  EXPECT_EQ(WhyNeverFits({n}, big), "local: cpu 16 > 8");
  Request gpus{1000, 0, 3, {}, std::nullopt};
  EXPECT_EQ(WhyNeverFits({n}, gpus), "local: gpu 3 > 1");
  Node cpu_only = MakeNode("cpu", 8, 32);
  EXPECT_EQ(WhyNeverFits({cpu_only}, Request{0, 0, 1, {}, std::nullopt}), "cpu: gpu 1 > 0");
}

TEST(PlacementTest, DeviceIndicesSkipBusyDevices) {
  Node n = MakeNode("local", 8, 32, {Gpu("A10", {}), Gpu("A10", {}), Gpu("A10", {})});
  n.used_gpus = 1;
  Placement p = Place({n}, Request{0, 0, 2, {}, std::nullopt}, {{1}});
  EXPECT_EQ(p.node, "local");
  EXPECT_EQ(p.gpu_indices, (std::vector<int>{0, 2}));
  Placement none = Place({n}, Request{0, 0, 3, {}, std::nullopt}, {{1}});
  EXPECT_EQ(none.node, "");
}

}  // namespace
}  // namespace rsl::sched
