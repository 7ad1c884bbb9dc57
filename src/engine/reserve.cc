// Placement bookkeeping on the loop thread: what a step asks for, reserving a node (and GPU
// devices) for it through the ledger (sched/ledger.h), and giving them back when its attempt
// ends.
#include <algorithm>

#include "base/strings.h"
#include "engine/engine_internal.h"
#include "sched/ledger.h"

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
  sched::Request req = RequestFor(r->workload->pipeline.steps[size_t(i)]);
  sched::Placement p = ledger_.Choose(req);
  if (p.node.empty()) {
    if (why) *why = ledger_.WhyNotNow(req);
    return false;
  }
  if (backend_queues_) {
    // The backend's scheduler places it (and queues it while the nodes are busy): the
    // engine only knew that a node in a state to take work could run it.
    node->clear();
    gpus->clear();
    return true;
  }
  ledger_.Hold(p.node, req, p.gpu_indices);
  *node = p.node;
  *gpus = p.gpu_indices;
  r->slots[size_t(i)].gpus = p.gpu_indices;
  return true;
}

void Engine::Impl::Release(RunState* r, int i) {
  if (backend_queues_) return;  // nothing was held (Reserve)
  const backend::LaunchSpec& l = r->slots[size_t(i)].launch;
  sched::Request req = RequestFor(r->workload->pipeline.steps[size_t(i)]);
  ledger_.Release(l.node, req, r->slots[size_t(i)].gpus);
  r->slots[size_t(i)].gpus.clear();
}

}  // namespace rsl::engine
