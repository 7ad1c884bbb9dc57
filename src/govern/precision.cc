#include "govern/precision.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "base/codes.h"
#include "base/strings.h"
#include "spec/yaml_load.h"

namespace rsl::govern {

namespace {

const std::vector<std::string>& Dtypes() {
  static const std::vector<std::string> k = {"fp32", "tf32", "bf16", "fp16", "fp8"};
  return k;
}

// Names the embedding / output layers go by in common model code.
bool IsEmbedding(const std::string& m) {
  std::string l = ToLower(m);
  return l.find("embed") != std::string::npos || l == "wte" || l == "wpe";
}
bool IsLmHead(const std::string& m) {
  std::string l = ToLower(m);
  return l.find("lm_head") != std::string::npos || l == "output" || l == "output_layer";
}

YAML::Node FindBlock(const YAML::Node& n) {
  if (n.IsMap()) {
    if (n["precision_policy"]) return n["precision_policy"];
    for (const auto& kv : n) {
      YAML::Node found = FindBlock(kv.second);
      if (found) return found;
    }
  } else if (n.IsSequence()) {
    for (const auto& c : n) {
      YAML::Node found = FindBlock(c);
      if (found) return found;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

}  // namespace

std::vector<RuleInfo> PrecisionRules() {
  return {
      {"PREC001", "UnknownDtype", Severity::kError,
       "A dtype is not one of fp32 tf32 bf16 fp16 fp8."},
      {"PREC002", "MalformedPolicy", Severity::kError,
       "precision_policy is missing, has no default, or an override lacks module/dtype."},
      {"PREC003", "EmbeddingInFp16", Severity::kWarning,
       "The embedding layer runs in fp16 (overflow risk); keep it in bf16."},
      {"PREC004", "LmHeadInFp16", Severity::kWarning,
       "The output (lm_head) layer runs in fp16 (overflow risk); keep it in bf16."},
      {"PREC005", "DuplicateOverride", Severity::kWarning,
       "A module is overridden twice; the last wins."},
  };
}

static Result<PrecisionPlan> CheckPrecisionImpl(const std::string& yaml, const std::string& file,
                                                Report* report) {
  auto loaded = spec::LoadYaml(yaml, file);
  if (!loaded.ok()) return loaded.error();
  YAML::Node root = *loaded;
  PrecisionPlan plan;
  auto obj = [&](const YAML::Node& n, const std::string& path) {
    return ObjectRef{"precision_policy", "", path, file, n.IsDefined() ? n.Mark().line + 1 : 0};
  };
  YAML::Node block = FindBlock(root);
  if (!block || !block.IsMap()) {
    report->Add(Finding{"PREC002", Severity::kError,
                        ObjectRef{"precision_policy", "", "precision_policy", file, 1},
                        "no precision_policy mapping in the file",
                        "add precision_policy: {default: bf16, overrides: [...]}"});
    return plan;
  }
  auto check_dtype = [&](const YAML::Node& n, const std::string& path) -> std::string {
    std::string d = n.as<std::string>("");
    if (std::find(Dtypes().begin(), Dtypes().end(), ToLower(d)) == Dtypes().end()) {
      report->Add(Finding{"PREC001", Severity::kError, obj(n, path), "unknown dtype " + Quote(d),
                          ClosestHint(ToLower(d), Dtypes(), "use one of " + Join(Dtypes(), ", "))});
      return "";
    }
    return ToLower(d);
  };
  if (!block["default"]) {
    report->Add(Finding{"PREC002", Severity::kError, obj(block, "precision_policy.default"),
                        "precision_policy has no default dtype", "add default: bf16"});
  } else {
    plan.default_dtype = check_dtype(block["default"], "precision_policy.default");
  }
  plan.embedding_dtype = plan.lm_head_dtype = plan.default_dtype;
  std::set<std::string> seen;
  if (block["overrides"] && block["overrides"].IsSequence()) {
    size_t i = 0;
    for (const auto& o : block["overrides"]) {
      std::string path = "precision_policy.overrides[" + std::to_string(i++) + "]";
      if (!o.IsMap() || !o["module"] || !o["dtype"]) {
        report->Add(Finding{"PREC002", Severity::kError, obj(o, path),
                            "an override needs module and dtype",
                            "write {module: \"lm_head\", dtype: bf16}"});
        continue;
      }
      std::string module = o["module"].as<std::string>();
      std::string dtype = check_dtype(o["dtype"], path + ".dtype");
      if (!seen.insert(module).second) {
        report->Add(
            Finding{"PREC005", Severity::kWarning, obj(o, path),
                    "module " + Quote(module) + " is overridden more than once (the last wins)",
                    "keep one override per module"});
      }
      plan.overrides.push_back({module, dtype});
      if (IsEmbedding(module)) plan.embedding_dtype = dtype;
      if (IsLmHead(module)) plan.lm_head_dtype = dtype;
    }
  }
  if (plan.embedding_dtype == "fp16") {
    report->Add(Finding{"PREC003", Severity::kWarning, obj(block, "precision_policy"),
                        "the embedding layer runs in fp16",
                        "add {module: \"embedding\", dtype: bf16} to overrides"});
  }
  if (plan.lm_head_dtype == "fp16") {
    report->Add(Finding{"PREC004", Severity::kWarning, obj(block, "precision_policy"),
                        "lm_head runs in fp16",
                        "add {module: \"lm_head\", dtype: bf16} to overrides"});
  }
  return plan;
}

Result<PrecisionPlan> CheckPrecision(const std::string& yaml, const std::string& file,
                                     Report* report) {
  try {
    return CheckPrecisionImpl(yaml, file, report);
  } catch (const YAML::Exception& e) {
    return Error(codes::kSpecInvalid, "unexpected value: " + e.msg)
        .At(SourcePos{file, e.mark.line + 1, e.mark.column + 1})
        .Hint("precision_policy: {default: <dtype>, overrides: [{module, dtype}]}");
  }
}

}  // namespace rsl::govern
