// Placement bookkeeping on the loop thread: what a step asks for, reserving a node (and GPU
// devices) for it through sched::Place, and giving them back when its attempt ends.
#include <algorithm>

#include "base/strings.h"
#include "engine/engine_internal.h"
#include "sched/placement.h"

namespace rsl::engine {

sched::Request Engine::Impl::RequestFor(const spec::Step& s) const {
  sched::Request req;
  req.cpu_millis = s.effective.cpu_millis.value_or(0);
  if (req.cpu_millis <= 0) req.cpu_millis = default_cpu_millis_;
  req.memory_bytes = s.effective.memory_bytes.value_or(0);
  if (s.effective.gpu) {
    req.gpus = s.effective.gpu->count;
    req.gpu_capabilities = s.effective.gpu->capabilities;
    req.gpu_memory_bytes = s.effective.gpu->memory_bytes;
  }
  return req;
}

bool Engine::Impl::Reserve(RunState* r, int i, std::string* node, std::vector<int>* gpus,
                           std::string* why) {
  sched::Request req = RequestFor(r->workload.pipeline.steps[size_t(i)]);
  std::vector<std::vector<int>> busy;
  for (const auto& n : nodes_) busy.push_back(gpus_busy_[n.name]);
  sched::Placement p = sched::Place(nodes_, req, busy);
  if (p.node.empty()) {
    std::vector<std::string> parts;
    for (const auto& m : p.misfits) parts.push_back(m.node + ": " + m.reason);
    *why = Join(parts, "; ");
    return false;
  }
  if (backend_queues_) {
    // The backend's scheduler places it (and queues it while the nodes are busy): the
    // engine only knew that a node in a state to take work could run it.
    node->clear();
    gpus->clear();
    return true;
  }
  for (auto& n : nodes_) {
    if (n.name != p.node) continue;
    n.used_cpu_millis += req.cpu_millis;
    n.used_memory_bytes += req.memory_bytes;
    n.used_gpus += req.gpus;
  }
  auto& held = gpus_busy_[p.node];
  held.insert(held.end(), p.gpu_indices.begin(), p.gpu_indices.end());
  *node = p.node;
  *gpus = p.gpu_indices;
  r->slots[size_t(i)].gpus = p.gpu_indices;
  return true;
}

void Engine::Impl::Release(RunState* r, int i) {
  if (backend_queues_) return;  // nothing was held (Reserve)
  const backend::LaunchSpec& l = r->slots[size_t(i)].launch;
  sched::Request req = RequestFor(r->workload.pipeline.steps[size_t(i)]);
  for (auto& n : nodes_) {
    if (n.name != l.node) continue;
    n.used_cpu_millis -= req.cpu_millis;
    n.used_memory_bytes -= req.memory_bytes;
    n.used_gpus -= req.gpus;
  }
  auto& held = gpus_busy_[l.node];
  for (int g : r->slots[size_t(i)].gpus) {
    auto it = std::find(held.begin(), held.end(), g);
    if (it != held.end()) held.erase(it);
  }
  r->slots[size_t(i)].gpus.clear();
}

}  // namespace rsl::engine
