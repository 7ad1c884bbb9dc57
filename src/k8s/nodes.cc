#include "k8s/nodes.h"

#include <algorithm>

#include "base/codes.h"
#include "k8s/capability_labels.h"
#include "k8s/json_fields.h"
#include "sched/inventory.h"
#include "spec/quantity.h"

namespace rsl::k8s {

namespace {

using json = nlohmann::json;

constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";

void AddUnique(std::vector<std::string>* v, const std::string& s) {
  if (std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

}  // namespace

LabelCapabilities DefaultLabelCapabilities() {
  return {
      {"nvidia.com/gpu.compute.major=7", "compute_capability_7"},
      {"nvidia.com/gpu.compute.major=8", "compute_capability_8"},
      {"nvidia.com/gpu.compute.major=9", "compute_capability_9"},
      {"nvidia.com/mig.capable=true", "mig"},
      {"feature.node.kubernetes.io/rdma.available=true", "rdma"},
      {"feature.node.kubernetes.io/network-sriov.capable=true", "sriov"},
  };
}

Result<sched::Node> NodeFromJson(const json& node, const LabelCapabilities& table) {
  sched::Node n;
  const json& md = node.is_object() && node.contains("metadata") ? node["metadata"] : json();
  n.name = Str(md, "name");
  if (n.name.empty()) {
    return Error(codes::kK8sApiError, "a Node without metadata.name").Path("metadata.name");
  }
  auto bad = [&](const std::string& field, const std::string& v, const Error& why) {
    return Error(codes::kK8sApiError, "node " + n.name + ": " + why.message)
        .Path("status.allocatable." + field)
        .Value(v);
  };
  if (md.is_object() && md.contains("labels") && md["labels"].is_object()) {
    for (const auto& [k, v] : md["labels"].items()) {
      if (v.is_string()) n.labels[k] = v.get<std::string>();
    }
  }
  const json& status = node.is_object() && node.contains("status") ? node["status"] : json();
  const json& alloc =
      status.is_object() && status.contains("allocatable") ? status["allocatable"] : json::object();
  if (std::string cpu = Str(alloc, "cpu"); !cpu.empty()) {
    auto m = spec::ParseCpuMillis(cpu);
    if (!m.ok()) return bad("cpu", cpu, m.error());
    n.cpu_millis = *m;
  }
  if (std::string mem = Str(alloc, "memory"); !mem.empty()) {
    auto b = spec::ParseBytes(mem);
    if (!b.ok()) return bad("memory", mem, b.error());
    n.memory_bytes = *b;
  }
  int64_t gpus = 0;
  if (std::string g = Str(alloc, kGpuResource); !g.empty()) {
    auto b = spec::ParseBytes(g);  // a plain count; ParseBytes reads integers and suffixes
    if (!b.ok()) return bad(kGpuResource, g, b.error());
    gpus = *b;
  }
  std::string model = n.labels.count(kGpuProductLabel) ? n.labels[kGpuProductLabel] : "";
  int64_t gpu_mem = 0;
  if (n.labels.count(kGfdMemoryLabel)) {
    auto mib = spec::ParseBytes(n.labels[kGfdMemoryLabel]);
    if (mib.ok()) gpu_mem = *mib * 1024 * 1024;
  }
  for (const auto& [term, capability] : table) {
    size_t eq = term.find('=');
    std::string key = term.substr(0, eq);
    auto it = n.labels.find(key);
    if (it == n.labels.end()) continue;
    bool match =
        eq == std::string::npos ? it->second != "false" : it->second == term.substr(eq + 1);
    if (match) AddUnique(&n.capabilities, capability);
  }
  for (int64_t i = 0; i < gpus; ++i) {
    sched::Device d;
    d.model = model.empty() ? "nvidia.com/gpu" : model;
    d.memory_bytes = gpu_mem;
    d.capabilities = sched::CatalogCapabilities(model);
    for (const auto& c : n.capabilities) AddUnique(&d.capabilities, c);
    d.probed = true;  // reported by the node's device plugin
    n.gpus.push_back(std::move(d));
  }
  // Ready condition: anything but Ready=True takes no new work; cordoned nodes are Drained.
  n.state = spec::NodeState::kNotReady;
  if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
    for (const auto& c : status["conditions"]) {
      if (Str(c, "type") == "Ready" && Str(c, "status") == "True")
        n.state = spec::NodeState::kReady;
    }
  }
  const json& spec = node.is_object() && node.contains("spec") ? node["spec"] : json();
  if (n.state == spec::NodeState::kReady && spec.is_object() &&
      spec.value("unschedulable", false)) {
    n.state = spec::NodeState::kDrained;
  }
  return n;
}

Result<std::vector<sched::Node>> NodesFromList(const json& list, const LabelCapabilities& table) {
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
    return Error(codes::kK8sApiError, "not a NodeList (no items)");
  }
  std::vector<sched::Node> out;
  for (size_t i = 0; i < list["items"].size(); ++i) {
    auto n = NodeFromJson(list["items"][i], table);
    if (!n.ok()) {
      Error e = n.error();
      e.path = "items[" + std::to_string(i) + "]." + e.path;
      return e;
    }
    out.push_back(std::move(*n));
  }
  return out;
}

Result<std::vector<sched::Node>> ListNodes(ApiClient* client, const LabelCapabilities& table,
                                           const std::string& label_selector) {
  std::string path = "/api/v1/nodes";
  if (!label_selector.empty()) path += "?labelSelector=" + QueryEscape(label_selector);
  auto list = client->Get(path);
  if (!list.ok()) return list.error();
  return NodesFromList(*list, table);
}

}  // namespace rsl::k8s
