#include "spec/capabilities.h"

#include <set>

#include <yaml-cpp/yaml.h>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "spec/yaml_merge.h"

namespace rsl::spec {

namespace {

constexpr int kMaxScore = 100;

struct BuiltInEntry {
  const char* name;
  const char* description;
  std::vector<std::pair<const char*, int>> scores;
};

// Scores are relative strengths (100 = best in class) from the vendors' data sheets: which
// architectures have the unit at all (Volta: first tensor cores, no bf16; Turing T4: int8
// inference; Ampere A100/A800/A10: bf16, tf32, sparsity, MIG on A100/A800; Ada L4: fp8;
// Hopper H100: fp8 and the transformer engine).
const std::vector<BuiltInEntry>& Entries() {
  static const std::vector<BuiltInEntry> entries = {
      {"tensor_core",
       "matrix-multiply units (Volta and later)",
       {{"H100", 100},
        {"A100", 100},
        {"A800", 100},
        {"A10", 80},
        {"L4", 80},
        {"V100", 70},
        {"T4", 60}}},
      {"fp16_support",
       "fast half-precision arithmetic",
       {{"H100", 100},
        {"A100", 100},
        {"A800", 100},
        {"A10", 90},
        {"L4", 90},
        {"V100", 80},
        {"T4", 70}}},
      {"bf16_support",
       "bfloat16 arithmetic (Ampere and later)",
       {{"H100", 100}, {"A100", 100}, {"A800", 100}, {"A10", 80}, {"L4", 80}}},
      {"tf32_support",
       "TensorFloat-32 matrix math (Ampere and later)",
       {{"H100", 100}, {"A100", 100}, {"A800", 100}, {"A10", 80}, {"L4", 80}}},
      {"fp8_support", "8-bit floating point (Ada and Hopper)", {{"H100", 100}, {"L4", 80}}},
      {"int8_support",
       "int8 inference math",
       {{"H100", 100},
        {"A100", 100},
        {"A800", 100},
        {"A10", 90},
        {"L4", 90},
        {"T4", 80},
        {"V100", 40}}},
      {"fp64_support",
       "full-rate double precision",
       {{"H100", 100}, {"A100", 90}, {"A800", 90}, {"V100", 70}}},
      {"sparsity",
       "2:4 structured sparsity acceleration",
       {{"H100", 100}, {"A100", 90}, {"A800", 90}, {"A10", 70}, {"L4", 70}}},
      {"transformer_engine", "per-layer fp8/fp16 switching (Hopper)", {{"H100", 100}}},
      {"low_latency",
       "suited to latency-sensitive online inference",
       {{"L4", 100},
        {"T4", 90},
        {"A10", 90},
        {"H100", 80},
        {"A100", 70},
        {"A800", 70},
        {"V100", 50}}},
      {"nvlink",
       "NVLink between the GPUs of a node",
       {{"H100", 100}, {"A100", 100}, {"A800", 80}, {"V100", 80}}},
      {"high_memory",
       "40 GiB or more of device memory",
       {{"H100", 100}, {"A100", 90}, {"A800", 90}}},
      {"mig", "Multi-Instance GPU partitioning", {{"H100", 100}, {"A100", 100}, {"A800", 100}}},
      {"video_codec",
       "hardware video encode/decode for media pipelines",
       {{"L4", 100}, {"T4", 90}, {"A10", 90}}},
  };
  return entries;
}

Error CatalogError(const std::string& file, const YAML::Mark& mark, const std::string& msg,
                   const std::string& hint) {
  Error e(codes::kSpecInvalid, msg);
  e.pos.file = file;
  e.pos.line = mark.line + 1;
  e.pos.column = mark.column + 1;
  e.hint = hint;
  return e;
}

}  // namespace

const CapabilityCatalog& CapabilityCatalog::BuiltIn() {
  static const CapabilityCatalog catalog = [] {
    CapabilityCatalog c;
    for (const auto& e : Entries()) {
      Capability cap;
      cap.name = e.name;
      cap.description = e.description;
      for (const auto& [model, score] : e.scores) cap.scores[model] = score;
      c.Add(cap);
    }
    return c;
  }();
  return catalog;
}

void CapabilityCatalog::Add(const Capability& capability) {
  auto [it, inserted] = by_name_.try_emplace(capability.name, capability);
  if (inserted) return;
  if (!capability.description.empty()) it->second.description = capability.description;
  for (const auto& [model, score] : capability.scores) it->second.scores[model] = score;
}

const Capability* CapabilityCatalog::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

std::vector<std::string> CapabilityCatalog::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, unused] : by_name_) names.push_back(name);
  return names;
}

std::vector<std::string> CapabilityCatalog::Models() const {
  std::set<std::string> models;
  for (const auto& [name, cap] : by_name_) {
    for (const auto& [model, unused] : cap.scores) models.insert(model);
  }
  return {models.begin(), models.end()};
}

int CapabilityCatalog::Score(const std::string& capability, const std::string& model) const {
  const Capability* cap = Find(capability);
  if (!cap) return 0;
  std::string want = ToLower(model);
  for (const auto& [m, score] : cap->scores) {
    if (ToLower(m) == want) return score;
  }
  return 0;
}

std::vector<std::string> CapabilityCatalog::CapabilitiesOf(const std::string& model) const {
  std::vector<std::string> out;
  for (const auto& [name, unused] : by_name_) {
    if (Score(name, model) > 0) out.push_back(name);
  }
  return out;
}

Result<CapabilityCatalog> CapabilityCatalog::Parse(const std::string& text,
                                                   const std::string& file) {
  CapabilityCatalog catalog = BuiltIn();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& ex) {
    return CatalogError(file, ex.mark, "capability catalog is not valid YAML/JSON: " + ex.msg,
                        "check indentation and brackets");
  }
  if (Errors errors = ResolveYaml(root, file); !errors.empty()) return errors.front();
  if (!root.IsMap() || !root["capabilities"] || !root["capabilities"].IsSequence()) {
    return CatalogError(file, root.Mark(), "a capability catalog needs a `capabilities:` list",
                        "capabilities: [{name: tensor_core, scores: {A100: 100}}]");
  }
  for (const auto& entry : root["capabilities"]) {
    if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) {
      return CatalogError(file, entry.Mark(), "each capability needs a `name`",
                          "{name: tensor_core, scores: {A100: 100}}");
    }
    Capability cap;
    cap.name = entry["name"].Scalar();
    bool valid_name = !cap.name.empty();
    for (char c : cap.name) {
      valid_name = valid_name && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
    }
    if (!valid_name) {
      return CatalogError(file, entry["name"].Mark(),
                          "capability name " + Quote(cap.name) + " is not lower_snake_case",
                          "use a-z, 0-9 and '_'");
    }
    for (const auto& kv : entry) {
      std::string key = kv.first.Scalar();
      if (key != "name" && key != "description" && key != "scores") {
        return CatalogError(file, kv.first.Mark(), "unknown field " + Quote(key),
                            "fields: name, description, scores");
      }
    }
    if (entry["description"]) cap.description = entry["description"].Scalar();
    if (const YAML::Node scores = entry["scores"]) {
      if (!scores.IsMap()) {
        return CatalogError(file, scores.Mark(), "scores must map GPU models to 1..100",
                            "scores: {A100: 100, T4: 60}");
      }
      for (const auto& kv : scores) {
        int score = -1;
        try {
          score = kv.second.as<int>();
        } catch (const YAML::Exception&) {
        }
        if (score < 0 || score > kMaxScore) {
          return CatalogError(file, kv.second.Mark(),
                              "score for " + Quote(kv.first.Scalar()) + " must be 0..100",
                              "0 means the model lacks the capability");
        }
        cap.scores[kv.first.Scalar()] = score;
      }
    }
    catalog.Add(cap);
  }
  return catalog;
}

Result<CapabilityCatalog> CapabilityCatalog::Load(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  return Parse(*text, path);
}

}  // namespace rsl::spec
