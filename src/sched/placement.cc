#include "sched/placement.h"

#include <algorithm>

#include "base/strings.h"

namespace rsl::sched {
namespace {

std::string Cpu(int64_t m) {
  return m % 1000 == 0 ? std::to_string(m / 1000) : std::to_string(m) + "m";
}
std::string Mem(int64_t b) {
  constexpr int64_t kMi = 1024 * 1024;
  return b % kMi == 0 ? std::to_string(b / kMi) + "Mi" : std::to_string(b);
}

bool DeviceFits(const Device& d, const Request& req, std::string* why) {
  for (const auto& cap : req.gpu_capabilities) {
    if (std::find(d.capabilities.begin(), d.capabilities.end(), cap) == d.capabilities.end()) {
      if (why) *why = "no GPU with capability " + cap;
      return false;
    }
  }
  if (req.gpu_memory_bytes && d.memory_bytes < *req.gpu_memory_bytes) {
    if (why) *why = "no GPU with " + Mem(*req.gpu_memory_bytes) + " of memory";
    return false;
  }
  return true;
}

// Checks `n` against `req`; with `now` the node's current use and state count (a node not
// Ready, e.g. drained, may be again). Fills `gpus` with the chosen free device indices.
bool Fits(const Node& n, const Request& req, bool now, const std::vector<int>& busy,
          std::vector<int>* gpus, std::string* why) {
  if (now && n.state != spec::NodeState::kReady) {
    *why = std::string("node is ") + spec::Name(n.state);
    return false;
  }
  int64_t free_cpu = n.cpu_millis - (now ? n.used_cpu_millis : 0);
  int64_t free_mem = n.memory_bytes - (now ? n.used_memory_bytes : 0);
  if (req.cpu_millis > free_cpu) {
    *why = now ? "cpu " + Cpu(req.cpu_millis) + " > " + Cpu(free_cpu) + " free"
               : "cpu " + Cpu(req.cpu_millis) + " > " + Cpu(n.cpu_millis);
    return false;
  }
  if (req.memory_bytes > free_mem) {
    *why = now ? "memory " + Mem(req.memory_bytes) + " > " + Mem(free_mem) + " free"
               : "memory " + Mem(req.memory_bytes) + " > " + Mem(n.memory_bytes);
    return false;
  }
  if (req.gpus == 0) return true;
  std::string device_why;
  int64_t suitable = 0;
  std::vector<int> chosen;
  for (size_t i = 0; i < n.gpus.size(); ++i) {
    std::string w;
    if (!DeviceFits(n.gpus[i], req, &w)) {
      device_why = w;
      continue;
    }
    ++suitable;
    if (now && std::find(busy.begin(), busy.end(), static_cast<int>(i)) != busy.end()) continue;
    if (static_cast<int64_t>(chosen.size()) < req.gpus) chosen.push_back(static_cast<int>(i));
  }
  if (suitable < req.gpus) {
    if (suitable == 0 && !device_why.empty()) {
      *why = device_why;
    } else {
      *why = "gpu " + std::to_string(req.gpus) + " > " + std::to_string(suitable);
      if (!req.gpu_capabilities.empty()) *why += " with " + Join(req.gpu_capabilities, ", ");
    }
    return false;
  }
  if (now && static_cast<int64_t>(chosen.size()) < req.gpus) {
    *why = "gpu " + std::to_string(req.gpus) + " > " + std::to_string(chosen.size()) + " free";
    return false;
  }
  if (gpus) *gpus = chosen;
  return true;
}

}  // namespace

double Load(const Node& n) {
  double load = 0;
  if (n.cpu_millis > 0) load = std::max(load, double(n.used_cpu_millis) / double(n.cpu_millis));
  if (n.memory_bytes > 0) {
    load = std::max(load, double(n.used_memory_bytes) / double(n.memory_bytes));
  }
  if (!n.gpus.empty()) load = std::max(load, double(n.used_gpus) / double(n.gpus.size()));
  return load;
}

std::string WhyNeverFits(const std::vector<Node>& nodes, const Request& req) {
  if (nodes.empty()) return "no nodes";
  std::vector<std::string> reasons;
  for (const Node& n : nodes) {
    std::string why;
    if (Fits(n, req, /*now=*/false, {}, nullptr, &why)) return "";
    reasons.push_back(n.name + ": " + why);
  }
  return Join(reasons, "; ");
}

Placement Place(const std::vector<Node>& nodes, const Request& req,
                const std::vector<std::vector<int>>& gpus_in_use) {
  Placement best;
  double best_load = 2.0;
  static const std::vector<int> kNone;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::vector<int>& busy = i < gpus_in_use.size() ? gpus_in_use[i] : kNone;
    std::vector<int> gpus;
    std::string why;
    if (!Fits(nodes[i], req, /*now=*/true, busy, &gpus, &why)) {
      best.misfits.push_back({nodes[i].name, why});
      continue;
    }
    double load = Load(nodes[i]);
    if (load < best_load) {  // ties keep the first node: stable, predictable
      best_load = load;
      best.node = nodes[i].name;
      best.gpu_indices = gpus;
    }
  }
  return best;
}

}  // namespace rsl::sched
