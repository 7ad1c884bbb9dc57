#include "sched/placement.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

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

}  // namespace

// A node not Ready (e.g. drained) may be again, so state only counts `now`. Reasons about use
// now name the request, not what is free, so that nodes refused alike read alike.
bool Fits(const Node& n, const Request& req, bool now, const std::vector<int>& busy,
          std::vector<int>* gpus, std::string* why) {
  if (now && n.state != spec::NodeState::kReady) {
    *why = std::string("node is ") + spec::Name(n.state);
    return false;
  }
  int64_t free_cpu = n.cpu_millis - (now ? n.used_cpu_millis : 0);
  int64_t free_mem = n.memory_bytes - (now ? n.used_memory_bytes : 0);
  if (req.cpu_millis > free_cpu) {
    *why = now ? "cpu " + Cpu(req.cpu_millis) + " > free"
               : "cpu " + Cpu(req.cpu_millis) + " > " + Cpu(n.cpu_millis);
    return false;
  }
  if (req.memory_bytes > free_mem) {
    *why = now ? "memory " + Mem(req.memory_bytes) + " > free"
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
    *why = "gpu " + std::to_string(req.gpus) + " > free";
    return false;
  }
  if (gpus) *gpus = chosen;
  return true;
}

std::string SummarizeMisfits(const std::vector<Misfit>& misfits) {
  struct Group {
    size_t first = 0;  // order of first appearance breaks ties
    std::vector<const std::string*> names;
    size_t count = 0;
  };
  std::unordered_map<std::string_view, Group> groups;
  for (size_t i = 0; i < misfits.size(); ++i) {
    auto [it, fresh] = groups.try_emplace(misfits[i].reason);
    if (fresh) it->second.first = i;
    if (it->second.names.size() < 3) it->second.names.push_back(&misfits[i].node);
    it->second.count++;
  }
  std::vector<std::pair<std::string_view, const Group*>> order;
  for (const auto& [reason, g] : groups) order.emplace_back(reason, &g);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.second->count != b.second->count) return a.second->count > b.second->count;
    return a.second->first < b.second->first;
  });
  constexpr size_t kMaxReasons = 6;
  std::string out;
  size_t rest = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const Group& g = *order[k].second;
    if (k >= kMaxReasons) {
      rest += g.count;
      continue;
    }
    if (!out.empty()) out += "; ";
    std::string names;
    for (const std::string* n : g.names) names += (names.empty() ? "" : ", ") + *n;
    if (g.count > 3) {
      out += std::to_string(g.count) + " nodes (" + names + ", ...)";
    } else {
      out += names;
    }
    out += ": ";
    out += order[k].first;
  }
  if (rest > 0) out += "; and " + std::to_string(rest) + " more node(s)";
  return out;
}

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
  std::vector<Misfit> misfits;
  for (const Node& n : nodes) {
    std::string why;
    if (Fits(n, req, /*now=*/false, {}, nullptr, &why)) return "";
    misfits.push_back({n.name, why});
  }
  return SummarizeMisfits(misfits);
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
