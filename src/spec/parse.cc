// YAML -> Workload. Field-level checks (types, unknown fields, quantities, names, schemas)
// happen here while the YAML nodes and their marks are at hand; checks that need the whole
// workload (the step graph, `when` references, uniqueKey, schemaRef) live in validate.cc.
#include "spec/parse.h"

#include <algorithm>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "expr/expr.h"
#include "spec/names.h"
#include "spec/quantity.h"
#include "spec/reader.h"
#include "spec/source_map.h"
#include "spec/validate.h"

namespace rsl::spec {

namespace {

// Inputs larger than this are refused before parsing: a 10,000-step pipeline is ~1.5 MiB.
constexpr size_t kMaxSpecBytes = 16 << 20;
constexpr int64_t kMaxGpus = 1024;
constexpr int64_t kMaxRetries = 100;
constexpr int64_t kMaxReplicas = 10000;
constexpr int64_t kMaxPercent = 100;
constexpr int64_t kMaxDimension = int64_t{1} << 40;

const std::vector<std::string> kTopKeys = {"apiVersion", "kind", "metadata", "spec"};
const std::vector<std::string> kMetadataKeys = {"name", "namespace", "labels", "annotations"};
const std::vector<std::string> kSpecKeys = {"resources", "data", "model", "pipeline", "timeout"};
const std::vector<std::string> kResourceKeys = {"cpu", "memory", "gpu", "autoscaling"};
const std::vector<std::string> kGpuKeys = {"count", "capability", "memory"};
const std::vector<std::string> kAutoscalingKeys = {"targetUtilization", "minReplicas",
                                                   "maxReplicas", "scaleDownDelay"};
const std::vector<std::string> kDataKeys = {"input", "output"};
const std::vector<std::string> kInputKeys = {"uri", "format", "schema", "quality"};
const std::vector<std::string> kQualityKeys = {"completeness", "uniqueness", "uniqueKey",
                                               "freshness"};
const std::vector<std::string> kOutputKeys = {"uri", "schemaRef", "features"};
const std::vector<std::string> kFeatureKeys = {"name", "type"};
const std::vector<std::string> kModelKeys = {"framework", "version", "buildFingerprint",
                                             "dependencies", "signature"};
const std::vector<std::string> kSignatureKeys = {"inputs", "outputs"};
const std::vector<std::string> kTensorKeys = {"name", "shape", "dtype", "constraints"};
const std::vector<std::string> kPipelineKeys = {"atomic", "steps", "timeout"};
const std::vector<std::string> kStepKeys = {
    "name",      "image",       "command", "args",          "env",     "dependsOn", "when",
    "resources", "retryPolicy", "envFrom", "keepOnFailure", "timeout", "outputs",   "serving"};
const std::vector<std::string> kRetryKeys = {"maxRetries", "backoff", "backoffFactor",
                                             "maxBackoff"};
const std::vector<std::string> kEnvFromKeys = {"configMapRef", "secretRef"};
const std::vector<std::string> kFormats = {"avro", "csv", "jsonl", "parquet"};
const std::vector<std::string> kFrameworks = {"pytorch", "tensorflow", "onnx",
                                              "sklearn", "xgboost",    "custom"};
const std::vector<std::string> kSchemes = {"file", "s3", "ceph", "hdfs"};

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string OneOf(const std::string& value, const std::vector<std::string>& allowed) {
  std::string close = DidYouMean(value, allowed);
  if (!close.empty()) return "did you mean '" + close + "'?";
  return "one of: " + Join(allowed, ", ");
}

class Builder {
 public:
  Builder(const std::string& text, Workload* w, Errors* errors, const ParseOptions& options)
      : text_(text), w_(w), r_(w->source_file, &w->positions, errors), options_(options) {}

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

  // A DNS-1123 spelling of a bad name, for hints.
  static std::string Suggest(const std::string& name) {
    std::string out;
    for (char c : ToLower(name)) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (ok)
        out.push_back(c);
      else if (!out.empty() && out.back() != '-')
        out.push_back('-');
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    if (out.size() > kMaxLabelLength) out.resize(kMaxLabelLength);
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out.empty() ? "my-workload" : out;
  }

  void Spec(const YAML::Node& s) {
    if (!r_.Map(s, "spec", kSpecKeys)) return;
    if (Reader::Has(s, "resources")) {
      ResourcesOf(s["resources"], "spec.resources", &w_->resources);
    }
    if (Reader::Has(s, "data")) Data(s["data"]);
    if (Reader::Has(s, "model")) Model(s["model"]);
    if (Reader::Has(s, "timeout")) w_->timeout_ms = Duration(s["timeout"], "spec.timeout", true);
    if (!Reader::Has(s, "pipeline")) {
      r_.Missing(s, "spec.pipeline", "add pipeline: with a list of steps");
    } else {
      Pipeline(s["pipeline"], s);
    }
  }

  std::optional<int64_t> Duration(const YAML::Node& n, const std::string& path, bool positive) {
    auto text = r_.String(n, path);
    if (!text) return std::nullopt;
    auto ms = ParseDurationMs(*text);
    if (!ms.ok()) {
      r_.Fail(n, path, ms.error().message, ms.error().hint);
      return std::nullopt;
    }
    if (positive && *ms <= 0) {
      r_.Fail(n, path, "duration must be greater than zero", "e.g. \"10m\"");
      return std::nullopt;
    }
    return *ms;
  }

  void ResourcesOf(const YAML::Node& n, const std::string& path, Resources* out) {
    if (!r_.Map(n, path, kResourceKeys)) return;
    if (Reader::Has(n, "cpu")) {
      const std::string p = path + ".cpu";
      if (auto text = r_.String(n["cpu"], p)) {
        auto v = ParseCpuMillis(*text);
        if (!v.ok())
          r_.Fail(n["cpu"], p, v.error().message, v.error().hint);
        else if (*v <= 0)
          r_.Fail(n["cpu"], p, "cpu must be greater than zero", "e.g. \"500m\"");
        else
          out->cpu_millis = *v;
      }
    }
    if (Reader::Has(n, "memory")) {
      const std::string p = path + ".memory";
      if (auto v = Bytes(n["memory"], p)) out->memory_bytes = *v;
    }
    if (Reader::Has(n, "gpu")) Gpu(n["gpu"], path + ".gpu", out);
    if (Reader::Has(n, "autoscaling")) Autoscale(n["autoscaling"], path + ".autoscaling", out);
  }

  std::optional<int64_t> Bytes(const YAML::Node& n, const std::string& p) {
    auto text = r_.String(n, p);
    if (!text) return std::nullopt;
    auto v = ParseBytes(*text);
    if (!v.ok()) {
      r_.Fail(n, p, v.error().message, v.error().hint);
      return std::nullopt;
    }
    if (*v <= 0) {
      r_.Fail(n, p, "memory must be greater than zero", "e.g. \"512Mi\"");
      return std::nullopt;
    }
    return *v;
  }

  std::optional<int64_t> GpuCount(const YAML::Node& n, const std::string& p) {
    if (n.IsScalar()) {
      double d = 0;
      const std::string& s = n.Scalar();
      char* end = nullptr;
      d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size() && d != static_cast<int64_t>(d)) {
        r_.Record(p, n);
        r_.Fail(n, p, "gpu count " + Quote(s) + " is not a whole number",
                "fractional GPUs are not supported; request whole devices");
        return std::nullopt;
      }
    }
    return r_.Int(n, p, 0, kMaxGpus);
  }

  void Gpu(const YAML::Node& n, const std::string& path, Resources* out) {
    GpuRequest gpu;
    if (n.IsScalar()) {
      auto count = GpuCount(n, path);
      if (!count) return;
      gpu.count = *count;
      out->gpu = gpu;
      return;
    }
    if (!r_.Map(n, path, kGpuKeys)) return;
    if (!Reader::Has(n, "count")) {
      r_.Missing(n, path + ".count", "add count: 1");
    } else if (auto count = GpuCount(n["count"], path + ".count")) {
      gpu.count = *count;
    }
    if (Reader::Has(n, "capability")) {
      const std::string p = path + ".capability";
      const YAML::Node caps = n["capability"];
      if (auto list = r_.StringList(caps, p)) {
        for (size_t i = 0; i < list->size(); ++i) {
          CheckCapability((*list)[i], caps[i], Index(p, i));
          gpu.capabilities.push_back((*list)[i]);
        }
      }
    }
    if (Reader::Has(n, "memory")) {
      if (auto v = Bytes(n["memory"], path + ".memory")) gpu.memory_bytes = *v;
    }
    out->gpu = gpu;
  }

  void CheckCapability(const std::string& name, const YAML::Node& node, const std::string& p) {
    const CapabilityCatalog& catalog =
        options_.catalog ? *options_.catalog : CapabilityCatalog::BuiltIn();
    if (catalog.Has(name)) return;
    for (const auto& extra : options_.extra_capabilities) {
      if (extra == name) return;
    }
    std::vector<std::string> names = catalog.Names();
    names.insert(names.end(), options_.extra_capabilities.begin(),
                 options_.extra_capabilities.end());
    std::string close = DidYouMean(name, names);
    r_.Fail(node, p, "unknown capability " + Quote(name),
            close.empty() ? "known: " + Join(names, ", ") : "did you mean '" + close + "'?");
  }

  void Autoscale(const YAML::Node& n, const std::string& path, Resources* out) {
    if (!r_.Map(n, path, kAutoscalingKeys)) return;
    Autoscaling a;
    bool ok = true;
    if (!Reader::Has(n, "targetUtilization")) {
      r_.Missing(n, path + ".targetUtilization", "add targetUtilization: 70 (GPU percent)");
      ok = false;
    } else if (auto v =
                   r_.Int(n["targetUtilization"], path + ".targetUtilization", 1, kMaxPercent)) {
      a.target_utilization = *v;
    } else {
      ok = false;
    }
    if (Reader::Has(n, "minReplicas")) {
      if (auto v = r_.Int(n["minReplicas"], path + ".minReplicas", 1, kMaxReplicas)) {
        a.min_replicas = *v;
      } else {
        ok = false;
      }
    }
    a.max_replicas = a.min_replicas;
    if (Reader::Has(n, "maxReplicas")) {
      if (auto v = r_.Int(n["maxReplicas"], path + ".maxReplicas", 1, kMaxReplicas)) {
        a.max_replicas = *v;
        if (*v < a.min_replicas) {
          r_.Fail(n["maxReplicas"], path + ".maxReplicas",
                  "maxReplicas " + std::to_string(*v) + " is below minReplicas " +
                      std::to_string(a.min_replicas),
                  "raise maxReplicas or lower minReplicas");
          ok = false;
        }
      } else {
        ok = false;
      }
    }
    if (Reader::Has(n, "scaleDownDelay")) {
      if (auto v = Duration(n["scaleDownDelay"], path + ".scaleDownDelay", false)) {
        a.scale_down_delay_ms = *v;
      } else {
        ok = false;
      }
    }
    if (ok) out->autoscaling = a;
  }

  void Data(const YAML::Node& n) {
    if (!r_.Map(n, "spec.data", kDataKeys)) return;
    if (Reader::Has(n, "input")) Input(n["input"]);
    if (Reader::Has(n, "output")) Output(n["output"]);
  }

  std::optional<std::string> Uri(const YAML::Node& map, const std::string& path) {
    if (!Reader::Has(map, "uri")) {
      r_.Missing(map, path + ".uri", "e.g. uri: hdfs://ns1/raw/transactions");
      return std::nullopt;
    }
    auto uri = r_.String(map["uri"], path + ".uri");
    if (!uri) return std::nullopt;
    if (uri->empty()) {
      r_.Fail(map["uri"], path + ".uri", "uri is empty", "e.g. file:///data/in");
      return std::nullopt;
    }
    size_t sep = uri->find("://");
    if (sep != std::string::npos) {
      std::string scheme = uri->substr(0, sep);
      bool known = false;
      for (const auto& s : kSchemes) known = known || s == scheme;
      if (!known) {
        std::string close = DidYouMean(scheme, kSchemes);
        r_.Fail(map["uri"], path + ".uri", "unsupported URI scheme " + Quote(scheme),
                close.empty() ? "schemes: file:// s3:// ceph:// hdfs://"
                              : "did you mean '" + close + "://'?");
        return std::nullopt;
      }
      if (uri->size() == sep + 3) {
        r_.Fail(map["uri"], path + ".uri", "uri " + Quote(*uri) + " names no location",
                "e.g. " + scheme + "://bucket/prefix");
        return std::nullopt;
      }
    }
    return ResolveRelative(map["uri"], path + ".uri", *uri);
  }

  // A relative local URI made absolute against the base directory, or refused, as the
  // options say (ParseOptions::relative_uris).
  std::optional<std::string> ResolveRelative(const YAML::Node& node, const std::string& path,
                                             const std::string& uri) {
    using Mode = ParseOptions::RelativeUris;
    bool file_scheme = StartsWith(uri, "file://");
    if (!file_scheme && uri.find("://") != std::string::npos) return uri;  // remote
    std::string local = file_scheme ? uri.substr(7) : uri;
    if (local.empty() || local[0] == '/' || options_.relative_uris == Mode::kKeep) return uri;
    if (options_.relative_uris == Mode::kRefuse || options_.base_dir.empty()) {
      r_.Fail(node, path,
              "relative uri " + Quote(uri) + " has no base directory to resolve it against",
              "write an absolute path (e.g. file:///data/out), or submit the file with seedctl, "
              "which resolves it against the file's directory")
          .Value(uri);
      return std::nullopt;
    }
    std::string absolute =
        (std::filesystem::path(options_.base_dir) / local).lexically_normal().string();
    return file_scheme ? "file://" + absolute : absolute;
  }

  void Input(const YAML::Node& n) {
    const std::string path = "spec.data.input";
    if (!r_.Map(n, path, kInputKeys)) return;
    DataInput in;
    if (auto uri = Uri(n, path)) in.uri = *uri;
    if (Reader::Has(n, "format")) {
      if (auto f = r_.String(n["format"], path + ".format")) {
        bool known = false;
        for (const auto& k : kFormats) known = known || k == *f;
        if (!known) {
          r_.Fail(n["format"], path + ".format", "unknown format " + Quote(*f),
                  OneOf(*f, kFormats));
        } else {
          in.format = *f;
        }
      }
    }
    if (Reader::Has(n, "schema")) {
      const YAML::Node node = n["schema"];
      if (auto text = r_.String(node, path + ".schema")) {
        in.schema_text = *text;
        auto schema = schema::ParseSchema(*text);
        if (!schema.ok()) {
          Error& e = r_.Fail(node, path + ".schema", schema.error().message, schema.error().hint);
          e.value.clear();
          if (schema.error().pos.known()) {
            e.pos = MapInnerPos(text_, r_.Pos(node), schema.error().pos.line,
                                schema.error().pos.column);
          }
        } else {
          in.schema = *schema;
        }
      }
    }
    if (Reader::Has(n, "quality")) QualityOf(n["quality"], path + ".quality", &in.quality);
    w_->data.input = in;
  }

  void QualityOf(const YAML::Node& n, const std::string& path, Quality* q) {
    if (!r_.Map(n, path, kQualityKeys)) return;
    for (const char* key : {"completeness", "uniqueness"}) {
      if (!Reader::Has(n, key)) continue;
      const std::string p = path + "." + key;
      auto v = r_.Number(n[key], p);
      if (!v) continue;
      if (*v < 0 || *v > kMaxPercent) {
        r_.Fail(n[key], p, std::string(key) + " " + n[key].Scalar() + " is outside 0..100",
                "thresholds are percentages, e.g. 99.9");
        continue;
      }
      (std::string(key) == "completeness" ? q->completeness : q->uniqueness) = *v;
    }
    if (Reader::Has(n, "uniqueKey")) {
      if (auto v = r_.String(n["uniqueKey"], path + ".uniqueKey")) q->unique_key = *v;
    }
    if (Reader::Has(n, "freshness")) {
      q->freshness_ms = Duration(n["freshness"], path + ".freshness", true);
    }
  }

  void Output(const YAML::Node& n) {
    const std::string path = "spec.data.output";
    if (!r_.Map(n, path, kOutputKeys)) return;
    DataOutput out;
    if (auto uri = Uri(n, path)) out.uri = *uri;
    if (Reader::Has(n, "schemaRef")) {
      if (auto v = r_.String(n["schemaRef"], path + ".schemaRef")) {
        if (*v != "input") {
          r_.Fail(n["schemaRef"], path + ".schemaRef",
                  "schemaRef " + Quote(*v) + " is not supported",
                  "the only reference is schemaRef: input");
        } else {
          out.schema_ref = *v;
        }
      }
    }
    if (Reader::Has(n, "features")) {
      const YAML::Node fs = n["features"];
      const std::string p = path + ".features";
      if (r_.Seq(fs, p, "features: [{name: user_embedding, type: \"float32[128]\"}]")) {
        for (size_t i = 0; i < fs.size(); ++i) {
          const std::string fp = Index(p, i);
          if (!r_.Map(fs[i], fp, kFeatureKeys)) continue;
          schema::FeatureDecl f;
          bool ok = true;
          for (const char* key : {"name", "type"}) {
            if (!Reader::Has(fs[i], key)) {
              r_.Missing(fs[i], fp + "." + key, "features need a name and a type");
              ok = false;
            } else if (auto v = r_.String(fs[i][key], fp + "." + key)) {
              (std::string(key) == "name" ? f.name : f.type) = *v;
            } else {
              ok = false;
            }
          }
          if (ok) out.features.push_back(f);
        }
      }
    }
    w_->data.output = out;
  }

  void Model(const YAML::Node& n) {
    const std::string path = "spec.model";
    if (!r_.Map(n, path, kModelKeys)) return;
    ModelSpec m;
    if (!Reader::Has(n, "framework")) {
      r_.Missing(n, path + ".framework",
                 "add framework: pytorch (or " + Join(kFrameworks, ", ") + ")");
    } else if (auto v = r_.String(n["framework"], path + ".framework")) {
      bool known = false;
      for (const auto& f : kFrameworks) known = known || f == *v;
      if (!known) {
        r_.Fail(n["framework"], path + ".framework", "unknown framework " + Quote(*v),
                OneOf(*v, kFrameworks));
      }
      m.framework = *v;
    }
    if (!Reader::Has(n, "version")) {
      r_.Missing(n, path + ".version", "add version: \"1.0.0\"");
    } else if (auto v = r_.String(n["version"], path + ".version")) {
      std::string why = CheckSemver(*v);
      if (!why.empty()) {
        r_.Fail(n["version"], path + ".version", "version " + Quote(*v) + " " + why,
                "use a semantic version such as \"2.1.7\"");
      }
      m.version = *v;
    }
    if (Reader::Has(n, "buildFingerprint")) {
      const std::string p = path + ".buildFingerprint";
      if (auto v = r_.String(n["buildFingerprint"], p)) {
        std::string why = CheckSha256Digest(*v);
        if (!why.empty()) {
          r_.Fail(n["buildFingerprint"], p, "buildFingerprint " + why,
                  "write \"sha256:\" and the artifact's 64-hex-digit digest (sha256sum FILE)");
        }
        m.build_fingerprint = *v;
      }
    }
    if (Reader::Has(n, "dependencies")) {
      const YAML::Node deps = n["dependencies"];
      const std::string p = path + ".dependencies";
      if (auto list = r_.StringList(deps, p)) {
        for (size_t i = 0; i < list->size(); ++i) {
          if (auto dep = DependencyOf((*list)[i], deps[i], Index(p, i))) {
            m.dependencies.push_back(*dep);
          }
        }
      }
    }
    if (Reader::Has(n, "signature")) {
      const YAML::Node sig = n["signature"];
      const std::string p = path + ".signature";
      if (r_.Map(sig, p, kSignatureKeys)) {
        if (Reader::Has(sig, "inputs")) Tensors(sig["inputs"], p + ".inputs", &m.inputs);
        if (Reader::Has(sig, "outputs")) Tensors(sig["outputs"], p + ".outputs", &m.outputs);
      }
    }
    w_->model = m;
  }

  std::optional<Dependency> DependencyOf(const std::string& text, const YAML::Node& node,
                                         const std::string& p) {
    size_t eq = text.find("==");
    const std::string hint = "pin an exact version: name==version, e.g. torch==2.1.2+cu118";
    if (eq == std::string::npos) {
      size_t op = text.find_first_of("<>=~!");
      r_.Fail(node, p,
              op == std::string::npos ? "dependency " + Quote(text) + " has no version"
                                      : "dependency " + Quote(text) + " is not pinned exactly",
              hint);
      return std::nullopt;
    }
    Dependency d;
    d.name = std::string(Trim(text.substr(0, eq)));
    d.version = std::string(Trim(text.substr(eq + 2)));
    auto name_ok = [](const std::string& s) {
      if (s.empty() || !std::isalnum(static_cast<unsigned char>(s.front()))) return false;
      for (char c : s) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
          return false;
        }
      }
      return true;
    };
    auto version_ok = [](const std::string& s) {
      if (s.empty() || !std::isalnum(static_cast<unsigned char>(s.front()))) return false;
      for (char c : s) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
              c == '+' || c == '!')) {
          return false;
        }
      }
      return true;
    };
    if (!name_ok(d.name)) {
      r_.Fail(node, p, "dependency name " + Quote(d.name) + " is not a package name", hint);
      return std::nullopt;
    }
    if (!version_ok(d.version)) {
      r_.Fail(node, p, "dependency " + Quote(text) + " has an invalid version " + Quote(d.version),
              hint);
      return std::nullopt;
    }
    return d;
  }

  void Tensors(const YAML::Node& n, const std::string& path, std::vector<TensorSpec>* out) {
    if (!r_.Seq(n, path, "[{name: features, shape: [1, 128], dtype: float32}]")) return;
    for (size_t i = 0; i < n.size() && !r_.exhausted(); ++i) {
      if (auto t = Tensor(n[i], Index(path, i))) out->push_back(*t);
    }
  }

  std::optional<TensorSpec> Tensor(const YAML::Node& n, const std::string& path) {
    if (!r_.Map(n, path, kTensorKeys)) return std::nullopt;
    TensorSpec t;
    bool ok = true;
    if (!Reader::Has(n, "name")) {
      r_.Missing(n, path + ".name", "add name: the tensor's name");
      ok = false;
    } else if (auto v = r_.String(n["name"], path + ".name")) {
      t.name = *v;
    } else {
      ok = false;
    }
    if (!Reader::Has(n, "dtype")) {
      r_.Missing(n, path + ".dtype", "add dtype: float32 (or another)");
      ok = false;
    } else if (auto v = r_.String(n["dtype"], path + ".dtype")) {
      if (!IsDtype(*v)) {
        r_.Fail(n["dtype"], path + ".dtype", "unknown dtype " + Quote(*v), OneOf(*v, Dtypes()));
        ok = false;
      }
      t.dtype = *v;
    }
    if (!Reader::Has(n, "shape")) {
      r_.Missing(n, path + ".shape", "add shape: [1, 128] (-1 = any batch size)");
      ok = false;
    } else if (r_.Seq(n["shape"], path + ".shape", "shape: [-1, 128]")) {
      const YAML::Node shape = n["shape"];
      for (size_t d = 0; d < shape.size(); ++d) {
        auto dim = r_.Int(shape[d], Index(path + ".shape", d), -1, kMaxDimension);
        if (!dim) {
          ok = false;
          continue;
        }
        if (*dim == -1 && d > 0) {
          r_.Fail(shape[d], Index(path + ".shape", d),
                  "-1 (any size) is allowed only in the first, batch dimension",
                  "give dimension " + std::to_string(d) + " a fixed size");
          ok = false;
        } else if (*dim == 0) {
          r_.Fail(shape[d], Index(path + ".shape", d), "dimension size 0",
                  "sizes are >= 1, or -1 for the batch dimension");
          ok = false;
        }
        t.shape.push_back(*dim);
      }
    }
    if (Reader::Has(n, "constraints")) {
      const YAML::Node c = n["constraints"];
      const std::string cp = path + ".constraints";
      if (r_.Map(c, cp, {"range"}) && Reader::Has(c, "range")) {
        const YAML::Node range = c["range"];
        if (r_.Seq(range, cp + ".range", "range: [0.0, 1.0]")) {
          if (range.size() != 2) {
            r_.Fail(range, cp + ".range", "range needs exactly two numbers [low, high]",
                    "range: [0.0, 1.0]");
            ok = false;
          } else {
            auto lo = r_.Number(range[0], Index(cp + ".range", 0));
            auto hi = r_.Number(range[1], Index(cp + ".range", 1));
            if (lo && hi && *lo > *hi) {
              r_.Fail(range, cp + ".range", "range low end is greater than its high end",
                      "write [low, high]");
              ok = false;
            } else if (lo && hi) {
              t.range = std::make_pair(*lo, *hi);
            } else {
              ok = false;
            }
          }
        }
      }
    }
    if (!ok) return std::nullopt;
    return t;
  }

  void Pipeline(const YAML::Node& n, const YAML::Node& spec) {
    const std::string path = "spec.pipeline";
    YAML::Node steps;
    if (n.IsSequence()) {
      r_.Record(path, n);
      steps = n;
    } else {
      if (!r_.Map(n, path, kPipelineKeys)) return;
      if (Reader::Has(n, "atomic")) {
        if (auto v = r_.Bool(n["atomic"], path + ".atomic")) w_->pipeline.atomic = *v;
      }
      if (Reader::Has(n, "timeout")) {
        if (Reader::Has(spec, "timeout")) {
          r_.Fail(n["timeout"], path + ".timeout", "timeout is set both here and at spec.timeout",
                  "keep one of them");
        } else {
          w_->timeout_ms = Duration(n["timeout"], path + ".timeout", true);
        }
      }
      if (!Reader::Has(n, "steps")) {
        r_.Missing(n, path + ".steps", "add steps: with at least one step");
        return;
      }
      steps = n["steps"];
    }
    const std::string sp = path + ".steps";
    if (!r_.Seq(steps, sp, "steps: [{name: train, image: ...}]")) return;
    if (steps.size() == 0) {
      r_.Fail(steps, sp, "the pipeline has no steps", "add at least one step");
      return;
    }
    w_->pipeline.steps.reserve(steps.size());
    for (size_t i = 0; i < steps.size() && !r_.exhausted(); ++i) {
      Step step;
      StepOf(steps[i], Index(sp, i), &step);
      w_->pipeline.steps.push_back(std::move(step));
    }
  }

  void StepOf(const YAML::Node& n, const std::string& path, Step* step) {
    // A step asks for fourteen keys: read them once (Reader::Keys).
    const Reader::Keys keys(n);
    if (!r_.Map(n, path, kStepKeys)) return;
    if (!keys.Has("name")) {
      r_.Missing(n, path + ".name", "every step needs a name: a-z, 0-9, '-'");
    } else if (auto v = r_.String(n["name"], path + ".name")) {
      step->name = *v;
      std::string why = CheckDns1123Label(*v);
      if (!why.empty()) {
        r_.Fail(n["name"], path + ".name", "step name " + Quote(*v) + " " + why,
                "use a DNS-1123 label such as " + Quote(Suggest(*v)));
      }
    }
    if (keys.Has("image")) {
      if (auto v = r_.String(n["image"], path + ".image")) {
        std::string why = CheckImageRef(*v);
        if (!why.empty()) {
          r_.Fail(n["image"], path + ".image", "image " + Quote(*v) + " " + why,
                  "e.g. volc/train-pytorch:v2.1 or registry.example.com:5000/team/app:1.0");
        }
        step->image = *v;
      }
    }
    if (keys.Has("command")) {
      if (auto v = r_.StringList(n["command"], path + ".command")) step->command = *v;
    }
    if (keys.Has("args")) {
      if (auto v = r_.StringList(n["args"], path + ".args")) step->args = *v;
    }
    if (keys.Has("env")) {
      if (auto env = r_.StringMap(n["env"], path + ".env")) {
        for (const auto& kv : n["env"]) {
          std::string key = kv.first.Scalar();
          std::string why = CheckEnvName(key);
          if (!why.empty()) {
            std::string fixed;
            for (char c : key)
              fixed.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
            r_.Fail(kv.first, path + ".env." + key, "variable name " + Quote(key) + " " + why,
                    "e.g. " + Quote(fixed));
          } else if (StartsWith(key, "RSL_")) {
            r_.Fail(kv.first, path + ".env." + key,
                    "variable " + Quote(key) + " is reserved: RSL sets RSL_* itself",
                    "choose a name without the RSL_ prefix");
          }
        }
        step->env = *env;
      }
    }
    if (keys.Has("dependsOn")) {
      if (auto v = r_.StringList(n["dependsOn"], path + ".dependsOn")) step->depends_on = *v;
    }
    if (keys.Has("when")) {
      if (auto v = r_.String(n["when"], path + ".when")) step->when = *v;
    }
    if (keys.Has("resources"))
      ResourcesOf(n["resources"], path + ".resources", &step->resources);
    if (keys.Has("retryPolicy")) Retry(n["retryPolicy"], path + ".retryPolicy", &step->retry);
    if (keys.Has("envFrom")) EnvFromOf(n["envFrom"], path + ".envFrom", step);
    if (keys.Has("keepOnFailure")) {
      if (auto v = r_.Bool(n["keepOnFailure"], path + ".keepOnFailure")) step->keep_on_failure = *v;
    }
    if (keys.Has("serving")) {
      if (auto v = r_.Bool(n["serving"], path + ".serving")) step->serving = *v;
    }
    if (keys.Has("timeout"))
      step->timeout_ms = Duration(n["timeout"], path + ".timeout", true);
    if (keys.Has("outputs")) Tensors(n["outputs"], path + ".outputs", &step->outputs);
  }

  void Retry(const YAML::Node& n, const std::string& path, RetryPolicy* retry) {
    if (!r_.Map(n, path, kRetryKeys)) return;
    if (Reader::Has(n, "maxRetries")) {
      if (auto v = r_.Int(n["maxRetries"], path + ".maxRetries", 0, kMaxRetries)) {
        retry->max_retries = *v;
      }
    }
    if (Reader::Has(n, "backoff")) {
      if (auto v = Duration(n["backoff"], path + ".backoff", false)) retry->backoff_ms = *v;
    }
    if (Reader::Has(n, "backoffFactor")) {
      if (auto v = r_.Number(n["backoffFactor"], path + ".backoffFactor")) {
        if (*v < 1 || *v > kMaxPercent) {
          r_.Fail(n["backoffFactor"], path + ".backoffFactor",
                  "backoffFactor must be between 1 and 100", "1 = constant delay, 2 = doubling");
        } else {
          retry->backoff_factor = *v;
        }
      }
    }
    if (Reader::Has(n, "maxBackoff")) {
      if (auto v = Duration(n["maxBackoff"], path + ".maxBackoff", true)) {
        if (*v < retry->backoff_ms) {
          r_.Fail(n["maxBackoff"], path + ".maxBackoff", "maxBackoff is shorter than backoff",
                  "make maxBackoff >= backoff");
        } else {
          retry->max_backoff_ms = *v;
        }
      }
    }
  }

  void EnvFromOf(const YAML::Node& n, const std::string& path, Step* step) {
    if (!r_.Seq(n, path, "envFrom: [{configMapRef: common-config}, {secretRef: creds}]")) return;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string p = Index(path, i);
      const YAML::Node item = n[i];
      if (!r_.Map(item, p, kEnvFromKeys)) continue;
      if (item.size() != 1) {
        r_.Fail(item, p, "each envFrom entry names exactly one configMapRef or secretRef",
                "split it into two entries");
        continue;
      }
      EnvFrom ef;
      std::string key = item.begin()->first.Scalar();
      ef.kind = key == "secretRef" ? EnvFrom::Kind::kSecret : EnvFrom::Kind::kConfigMap;
      YAML::Node ref = item.begin()->second;
      std::string rp = p + "." + key;
      // Kubernetes writes {configMapRef: {name: x}}; the seed writes {configMapRef: x}.
      if (ref.IsMap()) {
        if (!r_.Map(ref, rp, {"name"})) continue;
        if (!Reader::Has(ref, "name")) {
          r_.Missing(ref, rp + ".name", "add name: the " + key + " name");
          continue;
        }
        ref = ref["name"];
        rp += ".name";
      }
      auto name = r_.String(ref, rp);
      if (!name) continue;
      std::string why = CheckDns1123Subdomain(*name);
      if (!why.empty()) {
        r_.Fail(ref, rp, key + " " + Quote(*name) + " " + why, "use a-z, 0-9, '-' and '.'");
        continue;
      }
      ef.name = *name;
      step->env_from.push_back(ef);
    }
  }

  const std::string& text_;
  Workload* w_;
  Reader r_;
  const ParseOptions& options_;
};

// The seed writes `atomic: true` and then the steps as list items at the same indentation,
// which YAML cannot parse (a mapping cannot also be a list). Returns that line's error if the
// text has this shape.
std::optional<Error> SeedAtomicMistake(const std::string& text, const std::string& file) {
  std::vector<std::string> lines = Split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || line.compare(indent, 7, "atomic:") != 0) continue;
    for (size_t j = i + 1; j < lines.size(); ++j) {
      size_t ind = lines[j].find_first_not_of(' ');
      if (ind == std::string::npos || lines[j][ind] == '#') continue;
      if (ind == indent && lines[j].compare(ind, 2, "- ") == 0) {
        Error e(codes::kSpecParseError,
                "`atomic:` is followed by list items at the same indentation; a YAML mapping "
                "cannot also be a list");
        e.path = "spec.pipeline";
        e.pos.file = file;
        e.pos.line = static_cast<int>(i) + 1;
        e.pos.column = static_cast<int>(indent) + 1;
        e.value = std::string(Trim(line));
        e.hint =
            "put the list under `steps:` (pipeline: {atomic: true, steps: [...]}), or drop "
            "`atomic:` (a plain list is atomic)";
        return e;
      }
      break;
    }
  }
  return std::nullopt;
}

// YAML text must be Unicode; yaml-cpp passes invalid UTF-8 through, and it could not be
// rendered as JSON later. Returns the byte offset of the first invalid sequence, or npos.
size_t FirstInvalidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return i;
    }
    // Overlong forms, surrogates and code points past U+10FFFF.
    unsigned char c1 = len > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
    if ((len == 2 && c < 0xC2) || (len == 3 && c == 0xE0 && c1 < 0xA0) ||
        (len == 3 && c == 0xED && c1 >= 0xA0) || (len == 4 && c == 0xF0 && c1 < 0x90) ||
        (len == 4 && (c > 0xF4 || (c == 0xF4 && c1 >= 0x90)))) {
      return i;
    }
    i += len;
  }
  return std::string::npos;
}

// The 1-based line of a `---` that starts a second document (one after content), or 0.
int SecondDocumentLine(const std::string& text) {
  bool content = false;
  int line = 0;
  for (const auto& l : Split(text, '\n')) {
    ++line;
    bool marker = l == "---" || l == "---\r" || StartsWith(l, "--- ");
    if (marker && content) return line;
    std::string_view t = Trim(l);
    if (!marker && !t.empty() && t.front() != '#' && t.front() != '%') content = true;
  }
  return 0;
}

Error SyntaxError(const YAML::Exception& ex, const std::string& file) {
  Error e(codes::kSpecParseError, "YAML syntax error: " + ex.msg);
  e.pos.file = file;
  if (ex.mark.line >= 0) {
    e.pos.line = ex.mark.line + 1;
    e.pos.column = ex.mark.column + 1;
  }
  e.hint = "check indentation, colons and quotes around this place";
  return e;
}

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
    result.errors.push_back(seed ? *seed : SyntaxError(ex, file));
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
  Builder builder(yaml, &w, &result.errors, options);
  try {
    builder.Top(root);
  } catch (const YAML::Exception& ex) {  // should not happen: every access is checked
    result.errors.push_back(SyntaxError(ex, file));
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
    Error e = text.error();
    e.code = codes::kSpecParseError;
    e.pos.file = path;
    e.hint = "check the file name";
    result.errors.push_back(e);
    return result;
  }
  return ParseWorkload(*text, path, options);
}

}  // namespace rsl::spec
