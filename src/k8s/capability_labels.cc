#include "k8s/capability_labels.h"

#include <algorithm>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "k8s/codes.h"
#include "k8s/names.h"
#include "spec/names.h"
#include "spec/yaml_load.h"

namespace rsl::k8s {

namespace {

// GFD's label values, as it writes them: the product is nvidia-smi's name with spaces turned
// into '-' (MIG-enabled nodes append "-MIG-<profile>", which these lists do not name: override
// them where a cluster runs MIG); the family is the architecture's lower-case name.
const std::vector<std::string> kFp64Products = {
    "NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-PCIE-40GB",
    "NVIDIA-A100-80GB-PCIe", "NVIDIA-A800-SXM4-80GB", "NVIDIA-A800-80GB-PCIe",
    "NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe",      "NVIDIA-H100-NVL",
    "Tesla-V100-SXM2-16GB",  "Tesla-V100-SXM2-32GB",  "Tesla-V100-PCIE-16GB",
    "Tesla-V100-PCIE-32GB"};
// NVLink between the GPUs of a node: the SXM boards (PCIe cards have at most a bridge pair).
const std::vector<std::string> kNvlinkProducts = {"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB",
                                                  "NVIDIA-A800-SXM4-80GB", "NVIDIA-H100-80GB-HBM3",
                                                  "Tesla-V100-SXM2-16GB",  "Tesla-V100-SXM2-32GB"};

constexpr char kComputeMajor[] = "nvidia.com/gpu.compute.major";
constexpr char kFamily[] = "nvidia.com/gpu.family";
constexpr char kProduct[] = "nvidia.com/gpu.product";

// Compute capability majors: Volta 7.0 (first tensor cores), Turing 7.5, Ampere 8.0/8.6, Ada
// 8.9, Hopper 9.0. "Gt 6" = Volta and later, "Gt 7" = Ampere and later, "Gt 8" = Hopper and later.
NodeRequirement Major(int greater_than) {
  return {kComputeMajor, "Gt", {std::to_string(greater_than)}};
}

Error TableError(const std::string& file, const YAML::Node& node, const std::string& msg,
                 const std::string& value, const std::string& hint) {
  Error e(codes::kK8sLabelTableInvalid, msg);
  e.pos.file = file;
  e.pos.line = node.Mark().line + 1;
  e.pos.column = node.Mark().column + 1;
  e.value = value;
  e.hint = hint;
  return e;
}

bool IsInteger(const std::string& s) {
  size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  return i < s.size() &&
         std::all_of(s.begin() + long(i), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Result<NodeRequirement> ParseRequirement(const std::string& file, const std::string& cap,
                                         const YAML::Node& node) {
  const std::string example = "{key: nvidia.com/gpu.family, operator: In, values: [hopper]}";
  if (!node.IsMap()) {
    return TableError(file, node, "capability " + Quote(cap) + " needs a mapping", cap, example);
  }
  NodeRequirement r;
  for (const auto& kv : node) {
    std::string field = kv.first.Scalar();
    if (field == "key" && kv.second.IsScalar()) {
      r.key = kv.second.Scalar();
    } else if (field == "operator" && kv.second.IsScalar()) {
      r.op = kv.second.Scalar();
    } else if (field == "values" && kv.second.IsSequence()) {
      for (const auto& v : kv.second) {
        if (!v.IsScalar()) {
          return TableError(file, v, "values of " + Quote(cap) + " must be strings", cap, example);
        }
        r.values.push_back(v.Scalar());
      }
    } else {
      return TableError(file, kv.first, "unknown or malformed field " + Quote(field), field,
                        "fields: key (string), operator (string), values (list of strings)");
    }
  }
  if (!spec::CheckLabelKey(r.key).empty()) {
    return TableError(file, node["key"] ? node["key"] : node,
                      "capability " + Quote(cap) + ": key is not a valid label key", r.key,
                      "a label key such as nvidia.com/gpu.product");
  }
  static const std::vector<std::string> kOps = {"In",           "NotIn", "Exists",
                                                "DoesNotExist", "Gt",    "Lt"};
  if (std::find(kOps.begin(), kOps.end(), r.op) == kOps.end()) {
    return TableError(file, node["operator"] ? node["operator"] : node,
                      "capability " + Quote(cap) + ": unknown operator", r.op,
                      "one of In, NotIn, Exists, DoesNotExist, Gt, Lt");
  }
  const YAML::Node at = node["values"] ? node["values"] : node;
  if ((r.op == "In" || r.op == "NotIn") && r.values.empty()) {
    return TableError(file, at, "capability " + Quote(cap) + ": " + r.op + " needs values", r.op,
                      "values: [hopper, blackwell]");
  }
  if ((r.op == "Exists" || r.op == "DoesNotExist") && !r.values.empty()) {
    return TableError(file, at, "capability " + Quote(cap) + ": " + r.op + " takes no values",
                      Join(r.values, ","), "remove `values`");
  }
  if ((r.op == "Gt" || r.op == "Lt") && (r.values.size() != 1 || !IsInteger(r.values[0]))) {
    return TableError(file, at, "capability " + Quote(cap) + ": " + r.op + " needs one integer",
                      Join(r.values, ","), "values: [\"7\"]");
  }
  for (const auto& v : r.values) {
    if (!IsLabelValue(v)) {
      return TableError(file, at, "capability " + Quote(cap) + ": not a valid label value", v,
                        "at most 63 of A-Z a-z 0-9 . _ -, starting and ending alphanumeric");
    }
  }
  return r;
}

}  // namespace

CapabilityLabels CapabilityLabels::Defaults() {
  CapabilityLabels t;
  auto& m = t.by_capability_;
  m["tensor_core"] = Major(6);
  m["fp16_support"] = Major(6);
  m["int8_support"] = Major(6);
  m["low_latency"] = Major(6);  // the catalog gives every model it knows a score
  m["bf16_support"] = Major(7);
  m["tf32_support"] = Major(7);
  m["sparsity"] = Major(7);
  m["transformer_engine"] = Major(8);
  // Ada (8.9) has fp8 but shares major 8 with Ampere: the family tells them apart.
  m["fp8_support"] = {kFamily, "In", {"ada-lovelace", "hopper", "blackwell"}};
  m["fp64_support"] = {kProduct, "In", kFp64Products};
  m["nvlink"] = {kProduct, "In", kNvlinkProducts};
  // 40 GiB cards report 40960 MiB (40536 with older drivers): "more than 39999".
  m["high_memory"] = {kGfdMemoryLabel, "Gt", {"39999"}};
  m["mig"] = {"nvidia.com/mig.capable", "In", {"true"}};
  m["video_codec"] = {kProduct, "In", {"NVIDIA-L4", "Tesla-T4", "NVIDIA-A10"}};
  return t;
}

Result<CapabilityLabels> CapabilityLabels::Parse(const std::string& text, const std::string& file) {
  auto loaded = spec::LoadYaml(text, file);
  if (!loaded.ok()) {
    Error e = loaded.error();
    e.code = codes::kK8sLabelTableInvalid;
    return e;
  }
  const YAML::Node root = *loaded;
  const std::string shape =
      "capabilityLabels: {tensor_core: {key: ..., operator: Gt, values: [\"6\"]}}";
  if (!root.IsMap()) {
    return TableError(file, root, "a capability label table must be a mapping", "", shape);
  }
  CapabilityLabels t = Defaults();
  for (const auto& kv : root) {
    std::string field = kv.first.Scalar();
    if (field == "gpuMemoryLabel") {
      std::string key = kv.second.IsScalar() ? kv.second.Scalar() : "";
      if (!spec::CheckLabelKey(key).empty()) {
        return TableError(file, kv.second, "gpuMemoryLabel is not a valid label key", key,
                          "a label key such as nvidia.com/gpu.memory");
      }
      t.gpu_memory_label_ = key;
    } else if (field == "capabilityLabels" && kv.second.IsMap()) {
      for (const auto& entry : kv.second) {
        std::string cap = entry.first.Scalar();
        auto req = ParseRequirement(file, cap, entry.second);
        if (!req.ok()) return req.error();
        t.by_capability_[cap] = *req;
      }
    } else {
      return TableError(file, kv.first, "unknown or malformed field " + Quote(field), field,
                        "fields: capabilityLabels (a mapping), gpuMemoryLabel (a label key)");
    }
  }
  return t;
}

Result<CapabilityLabels> CapabilityLabels::Load(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  return Parse(*text, path);
}

const NodeRequirement* CapabilityLabels::Find(const std::string& capability) const {
  auto it = by_capability_.find(capability);
  return it == by_capability_.end() ? nullptr : &it->second;
}

std::vector<std::string> CapabilityLabels::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, unused] : by_capability_) names.push_back(name);
  return names;
}

}  // namespace rsl::k8s
