#include "spec/workload.h"

namespace rsl::spec {

const Step* Workload::FindStep(const std::string& step_name) const {
  for (const auto& s : pipeline.steps) {
    if (s.name == step_name) return &s;
  }
  return nullptr;
}

SourcePos Workload::PosOf(const std::string& path) const {
  std::string p = path;
  while (!p.empty()) {
    auto it = positions.find(p);
    if (it != positions.end()) return it->second;
    // Strip the last component: ".key" or "[i]".
    size_t cut = p.find_last_of(".[");
    if (cut == std::string::npos) break;
    p = p.substr(0, cut);
  }
  SourcePos pos;
  pos.file = source_file;
  return pos;
}

const char* OutputPolicyName(OutputPolicy p) {
  switch (p) {
    case OutputPolicy::kRefuse:
      return "refuse";
    case OutputPolicy::kVersioned:
      return "versioned";
    default:
      return "replace";
  }
}

std::string StepPath(size_t index) { return "spec.pipeline.steps[" + std::to_string(index) + "]"; }

Resources MergeResources(const Resources& base, const Resources& over) {
  Resources out = base;
  if (over.cpu_millis) out.cpu_millis = over.cpu_millis;
  if (over.memory_bytes) out.memory_bytes = over.memory_bytes;
  if (over.gpu) {
    // Field by field inside gpu too: a step that says gpu: "2" keeps the workload's
    // capability and memory requirements.
    GpuRequest gpu = base.gpu.value_or(GpuRequest{});
    gpu.count = over.gpu->count;
    if (!over.gpu->capabilities.empty()) gpu.capabilities = over.gpu->capabilities;
    if (over.gpu->memory_bytes) gpu.memory_bytes = over.gpu->memory_bytes;
    out.gpu = gpu;
  }
  if (over.autoscaling) out.autoscaling = over.autoscaling;
  return out;
}

}  // namespace rsl::spec
