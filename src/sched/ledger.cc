#include "sched/ledger.h"

#include <algorithm>
#include <limits>

namespace rsl::sched {
namespace {

// Nodes of one shape share a class: same capacity and the same devices in the same order.
std::string ShapeKey(const Node& n) {
  std::string key = std::to_string(n.cpu_millis) + "/" + std::to_string(n.memory_bytes);
  for (const Device& d : n.gpus) {
    key += "|" + std::to_string(d.memory_bytes);
    for (const auto& c : d.capabilities) key += "," + c;
  }
  return key;
}

std::vector<int> Held(const std::vector<char>& busy) {
  std::vector<int> held;
  for (size_t g = 0; g < busy.size(); ++g) {
    if (busy[g]) held.push_back(static_cast<int>(g));
  }
  return held;
}

}  // namespace

void Ledger::SetNodes(std::vector<Node> nodes, bool keep_usage) {
  std::vector<std::vector<char>> busy(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    busy[i].assign(nodes[i].gpus.size(), 0);
    if (!keep_usage) continue;
    const Node* old = Find(nodes[i].name);
    if (old == nullptr) continue;
    const auto& old_busy = busy_[size_t(by_name_.at(nodes[i].name))];
    nodes[i].used_cpu_millis = old->used_cpu_millis;
    nodes[i].used_memory_bytes = old->used_memory_bytes;
    nodes[i].used_gpus = old->used_gpus;
    for (size_t g = 0; g < old_busy.size() && g < busy[i].size(); ++g) busy[i][g] = old_busy[g];
  }
  nodes_ = std::move(nodes);
  busy_ = std::move(busy);
  by_name_.clear();
  classes_.clear();
  free_cpu_.clear();
  class_of_.assign(nodes_.size(), -1);
  load_.assign(nodes_.size(), 0);
  std::unordered_map<std::string, int> shapes;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    by_name_.emplace(nodes_[i].name, static_cast<int>(i));
    auto [it, fresh] = shapes.try_emplace(ShapeKey(nodes_[i]), static_cast<int>(classes_.size()));
    if (fresh) classes_.push_back(Class{&nodes_[i], {}});
    class_of_[i] = it->second;
    Index(static_cast<int>(i));
  }
}

const Node* Ledger::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &nodes_[size_t(it->second)];
}

void Ledger::Index(int i) {
  const Node& n = nodes_[size_t(i)];
  if (n.state != spec::NodeState::kReady) return;
  load_[size_t(i)] = Load(n);
  classes_[size_t(class_of_[size_t(i)])].by_load.emplace(load_[size_t(i)], i);
  free_cpu_.insert(n.cpu_millis - n.used_cpu_millis);
}

void Ledger::Unindex(int i) {
  const Node& n = nodes_[size_t(i)];
  if (n.state != spec::NodeState::kReady) return;
  classes_[size_t(class_of_[size_t(i)])].by_load.erase({load_[size_t(i)], i});
  auto it = free_cpu_.find(n.cpu_millis - n.used_cpu_millis);
  if (it != free_cpu_.end()) free_cpu_.erase(it);
}

Placement Ledger::Choose(const Request& req) const {
  Placement best;
  double best_load = 2.0;
  int best_i = std::numeric_limits<int>::max();
  std::vector<int> suitable;
  for (const Class& c : classes_) {
    if (c.by_load.empty()) continue;
    const Node& shape = *c.shape;
    if (shape.cpu_millis < req.cpu_millis || shape.memory_bytes < req.memory_bytes) continue;
    suitable.clear();
    if (req.gpus > 0) {
      for (size_t g = 0; g < shape.gpus.size(); ++g) {
        const Device& d = shape.gpus[g];
        bool fits = !(req.gpu_memory_bytes && d.memory_bytes < *req.gpu_memory_bytes);
        for (const auto& cap : req.gpu_capabilities) {
          fits = fits && std::find(d.capabilities.begin(), d.capabilities.end(), cap) !=
                             d.capabilities.end();
        }
        if (fits) suitable.push_back(static_cast<int>(g));
      }
      if (static_cast<int64_t>(suitable.size()) < req.gpus) continue;
    }
    for (const auto& [load, i] : c.by_load) {
      // Nothing later in this class can beat the best: same or more load, later in order.
      if (load > best_load || (load == best_load && i > best_i)) break;
      const Node& n = nodes_[size_t(i)];
      if (n.cpu_millis - n.used_cpu_millis < req.cpu_millis) continue;
      if (n.memory_bytes - n.used_memory_bytes < req.memory_bytes) continue;
      std::vector<int> chosen;
      for (int g : suitable) {
        if (static_cast<int64_t>(chosen.size()) == req.gpus) break;
        if (!busy_[size_t(i)][size_t(g)]) chosen.push_back(g);
      }
      if (static_cast<int64_t>(chosen.size()) < req.gpus) continue;
      best_load = load;
      best_i = i;
      best.node = n.name;
      best.gpu_indices = std::move(chosen);
      break;
    }
  }
  return best;
}

void Ledger::Hold(const std::string& node, const Request& req, const std::vector<int>& gpus) {
  Adjust(node, req, gpus, +1);
}

void Ledger::Release(const std::string& node, const Request& req, const std::vector<int>& gpus) {
  Adjust(node, req, gpus, -1);
}

void Ledger::Adjust(const std::string& node, const Request& req, const std::vector<int>& gpus,
                    int sign) {
  auto it = by_name_.find(node);
  if (it == by_name_.end()) return;
  int i = it->second;
  Unindex(i);
  Node& n = nodes_[size_t(i)];
  n.used_cpu_millis += sign * req.cpu_millis;
  n.used_memory_bytes += sign * req.memory_bytes;
  n.used_gpus += sign * req.gpus;
  for (int g : gpus) {
    if (g >= 0 && size_t(g) < busy_[size_t(i)].size()) busy_[size_t(i)][size_t(g)] = sign > 0;
  }
  Index(i);
}

std::string Ledger::WhyNotNow(const Request& req) const {
  if (nodes_.empty()) return "no nodes";
  std::vector<Misfit> misfits;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::string why;
    if (Fits(nodes_[i], req, /*now=*/true, Held(busy_[i]), nullptr, &why)) return "";
    misfits.push_back({nodes_[i].name, why});
  }
  return SummarizeMisfits(misfits);
}

int64_t Ledger::MaxFreeCpu() const { return free_cpu_.empty() ? 0 : *free_cpu_.rbegin(); }

}  // namespace rsl::sched
