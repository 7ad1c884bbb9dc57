#pragma once

// The capability -> node label table: how a GPU capability a step requests
// (`resources.gpu.capability`, spec/capabilities.h) becomes a required node-affinity term on
// Kubernetes. Each capability maps to one NodeSelectorRequirement over a node label; a step's
// capabilities are ANDed in one term. The defaults read the labels NVIDIA GPU feature discovery
// (GFD) puts on GPU nodes (`nvidia.com/gpu.product`, `nvidia.com/gpu.family`,
// `nvidia.com/gpu.compute.major`, `nvidia.com/gpu.memory` in MiB, `nvidia.com/mig.capable`), and
// cover every capability of the built-in catalog. An operator's file overrides or adds entries:
//
//   capabilityLabels:
//     fp8_support: {key: nvidia.com/gpu.family, operator: In, values: [hopper, blackwell]}
//     fast_interconnect: {key: example.com/fabric, operator: Exists}
//   gpuMemoryLabel: nvidia.com/gpu.memory     # optional: the label `gpu.memory` is compared with
//
// A capability the table does not map is an error when a step asks for it
// (K8S_CAPABILITY_UNMAPPED), never silently dropped.

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::k8s {

//! GFD's label of the device memory in MiB (what `resources.gpu.memory` is compared with).
inline constexpr char kGfdMemoryLabel[] = "nvidia.com/gpu.memory";
//! The extended resource NVIDIA's device plugin advertises GPUs as: a node's allocatable
//! count, a Pod's limit (and the taint key GPU nodes carry).
inline constexpr char kGpuResource[] = "nvidia.com/gpu";

//! One requirement of a node selector term (Kubernetes' NodeSelectorRequirement).
struct NodeRequirement {
  std::string key;
  std::string op;  //!< In | NotIn | Exists | DoesNotExist | Gt | Lt
  std::vector<std::string> values;
};

//! Immutable after it is built; copyable.
class CapabilityLabels {
 public:
  //! The GFD defaults: every capability of spec::CapabilityCatalog::BuiltIn().
  static CapabilityLabels Defaults();
  //! Defaults() with the entries of `text` (format above) replacing or adding. Errors:
  //! K8S_LABEL_TABLE_INVALID with file:line:col, the bad value and a hint.
  static Result<CapabilityLabels> Parse(const std::string& text, const std::string& file);
  //! Parse() of a file's contents (a missing file is IO_ERROR).
  static Result<CapabilityLabels> Load(const std::string& path);

  //! The requirement for `capability`, or null when it has none.
  const NodeRequirement* Find(const std::string& capability) const;
  //! Sorted capability names the table maps.
  std::vector<std::string> Names() const;
  const std::string& gpu_memory_label() const { return gpu_memory_label_; }

 private:
  std::map<std::string, NodeRequirement> by_capability_;
  std::string gpu_memory_label_ = kGfdMemoryLabel;
};

}  // namespace rsl::k8s
