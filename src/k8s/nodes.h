#pragma once

// Kubernetes nodes as the scheduler's inventory (sched/node.h): allocatable cpu, memory and
// `nvidia.com/gpu`, the Ready condition (and spec.unschedulable: cordoned = Drained), labels,
// and capabilities read from labels.
//
// Labels -> capabilities go through one table, LabelCapabilities, a map from a label selector
// term to a capability name:
//   "KEY=VALUE" -> the node has label KEY with exactly VALUE;
//   "KEY"       -> the node has label KEY with any value but "false".
// It is the inverse of the renderer's capability -> label table; DefaultLabelCapabilities()
// holds the NVIDIA GPU feature discovery defaults. GPUs are Devices whose model is
// `nvidia.com/gpu.product` (and memory `nvidia.com/gpu.memory`, MiB), with the capability
// catalog's capabilities for that model (sched::CatalogCapabilities).

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "k8s/api_client.h"
#include "sched/node.h"

namespace rsl::k8s {

using LabelCapabilities = std::map<std::string, std::string>;

//! nvidia.com/gpu.compute.major=8 -> compute_capability_8 and the like, plus
//! feature.node.kubernetes.io/... defaults; docs/backends/k8s.md lists them.
LabelCapabilities DefaultLabelCapabilities();

//! One Node object. Errors: K8S_API_ERROR for a quantity that does not parse (the field path
//! `status.allocatable.cpu` and the value).
Result<sched::Node> NodeFromJson(const nlohmann::json& node, const LabelCapabilities& table);

//! A NodeList.
Result<std::vector<sched::Node>> NodesFromList(const nlohmann::json& list,
                                               const LabelCapabilities& table);

//! GET /api/v1/nodes (optionally `label_selector`) and NodesFromList.
Result<std::vector<sched::Node>> ListNodes(ApiClient* client, const LabelCapabilities& table,
                                           const std::string& label_selector = "");

}  // namespace rsl::k8s
