// Placements per second on a synthetic cluster: N nodes of 8 GPUs (a quarter of them with
// low_latency devices, a tenth CPU-only), a mixed request stream (CPU-only, GPU with
// capabilities, GPU memory), each placement held and released again after 2,000 more (a busy
// cluster in a steady state). Compares sched::Ledger (the engine's) with sched::Place (the
// linear scan the engine used before, which explains every node it refuses).
//
//   rsl-placement-bench NODES [PLACEMENTS] [--scan]
// Prints `ledger placements/s <x>` (and `scan placements/s <y>` with --scan).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "sched/ledger.h"
#include "sched/placement.h"

using namespace rsl::sched;

namespace {

std::vector<Node> Cluster(int n) {
  std::vector<Node> nodes;
  nodes.reserve(size_t(n));
  for (int i = 0; i < n; ++i) {
    Node node;
    node.name = "node-" + std::to_string(i);
    node.cpu_millis = (i % 3 == 0 ? 64 : 32) * 1000;
    node.memory_bytes = int64_t(i % 3 == 0 ? 512 : 256) << 30;
    if (i % 10 != 9) {
      for (int g = 0; g < 8; ++g) {
        Device d;
        d.model = i % 4 == 0 ? "L4" : "A100";
        d.memory_bytes = int64_t(i % 4 == 0 ? 24 : 80) << 30;
        d.capabilities = {"tensor_core", "fp16_support"};
        if (i % 4 == 0) d.capabilities.push_back("low_latency");
        node.gpus.push_back(d);
      }
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

std::vector<Request> Requests() {
  return {
      {2000, 4LL << 30, 0, {}, std::nullopt},                      // CPU only
      {4000, 16LL << 30, 1, {"tensor_core"}, std::nullopt},        // a GPU
      {8000, 64LL << 30, 2, {"low_latency"}, std::nullopt},        // capability a quarter has
      {4000, 32LL << 30, 1, {"fp16_support"}, int64_t(40) << 30},  // device memory
      {16000, 128LL << 30, 4, {"tensor_core"}, std::nullopt},      // a big one
  };
}

struct Held {
  std::string node;
  Request req;
  std::vector<int> gpus;
};

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double RunLedger(int n, int placements) {
  Ledger ledger;
  ledger.SetNodes(Cluster(n), false);
  auto reqs = Requests();
  std::deque<Held> held;
  int placed = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < placements; ++k) {
    const Request& r = reqs[size_t(k) % reqs.size()];
    Placement p = ledger.Choose(r);
    if (!p.node.empty()) {
      ledger.Hold(p.node, r, p.gpu_indices);
      held.push_back({p.node, r, p.gpu_indices});
      ++placed;
    }
    if (held.size() > 2000) {
      ledger.Release(held.front().node, held.front().req, held.front().gpus);
      held.pop_front();
    }
  }
  double s = Seconds(t0);
  if (placed < placements / 2) std::fprintf(stderr, "ledger placed only %d\n", placed);
  return placements / s;
}

double RunScan(int n, int placements) {
  std::vector<Node> nodes = Cluster(n);
  std::vector<std::vector<int>> busy(nodes.size());
  auto reqs = Requests();
  struct HeldAt {
    size_t i;
    Request req;
    std::vector<int> gpus;
  };
  std::deque<HeldAt> held;
  auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < placements; ++k) {
    const Request& r = reqs[size_t(k) % reqs.size()];
    Placement p = Place(nodes, r, busy);
    if (!p.node.empty()) {
      size_t i = size_t(std::atoi(p.node.c_str() + 5));
      nodes[i].used_cpu_millis += r.cpu_millis;
      nodes[i].used_memory_bytes += r.memory_bytes;
      nodes[i].used_gpus += r.gpus;
      busy[i].insert(busy[i].end(), p.gpu_indices.begin(), p.gpu_indices.end());
      held.push_back({i, r, p.gpu_indices});
    }
    if (held.size() > 2000) {
      HeldAt h = held.front();
      held.pop_front();
      nodes[h.i].used_cpu_millis -= h.req.cpu_millis;
      nodes[h.i].used_memory_bytes -= h.req.memory_bytes;
      nodes[h.i].used_gpus -= h.req.gpus;
      for (int g : h.gpus) {
        for (auto it = busy[h.i].begin(); it != busy[h.i].end(); ++it) {
          if (*it == g) {
            busy[h.i].erase(it);
            break;
          }
        }
      }
    }
  }
  return placements / Seconds(t0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rsl-placement-bench NODES [PLACEMENTS] [--scan]\n");
    return 2;
  }
  int n = std::atoi(argv[1]);
  int placements = argc > 2 && argv[2][0] != '-' ? std::atoi(argv[2]) : 100000;
  bool scan = std::strcmp(argv[argc - 1], "--scan") == 0;
  std::printf("ledger placements/s %.0f\n", RunLedger(n, placements));
  if (scan) {
    int few = placements / 100 > 200 ? placements / 100 : 200;
    std::printf("scan placements/s %.0f\n", RunScan(n, few));
  }
  return 0;
}
