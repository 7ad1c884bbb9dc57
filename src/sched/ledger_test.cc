#include "sched/ledger.h"

#include <gtest/gtest.h>

#include <random>

namespace rsl::sched {
namespace {

Node MakeA10Node(const std::string& name, int64_t cpu, int64_t mem_gi, int gpus = 0,
                 std::vector<std::string> caps = {}) {
  Node n;
  n.name = name;
  n.cpu_millis = cpu * 1000;
  n.memory_bytes = mem_gi << 30;
  for (int g = 0; g < gpus; ++g) {
    Device d;
    d.model = "A10";
    d.memory_bytes = 24LL << 30;
    d.capabilities = caps;
    n.gpus.push_back(d);
  }
  return n;
}

// The ledger chooses what sched::Place chooses over the same nodes and holds, through a long
// random sequence of placements and releases on a mixed cluster.
TEST(LedgerTest, ChoosesWhatPlaceChooses) {
  std::mt19937 rng(7);
  std::vector<Node> nodes;
  for (int i = 0; i < 60; ++i) {
    switch (i % 4) {
      case 0:
        nodes.push_back(MakeA10Node("c" + std::to_string(i), 4, 16));
        break;
      case 1:
        nodes.push_back(MakeA10Node("t" + std::to_string(i), 8, 32, 4, {"tensor_core"}));
        break;
      case 2:
        nodes.push_back(
            MakeA10Node("l" + std::to_string(i), 8, 32, 2, {"tensor_core", "low_latency"}));
        break;
      default:
        nodes.push_back(MakeA10Node("s" + std::to_string(i), 2, 8));
        break;
    }
  }
  nodes[5].state = spec::NodeState::kDrained;
  Ledger ledger;
  ledger.SetNodes(nodes, false);
  std::vector<std::vector<int>> busy(nodes.size());
  struct Held {
    size_t node;
    Request req;
    std::vector<int> gpus;
  };
  std::vector<Held> held;
  const std::vector<Request> kinds = {
      {500, 1LL << 30, 0, {}, std::nullopt},
      {2000, 4LL << 30, 0, {}, std::nullopt},
      {1000, 2LL << 30, 1, {"tensor_core"}, std::nullopt},
      {1000, 2LL << 30, 2, {"low_latency"}, std::nullopt},
      {1000, 0, 1, {}, 16LL << 30},
      {1000, 0, 1, {}, 48LL << 30},  // never fits: no device has 48 GiB
  };
  int placed = 0, refused = 0;
  for (int step = 0; step < 3000; ++step) {
    if (!held.empty() && rng() % 3 == 0) {
      size_t k = rng() % held.size();
      Held h = held[k];
      held.erase(held.begin() + long(k));
      ledger.Release(nodes[h.node].name, h.req, h.gpus);
      Node& n = nodes[h.node];
      n.used_cpu_millis -= h.req.cpu_millis;
      n.used_memory_bytes -= h.req.memory_bytes;
      n.used_gpus -= h.req.gpus;
      for (int g : h.gpus)
        busy[h.node].erase(std::find(busy[h.node].begin(), busy[h.node].end(), g));
      continue;
    }
    const Request& req = kinds[rng() % kinds.size()];
    Placement want = Place(nodes, req, busy);
    Placement got = ledger.Choose(req);
    ASSERT_EQ(got.node, want.node) << "step " << step;
    ASSERT_EQ(got.gpu_indices, want.gpu_indices) << "step " << step;
    if (got.node.empty()) {
      ++refused;
      EXPECT_FALSE(ledger.WhyNotNow(req).empty());
      continue;
    }
    ++placed;
    size_t i = 0;
    while (nodes[i].name != got.node) ++i;
    ledger.Hold(got.node, req, got.gpu_indices);
    nodes[i].used_cpu_millis += req.cpu_millis;
    nodes[i].used_memory_bytes += req.memory_bytes;
    nodes[i].used_gpus += req.gpus;
    busy[i].insert(busy[i].end(), got.gpu_indices.begin(), got.gpu_indices.end());
    held.push_back({i, req, got.gpu_indices});
  }
  EXPECT_GT(placed, 500);
  EXPECT_GT(refused, 100);
}

TEST(LedgerTest, RefusalsAreSummarizedByReason) {
  std::vector<Node> nodes;
  for (int i = 0; i < 10; ++i)
    nodes.push_back(MakeA10Node("n" + std::to_string(i), 8, 32, 2, {"tensor_core"}));
  nodes.push_back(MakeA10Node("lat", 8, 32, 1, {"low_latency"}));
  nodes.push_back(MakeA10Node("down", 8, 32, 1, {"low_latency"}));
  nodes.back().state = spec::NodeState::kDown;
  Ledger ledger;
  ledger.SetNodes(nodes, false);
  Request req{1000, 0, 1, {"low_latency"}, std::nullopt};
  ledger.Hold("lat", Request{0, 0, 1, {}, std::nullopt}, {0});
  EXPECT_EQ(ledger.Choose(req).node, "");
  EXPECT_EQ(ledger.WhyNotNow(req),
            "10 nodes (n0, n1, n2, ...): no GPU with capability low_latency; lat: gpu 1 > free; "
            "down: node is Down");
  EXPECT_EQ(WhyNeverFits(nodes, Request{0, 0, 1, {"fp8"}, std::nullopt}),
            "12 nodes (n0, n1, n2, ...): no GPU with capability fp8");
  ledger.Release("lat", Request{0, 0, 1, {}, std::nullopt}, {0});
  EXPECT_EQ(ledger.Choose(req).node, "lat");
  EXPECT_EQ(ledger.WhyNotNow(req), "");
}

TEST(LedgerTest, ManyReasonsAreCapped) {
  std::vector<Misfit> m;
  for (int i = 0; i < 9; ++i) m.push_back({"n" + std::to_string(i), "reason " + std::to_string(i)});
  EXPECT_EQ(SummarizeMisfits(m),
            "n0: reason 0; n1: reason 1; n2: reason 2; n3: reason 3; n4: reason 4; n5: reason 5; "
            "and 3 more node(s)");
}

// A refreshed inventory keeps what is held on nodes that stay; nodes that left are forgotten,
// and a release on them is ignored.
TEST(LedgerTest, RefreshKeepsHoldsOfNodesThatStay) {
  Ledger ledger;
  ledger.SetNodes({MakeA10Node("a", 4, 8, 2), MakeA10Node("b", 4, 8)}, false);
  Request two{2000, 1LL << 30, 1, {}, std::nullopt};
  Placement p = ledger.Choose(two);
  ASSERT_EQ(p.node, "a");  // ties go to the first node
  ledger.Hold("a", two, p.gpu_indices);
  EXPECT_EQ(ledger.MaxFreeCpu(), 4000);
  ledger.SetNodes({MakeA10Node("c", 4, 8), MakeA10Node("a", 4, 8, 2)}, true);
  ASSERT_NE(ledger.Find("a"), nullptr);
  EXPECT_EQ(ledger.Find("a")->used_cpu_millis, 2000);
  EXPECT_EQ(ledger.Find("a")->used_gpus, 1);
  EXPECT_EQ(ledger.Find("b"), nullptr);
  Placement q = ledger.Choose(Request{1000, 0, 1, {}, std::nullopt});
  EXPECT_EQ(q.node, "a");
  EXPECT_EQ(q.gpu_indices, (std::vector<int>{1}));  // device 0 is still held
  EXPECT_EQ(ledger.Choose(Request{1000, 0, 0, {}, std::nullopt}).node, "c");  // least loaded
  ledger.Release("b", two, {});                                               // left: ignored
  ledger.Release("a", two, p.gpu_indices);
  EXPECT_EQ(ledger.Find("a")->used_cpu_millis, 0);
  // Drained: not chosen, not counted in the free cpu.
  auto drained = MakeA10Node("c", 16, 8);
  drained.state = spec::NodeState::kDrained;
  ledger.SetNodes({drained, MakeA10Node("a", 4, 8, 2)}, true);
  EXPECT_EQ(ledger.MaxFreeCpu(), 4000);
  EXPECT_EQ(ledger.Choose(Request{8000, 0, 0, {}, std::nullopt}).node, "");
  EXPECT_EQ(ledger.WhyNotNow(Request{8000, 0, 0, {}, std::nullopt}),
            "c: node is Drained; a: cpu 8 > free");
}

}  // namespace
}  // namespace rsl::sched
