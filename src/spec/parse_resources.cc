#include "spec/parse_resources.h"

#include <cstdlib>

#include "base/strings.h"
#include "spec/capabilities.h"
#include "spec/names.h"
#include "spec/quantity.h"

namespace rsl::spec {

namespace {

constexpr int64_t kMaxGpus = 1024;
constexpr int64_t kMaxReplicas = 10000;
const std::vector<std::string> kResourceKeys = {"cpu", "memory", "gpu", "autoscaling"};
const std::vector<std::string> kGpuKeys = {"count", "capability", "memory"};
const std::vector<std::string> kAutoscalingKeys = {"targetUtilization", "minReplicas",
                                                   "maxReplicas", "scaleDownDelay"};

class ResourcesParser : public FieldParser {
 public:
  using FieldParser::FieldParser;

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
};

}  // namespace

void ParseResources(ParseContext* c, const YAML::Node& n, const std::string& path, Resources* out) {
  ResourcesParser(c).ResourcesOf(n, path, out);
}

}  // namespace rsl::spec
