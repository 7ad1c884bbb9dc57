// YAML -> Workload. Field-level checks (types, unknown fields, quantities, names, schemas)
// happen while the YAML nodes and their marks are at hand: the top level and metadata here,
// each spec section in its parse_<section>.cc; checks of the text itself in parse_text.cc;
// checks that need the whole workload (the step graph, `when` references, uniqueKey,
// schemaRef) live in validate.cc.
#include "spec/parse.h"

#include <algorithm>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "spec/names.h"
#include "spec/parse_data.h"
#include "spec/parse_fields.h"
#include "spec/parse_model.h"
#include "spec/parse_pipeline.h"
#include "spec/parse_resources.h"
#include "spec/parse_text.h"
#include "spec/reader.h"
#include "spec/validate.h"
#include "spec/yaml_merge.h"

namespace rsl::spec {

namespace {

// metadata.namespace as written: "" when absent or not a string. Through a const node:
// lookups on a mutable yaml-cpp node add the keys they miss.
std::string MetadataNamespace(const YAML::Node& root) {
  try {
    if (!root.IsMap()) return "";
    const YAML::Node metadata = root["metadata"];
    if (!metadata || !metadata.IsMap()) return "";
    const YAML::Node ns = metadata["namespace"];
    if (!ns || !ns.IsScalar()) return "";
    return ns.Scalar();
  } catch (const YAML::Exception&) {
    return "";
  }
}

// Inputs larger than this are refused before parsing: a 10,000-step pipeline is ~1.5 MiB.
constexpr size_t kMaxSpecBytes = 16 << 20;

const std::vector<std::string> kTopKeys = {"apiVersion", "kind", "metadata", "spec"};
const std::vector<std::string> kMetadataKeys = {"name", "namespace", "labels", "annotations"};
const std::vector<std::string> kSpecKeys = {"resources", "data",    "model",
                                            "pipeline",  "timeout", "imagePullSecrets"};

class Builder : public FieldParser {
 public:
  using FieldParser::FieldParser;

  void Top(const YAML::Node& root) {
    if (!r_.Map(root, "", kTopKeys)) return;
    if (!Reader::Has(root, "apiVersion")) {
      r_.Missing(root, "apiVersion", std::string("add `apiVersion: ") + kApiVersion + "`");
    } else if (auto v = r_.String(root["apiVersion"], "apiVersion")) {
      w_->api_version = *v;
      if (*v != kApiVersion) {
        r_.Fail(root["apiVersion"], "apiVersion", "unsupported apiVersion " + Quote(*v),
                std::string("use ") + kApiVersion);
      }
    }
    if (!Reader::Has(root, "kind")) {
      r_.Missing(root, "kind", std::string("add `kind: ") + kKind + "`");
    } else if (auto v = r_.String(root["kind"], "kind")) {
      w_->kind = *v;
      if (*v != kKind) {
        r_.Fail(root["kind"], "kind", "unsupported kind " + Quote(*v), std::string("use ") + kKind);
      }
    }
    if (!Reader::Has(root, "metadata")) {
      r_.Missing(root, "metadata", "add metadata: {name: my-workload}");
    } else {
      Metadata(root["metadata"]);
    }
    if (!Reader::Has(root, "spec")) {
      r_.Missing(root, "spec", "add spec: with at least a pipeline");
    } else {
      Spec(root["spec"]);
    }
  }

 private:
  void Metadata(const YAML::Node& m) {
    if (!r_.Map(m, "metadata", kMetadataKeys)) return;
    if (!Reader::Has(m, "name")) {
      r_.Missing(m, "metadata.name", "add name: my-workload (a-z, 0-9, '-')");
    } else if (auto v = r_.String(m["name"], "metadata.name")) {
      w_->name = *v;
      std::string why = CheckDns1123Label(*v);
      if (!why.empty()) {
        r_.Fail(m["name"], "metadata.name", "name " + Quote(*v) + " " + why,
                "use a DNS-1123 label such as " + Quote(Suggest(*v)));
      }
    }
    if (Reader::Has(m, "namespace")) {
      if (auto v = r_.String(m["namespace"], "metadata.namespace")) {
        w_->namespace_ = *v;
        std::string why = CheckDns1123Label(*v);
        if (!why.empty()) {
          r_.Fail(m["namespace"], "metadata.namespace", "namespace " + Quote(*v) + " " + why,
                  "use a DNS-1123 label such as " + Quote(Suggest(*v)));
        }
      }
    }
    if (Reader::Has(m, "labels")) {
      if (auto labels = r_.StringMap(m["labels"], "metadata.labels")) {
        w_->labels = *labels;
        for (const auto& kv : m["labels"]) {
          std::string key = kv.first.Scalar();
          std::string path = "metadata.labels." + key;
          std::string why = CheckLabelKey(key);
          if (!why.empty()) {
            r_.Fail(kv.first, path, "label key " + Quote(key) + " " + why,
                    "label keys look like team or example.com/team");
          }
          why = CheckLabelValue(kv.second.Scalar());
          if (!why.empty()) {
            r_.Fail(kv.second, path, "label value " + Quote(kv.second.Scalar()) + " " + why,
                    "e.g. " + Quote(Suggest(kv.second.Scalar())));
          }
        }
      }
    }
    if (Reader::Has(m, "annotations")) {
      if (auto a = r_.StringMap(m["annotations"], "metadata.annotations")) w_->annotations = *a;
    }
  }

  // imagePullSecrets: [regcred] or, as Kubernetes writes it, [{name: regcred}].
  void PullSecrets(const YAML::Node& n) {
    const std::string path = "spec.imagePullSecrets";
    if (!r_.Seq(n, path, "imagePullSecrets: [registry-creds]")) return;
    for (size_t i = 0; i < n.size(); ++i) {
      std::string p = path + "[" + std::to_string(i) + "]";
      YAML::Node ref = n[i];
      if (ref.IsMap()) {
        if (!r_.Map(ref, p, {"name"})) continue;
        if (!Reader::Has(ref, "name")) {
          r_.Missing(ref, p + ".name", "add name: the secret's name");
          continue;
        }
        ref = ref["name"];
        p += ".name";
      }
      auto name = r_.String(ref, p);
      if (!name) continue;
      std::string why = CheckDns1123Subdomain(*name);
      if (!why.empty()) {
        r_.Fail(ref, p, "secret " + Quote(*name) + " " + why, "use a-z, 0-9, '-' and '.'");
        continue;
      }
      if (std::find(w_->image_pull_secrets.begin(), w_->image_pull_secrets.end(), *name) !=
          w_->image_pull_secrets.end()) {
        r_.Fail(ref, p, "secret " + Quote(*name) + " is listed twice", "list it once");
        continue;
      }
      w_->image_pull_secrets.push_back(*name);
    }
  }

  void Spec(const YAML::Node& s) {
    if (!r_.Map(s, "spec", kSpecKeys)) return;
    if (Reader::Has(s, "resources")) {
      ParseResources(c_, s["resources"], "spec.resources", &w_->resources);
    }
    if (Reader::Has(s, "data")) ParseData(c_, s["data"]);
    if (Reader::Has(s, "model")) ParseModel(c_, s["model"]);
    if (Reader::Has(s, "timeout")) w_->timeout_ms = Duration(s["timeout"], "spec.timeout", true);
    if (Reader::Has(s, "imagePullSecrets")) PullSecrets(s["imagePullSecrets"]);
    if (!Reader::Has(s, "pipeline")) {
      r_.Missing(s, "spec.pipeline", "add pipeline: with a list of steps");
    } else {
      ParsePipeline(c_, s["pipeline"], s);
    }
  }
};

}  // namespace

ParseResult ParseWorkload(const std::string& yaml, const std::string& file,
                          const ParseOptions& options) {
  ParseResult result;
  Workload& w = result.workload;
  w.source_file = file;
  if (yaml.size() > kMaxSpecBytes) {
    Error e(codes::kSpecParseError, "spec is " + std::to_string(yaml.size()) +
                                        " bytes, more than the limit of " +
                                        std::to_string(kMaxSpecBytes));
    e.pos.file = file;
    e.hint = "split the workload";
    result.errors.push_back(e);
    return result;
  }
  if (size_t bad = FirstInvalidUtf8(yaml); bad != std::string::npos) {
    Error e(codes::kSpecParseError,
            "invalid UTF-8 byte 0x" + HexEncode(std::string(1, yaml[bad])) + " in the file");
    e.pos.file = file;
    e.pos.line = 1 + static_cast<int>(std::count(yaml.begin(), yaml.begin() + bad, '\n'));
    size_t line_start = yaml.rfind('\n', bad == 0 ? 0 : bad - 1);
    line_start = (line_start == std::string::npos || bad == 0) ? 0 : line_start + 1;
    e.pos.column = static_cast<int>(bad - line_start) + 1;
    e.hint = "save the file as UTF-8";
    result.errors.push_back(e);
    return result;
  }
  // YAML::Load, not LoadAll: yaml-cpp 0.7's LoadAll never ends on a stray ',' at the top
  // level (each retry yields another empty document; found by spec_fuzzer). A second
  // document is detected from its `---` line instead.
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& ex) {
    auto seed = SeedAtomicMistake(yaml, file);
    result.errors.push_back(seed ? *seed : SyntaxError(ex, file, yaml));
    return result;
  }
  if (!root || root.IsNull()) {
    Error e(codes::kSpecParseError, "the file is empty");
    e.pos.file = file;
    e.pos.line = 1;
    e.pos.column = 1;
    e.hint = "write an AIWorkload: apiVersion, kind, metadata, spec";
    result.errors.push_back(e);
    return result;
  }
  if (int second = SecondDocumentLine(yaml); second > 0) {
    Error e(codes::kSpecParseError,
            "the file holds more than one YAML document; one workload per file");
    e.pos.file = file;
    e.pos.line = second;
    e.pos.column = 1;
    e.hint = "split the documents into separate files";
    result.errors.push_back(e);
    return result;
  }
  try {
    result.errors = ResolveYaml(root, file);
  } catch (const YAML::Exception& ex) {  // should not happen: every access is checked
    result.errors.push_back(SyntaxError(ex, file, yaml));
  }
  if (options.on_namespace) {
    Status s = options.on_namespace(MetadataNamespace(root));
    if (!s.ok()) {
      result.errors = {s.error()};
      return result;
    }
  }
  if (!result.errors.empty()) {
    // The list form of the pipeline is named as the parser names it everywhere else.
    const std::string list_form = "spec.pipeline[";
    for (auto& e : result.errors) {
      if (StartsWith(e.path, list_form))
        e.path.replace(0, list_form.size() - 1, "spec.pipeline.steps");
    }
    return result;
  }
  ParseContext context(yaml, &w, &result.errors, options);
  Builder builder(&context);
  try {
    builder.Top(root);
  } catch (const YAML::Exception& ex) {  // should not happen: every access is checked
    result.errors.push_back(SyntaxError(ex, file, yaml));
  }
  Validate(yaml, &result);
  SortByPosition(&result.errors);
  SortByPosition(&result.warnings);
  return result;
}

ParseResult ParseWorkloadFile(const std::string& path, const ParseOptions& in_options) {
  ParseOptions options = in_options;
  if (options.relative_uris == ParseOptions::RelativeUris::kResolve && options.base_dir.empty()) {
    std::error_code ec;
    options.base_dir = std::filesystem::absolute(path, ec).parent_path().string();
  }
  auto text = ReadFile(path);
  if (!text.ok()) {
    ParseResult result;
    result.workload.source_file = path;
    Error e = text.error();  // IO_ERROR, as everywhere a file cannot be read
    e.pos.file = path;
    e.hint = "check the file name";
    result.errors.push_back(e);
    return result;
  }
  return ParseWorkload(*text, path, options);
}

}  // namespace rsl::spec
