#include "k8s/render.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <yaml-cpp/yaml.h>

#include "base/codes.h"
#include "base/strings.h"
#include "image/reference.h"
#include "k8s/codes.h"
#include "k8s/names.h"
#include "spec/canonical.h"
#include "spec/names.h"

namespace rsl::k8s {

using nlohmann::json;

namespace {

constexpr int64_t kKi = 1024, kMi = kKi * 1024, kGi = kMi * 1024;
constexpr char kDefaultStagingPrefix[] = "s3://rsl-staging";

// What the run's objects share: names, labels, the owner reference.
struct RunNames {
  std::string ns;    // Kubernetes namespace
  std::string base;  // "rsl-<workload>-<run>" as written, before DnsLabel
  std::string owner;
  json labels;  // workload, namespace, run, managed-by
};

RunNames MakeRunNames(const spec::Workload& w, const RenderContext& ctx) {
  RunNames n;
  n.ns = KubeNamespace(w.namespace_, ctx);
  n.base = "rsl-" + w.name + "-" + ctx.run_id;
  n.owner = DnsLabel(n.base);
  n.labels = {{kLabelManagedBy, kManagedByValue},
              {kLabelWorkload, LabelValue(w.name)},
              {kLabelNamespace, LabelValue(w.namespace_)},
              {kLabelRun, LabelValue(ctx.run_id)}};
  return n;
}

json Metadata(const RunNames& n, const std::string& name, const json& labels) {
  return {{"name", name},
          {"namespace", n.ns},
          {"labels", labels},
          {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                            {"kind", "ConfigMap"},
                                            {"name", n.owner},
                                            {"uid", kOwnerUidPlaceholder},
                                            {"controller", true}}})}};
}

json StepLabels(const spec::Workload& w, const RunNames& n, const spec::Step& step) {
  json labels = n.labels;
  // The workload's own labels (team, project: what cost reports group by), where Kubernetes
  // accepts the key; RSL's own keys win.
  for (const auto& [k, v] : w.labels) {
    if (spec::CheckLabelKey(k).empty() && !labels.contains(k)) labels[k] = LabelValue(v);
  }
  labels[kLabelStep] = LabelValue(step.name);
  return labels;
}

std::string StagingUri(const spec::Workload& w, const RenderContext& ctx, const std::string& step,
                       int attempt) {
  std::string prefix = ctx.staging_prefix.empty() ? kDefaultStagingPrefix : ctx.staging_prefix;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::string uri = prefix + "/" + w.namespace_ + "/" + ctx.run_id + "/staging/" + step;
  return attempt <= 1 ? uri : uri + "." + std::to_string(attempt);
}

Result<std::string> ImageOf(const spec::Workload& w, size_t i, const RenderContext& ctx) {
  const spec::Step& step = w.pipeline.steps[i];
  std::string written = step.image.empty() ? ctx.default_image : step.image;
  auto ref = image::ParseReference(written);
  if (!ref.ok()) {
    Error e = ref.error();
    return e.Path(spec::StepPath(i) + ".image").At(w.PosOf(spec::StepPath(i) + ".image"));
  }
  auto d = ctx.image_digests.find(written);
  if (d == ctx.image_digests.end()) return written;
  return ref->Name() + "@" + d->second;
}

// The requirements of a step's GPU request: one per capability (through the label table,
// duplicates merged) and the device memory.
Result<json> NodeAffinity(const spec::Workload& w, size_t i, const RenderContext& ctx) {
  const spec::Step& step = w.pipeline.steps[i];
  if (!step.effective.gpu) return json();
  const spec::GpuRequest& gpu = *step.effective.gpu;
  bool own = step.resources.gpu && !step.resources.gpu->capabilities.empty();
  std::string base = own ? spec::StepPath(i) + ".resources.gpu" : "spec.resources.gpu";
  json exprs = json::array();
  std::set<std::string> seen;
  auto add = [&](const NodeRequirement& r) {
    json e = {{"key", r.key}, {"operator", r.op}};
    if (!r.values.empty()) e["values"] = r.values;
    if (seen.insert(e.dump()).second) exprs.push_back(e);
  };
  for (size_t k = 0; k < gpu.capabilities.size(); ++k) {
    const std::string& cap = gpu.capabilities[k];
    const NodeRequirement* r = ctx.capability_labels.Find(cap);
    if (r == nullptr) {
      std::string path = base + ".capability[" + std::to_string(k) + "]";
      return Error(codes::kK8sCapabilityUnmapped,
                   "capability " + Quote(cap) + " has no node label on Kubernetes")
          .Path(path)
          .At(w.PosOf(path))
          .Value(cap)
          .Hint(
              "map it in the capability label table (--capability-labels FILE: "
              "capabilityLabels: {" +
              cap + ": {key: ..., operator: ..., values: [...]}})");
    }
    add(*r);
  }
  if (gpu.memory_bytes && *gpu.memory_bytes > 0) {
    int64_t mib = (*gpu.memory_bytes + kMi - 1) / kMi;
    add({ctx.capability_labels.gpu_memory_label(), "Gt", {std::to_string(mib - 1)}});
  }
  if (exprs.empty()) return json();
  return json{{"nodeAffinity",
               {{"requiredDuringSchedulingIgnoredDuringExecution",
                 {{"nodeSelectorTerms", json::array({{{"matchExpressions", exprs}}})}}}}}};
}

json Resources(const spec::Step& step, const RenderContext& ctx) {
  const spec::Resources& r = step.effective;
  std::string cpu = CpuQuantity(r.cpu_millis.value_or(ctx.default_cpu_millis));
  std::string mem = MemoryQuantity(r.memory_bytes.value_or(ctx.default_memory_bytes));
  json requests = {{"cpu", cpu}, {"memory", mem}};
  json limits = {{"memory", mem}};
  if (ctx.cpu_limits) limits["cpu"] = cpu;
  if (r.gpu && r.gpu->count > 0) limits[kGpuResource] = std::to_string(r.gpu->count);
  return {{"requests", requests}, {"limits", limits}};
}

std::string EnvFromObjectName(const RunNames& n, const spec::EnvFrom& ef) {
  return DnsLabel(n.base + "-" + ef.name);
}

std::string PullSecretName(const RunNames& n, const std::string& secret) {
  return DnsLabel(n.base + "-pull-" + secret);
}

// The container of step `i` (shared by the batch Pod and the serving Deployment's template).
Result<json> Container(const spec::Workload& w, size_t i, int attempt, const RenderContext& ctx,
                       const RunNames& n, const std::map<std::string, int>& dep_attempts,
                       int64_t port) {
  const spec::Step& step = w.pipeline.steps[i];
  auto image = ImageOf(w, i, ctx);
  if (!image.ok()) return image.error();
  std::map<std::string, std::string> env(step.env.begin(), step.env.end());
  if (w.data.input) {
    // Pods do not share the controller's disk: the input is the object-store URI itself.
    env["RSL_INPUT"] = w.data.input->uri;
    env["RSL_INPUT_URI"] = w.data.input->uri;
  }
  env["RSL_OUTPUT"] = StagingUri(w, ctx, step.name, attempt);
  for (const auto& dep : step.depends_on) {
    auto it = dep_attempts.find(dep);
    env[spec::StepInputVariable(dep)] =
        StagingUri(w, ctx, dep, it == dep_attempts.end() ? 1 : it->second);
  }
  env["RSL_BACKEND"] = "k8s";  // RSL_OUTPUT and RSL_INPUT* are object-store URIs, not paths
  env["RSL_METRICS_FILE"] = std::string(kWorkDir) + "/.rsl-metrics.json";
  env["RSL_PROGRESS_FILE"] = std::string(kWorkDir) + "/.rsl-progress";
  env["RSL_WORKLOAD_ID"] = ctx.workload_id.empty() ? spec::SpecDigest(w) : ctx.workload_id;
  env["RSL_RUN_ID"] = ctx.run_id;
  env["RSL_STEP"] = step.name;
  env["RSL_ATTEMPT"] = std::to_string(attempt);
  env["RSL_IMAGE"] = step.image.empty() ? ctx.default_image : step.image;
  if (auto d = ctx.image_digests.find(env["RSL_IMAGE"]); d != ctx.image_digests.end()) {
    env["RSL_IMAGE_DIGEST"] = d->second;
  }
  if (port > 0) env["RSL_PORT"] = std::to_string(port);
  json env_list = json::array();
  for (const auto& [k, v] : env) env_list.push_back({{"name", k}, {"value", v}});

  json c = {{"name", DnsLabel(step.name)},
            {"image", *image},
            {"env", env_list},
            {"resources", Resources(step, ctx)},
            {"workingDir", kWorkDir},
            {"volumeMounts", json::array({{{"name", kWorkVolume}, {"mountPath", kWorkDir}}})}};
  if (!step.command.empty()) c["command"] = step.command;
  if (!step.args.empty()) c["args"] = step.args;
  if (!step.env_from.empty()) {
    json from = json::array();
    for (const auto& ef : step.env_from) {
      bool secret = ef.kind == spec::EnvFrom::Kind::kSecret;
      from.push_back(
          {{secret ? "secretRef" : "configMapRef", {{"name", EnvFromObjectName(n, ef)}}}});
    }
    c["envFrom"] = from;
  }
  return c;
}

// What the Pod and the Deployment's template share besides the container.
Result<json> PodSpec(const spec::Workload& w, size_t i, const RunNames& n, const RenderContext& ctx,
                     json container) {
  const spec::Step& step = w.pipeline.steps[i];
  json spec = {{"containers", json::array({std::move(container)})},
               {"volumes", json::array({{{"name", kWorkVolume}, {"emptyDir", json::object()}}})},
               {"enableServiceLinks", false}};
  auto affinity = NodeAffinity(w, i, ctx);
  if (!affinity.ok()) return affinity.error();
  if (!affinity->is_null()) spec["affinity"] = *affinity;
  if (step.effective.gpu && step.effective.gpu->count > 0) {
    // GPU nodes are commonly tainted so that only pods asking for GPUs land there.
    spec["tolerations"] =
        json::array({{{"key", kGpuResource}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  }
  if (!w.image_pull_secrets.empty()) {
    json refs = json::array();
    for (const auto& s : w.image_pull_secrets) refs.push_back({{"name", PullSecretName(n, s)}});
    spec["imagePullSecrets"] = refs;
  }
  return spec;
}

json OwnerConfigMap(const spec::Workload& w, const RunNames& n, const RenderContext& ctx) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", n.owner}, {"namespace", n.ns}, {"labels", n.labels}}},
          {"data",
           {{"workload", w.name},
            {"namespace", w.namespace_},
            {"run", ctx.run_id},
            {"workloadId", ctx.workload_id.empty() ? spec::SpecDigest(w) : ctx.workload_id}}}};
}

// The Secrets/ConfigMaps of the steps' envFrom (one per source, however many steps use it)
// and of spec.imagePullSecrets.
std::vector<json> EnvFromObjects(const spec::Workload& w, const RunNames& n,
                                 const RenderContext& ctx) {
  std::vector<json> out;
  std::set<std::pair<bool, std::string>> done;
  for (const auto& step : w.pipeline.steps) {
    for (const auto& ef : step.env_from) {
      bool secret = ef.kind == spec::EnvFrom::Kind::kSecret;
      if (!done.insert({secret, ef.name}).second) continue;
      json meta = Metadata(n, EnvFromObjectName(n, ef), n.labels);
      meta["annotations"] = {
          {"rsl.dev/source", (secret ? "secret " : "configmap ") + w.namespace_ + "/" + ef.name}};
      json obj = {
          {"apiVersion", "v1"}, {"kind", secret ? "Secret" : "ConfigMap"}, {"metadata", meta}};
      if (secret) {
        obj["type"] = "Opaque";
        json data = json::object();
        if (auto it = ctx.secret_keys.find(ef.name); it != ctx.secret_keys.end()) {
          for (const auto& k : it->second) data[k] = kRedacted;
        }
        obj["metadata"]["annotations"]["rsl.dev/values"] =
            "filled by the backend when it creates the Secret";
        if (!data.empty()) obj["stringData"] = data;
      } else if (auto it = ctx.config_maps.find(ef.name); it != ctx.config_maps.end()) {
        obj["data"] = it->second;
      }
      out.push_back(obj);
    }
  }
  for (const auto& s : w.image_pull_secrets) {
    json meta = Metadata(n, PullSecretName(n, s), n.labels);
    meta["annotations"] = {{"rsl.dev/source", "secret " + w.namespace_ + "/" + s},
                           {"rsl.dev/values", "filled by the backend when it creates the Secret"}};
    out.push_back({{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", meta},
                   {"type", "kubernetes.io/dockerconfigjson"},
                   {"stringData", {{".dockerconfigjson", kRedacted}}}});
  }
  return out;
}

Result<std::vector<json>> ServingObjects(const spec::Workload& w, size_t i,
                                         const RenderContext& ctx, const RunNames& n) {
  const spec::Step& step = w.pipeline.steps[i];
  int64_t port = step.port.value_or(kDefaultServingPort);
  auto container = Container(w, i, ctx.attempt, ctx, n, {}, port);
  if (!container.ok()) return container.error();
  (*container)["ports"] = json::array({{{"name", "http"}, {"containerPort", port}}});
  (*container)["readinessProbe"] = {
      {"httpGet", {{"path", step.readiness.path}, {"port", step.readiness.port.value_or(port)}}},
      {"periodSeconds", CeilSeconds(step.readiness.period_ms)},
      {"failureThreshold", step.readiness.failure_threshold}};
  auto pod_spec = PodSpec(w, i, n, ctx, *container);
  if (!pod_spec.ok()) return pod_spec.error();
  (*pod_spec)["restartPolicy"] = "Always";

  json labels = StepLabels(w, n, step);
  // Named and selected as the backend does: after the workload, not the run.
  json selector = ServingSelector(w.name, w.namespace_, step.name);
  std::string name = ServingObjectName(w.namespace_, n.ns, w.name, step.name);
  const std::optional<spec::Autoscaling>& as = step.effective.autoscaling;
  json template_labels = labels;
  template_labels[kLabelAttempt] = std::to_string(ctx.attempt);

  std::vector<json> out;
  out.push_back(
      {{"apiVersion", "apps/v1"},
       {"kind", "Deployment"},
       {"metadata", Metadata(n, name, labels)},
       {"spec",
        {{"replicas", std::max<int64_t>(1, as ? as->min_replicas : 1)},
         {"selector", {{"matchLabels", selector}}},
         {"strategy", ServingStrategy()},
         {"progressDeadlineSeconds", CeilSeconds(step.ready_timeout_ms)},
         {"template", {{"metadata", {{"labels", template_labels}}}, {"spec", *pod_spec}}}}}});
  out.push_back(ServingService(Metadata(n, name, labels), selector, port));
  if (as) {
    auto hpa = ServingAutoscaler(Metadata(n, name, labels), name, *as);
    if (!hpa.ok()) {
      std::string path = "spec.resources.autoscaling.scaleDownDelay";
      if (step.resources.autoscaling)
        path = spec::StepPath(i) + ".resources.autoscaling.scaleDownDelay";
      Error e = hpa.error();
      return e.Path(path).At(w.PosOf(path));
    }
    out.push_back(std::move(*hpa));
  }
  return out;
}

// A string YAML would read back as something else (a number, a bool, null) must be quoted.
bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  static const std::set<std::string> kWords = {"true", "false", "yes", "no",   "on",    "off", "y",
                                               "n",    "null",  "~",   ".inf", "-.inf", ".nan"};
  std::string lower = ToLower(s);
  if (kWords.count(lower)) return true;
  const char* begin = s.c_str();
  char* end = nullptr;
  std::strtod(begin, &end);
  if (end != begin && *end == '\0') return true;  // 1, 1.5, 1e3, 0x1f
  return s.rfind("0o", 0) == 0 || s.rfind("0x", 0) == 0 || s.find_first_of("\n\t") != s.npos;
}

void Emit(YAML::Emitter& out, const json& j) {
  if ((j.is_object() || j.is_array()) && j.empty()) {
    out << YAML::Flow;  // {} and [] on the key's line
  }
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      out << YAML::Key;
      if (NeedsQuotes(k)) out << YAML::DoubleQuoted;
      out << k << YAML::Value;
      Emit(out, v);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& v : j) Emit(out, v);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
    out << s;
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();
  }
}

}  // namespace

std::string ServingObjectName(const std::string& rsl_namespace, const std::string& k8s_namespace,
                              const std::string& workload, const std::string& step) {
  if (DnsLabel(rsl_namespace) == k8s_namespace) return DnsLabel("rsl-" + workload + "-" + step);
  // RSL names hold no '/': the key is unambiguous where the readable part is not.
  return HashedDnsLabel("rsl-" + rsl_namespace + "-" + workload + "-" + step,
                        rsl_namespace + "/" + workload + "/" + step);
}

json ServingSelector(const std::string& workload, const std::string& rsl_namespace,
                     const std::string& step) {
  return {{kLabelManagedBy, kManagedByValue},
          {kLabelWorkload, LabelValue(workload)},
          {kLabelNamespace, LabelValue(rsl_namespace)},
          {kLabelStep, LabelValue(step)}};
}

json ServingStrategy() {
  return {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 0}, {"maxSurge", 1}}}};
}

int64_t CeilSeconds(int64_t ms) { return std::max<int64_t>(1, (ms + 999) / 1000); }

std::string CpuQuantity(int64_t millis) {
  return millis % 1000 == 0 ? std::to_string(millis / 1000) : std::to_string(millis) + "m";
}

std::string MemoryQuantity(int64_t bytes) {
  if (bytes > 0 && bytes % kGi == 0) return std::to_string(bytes / kGi) + "Gi";
  if (bytes > 0 && bytes % kMi == 0) return std::to_string(bytes / kMi) + "Mi";
  if (bytes > 0 && bytes % kKi == 0) return std::to_string(bytes / kKi) + "Ki";
  return std::to_string(bytes);
}

json ServingService(const json& metadata, const json& selector, int64_t port) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", metadata},
      {"spec",
       {{"type", "ClusterIP"},
        {"selector", selector},
        {"ports",
         json::array(
             {{{"name", "http"}, {"port", port}, {"targetPort", port}, {"protocol", "TCP"}}})}}}};
}

Result<json> ServingAutoscaler(const json& metadata, const std::string& deployment,
                               const spec::Autoscaling& as) {
  int64_t window = as.scale_down_delay_ms == 0 ? 0 : CeilSeconds(as.scale_down_delay_ms);
  if (window > kMaxStabilizationSeconds) {
    return Error(codes::kK8sNotRepresentable,
                 "scaleDownDelay is longer than the HorizontalPodAutoscaler's longest "
                 "stabilization window (1h)")
        .Value(std::to_string(window) + "s")
        .Hint("use a scaleDownDelay of at most 1h on Kubernetes");
  }
  json cpu = {
      {"type", "Resource"},
      {"resource",
       {{"name", "cpu"},
        {"target", {{"type", "Utilization"}, {"averageUtilization", as.target_utilization}}}}}};
  return json{{"apiVersion", "autoscaling/v2"},
              {"kind", "HorizontalPodAutoscaler"},
              {"metadata", metadata},
              {"spec",
               {{"scaleTargetRef",
                 {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", deployment}}},
                {"minReplicas", std::max<int64_t>(1, as.min_replicas)},
                {"maxReplicas", as.max_replicas},
                {"metrics", json::array({cpu})},
                {"behavior", {{"scaleDown", {{"stabilizationWindowSeconds", window}}}}}}}};
}

std::string KubeNamespace(const std::string& rsl_namespace, const RenderContext& ctx) {
  auto it = ctx.namespaces.find(rsl_namespace);
  return DnsLabel(it == ctx.namespaces.end() ? rsl_namespace : it->second);
}

std::string RunObjectName(const spec::Workload& w, const RenderContext& ctx) {
  return MakeRunNames(w, ctx).owner;
}

Result<json> RenderStepPod(const spec::Workload& w, size_t step_index, int attempt,
                           const RenderContext& ctx,
                           const std::map<std::string, int>& dep_attempts) {
  const spec::Step& step = w.pipeline.steps.at(step_index);
  RunNames n = MakeRunNames(w, ctx);
  auto container = Container(w, step_index, attempt, ctx, n, dep_attempts, 0);
  if (!container.ok()) return container.error();
  auto spec = PodSpec(w, step_index, n, ctx, *container);
  if (!spec.ok()) return spec.error();
  (*spec)["restartPolicy"] = "Never";
  // A pod never outlives its step's timeout, nor the workload's.
  std::optional<int64_t> timeout = step.timeout_ms ? step.timeout_ms : w.timeout_ms;
  if (timeout) (*spec)["activeDeadlineSeconds"] = CeilSeconds(*timeout);
  json labels = StepLabels(w, n, step);
  labels[kLabelAttempt] = std::to_string(attempt);
  std::string name = DnsLabel(n.base + "-" + step.name + "-" + std::to_string(attempt));
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", Metadata(n, name, labels)},
              {"spec", *spec}};
}

Result<std::vector<json>> RenderRun(const spec::Workload& w, const RenderContext& ctx) {
  RunNames n = MakeRunNames(w, ctx);
  std::vector<json> out = {OwnerConfigMap(w, n, ctx)};
  for (auto& o : EnvFromObjects(w, n, ctx)) out.push_back(std::move(o));
  for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
    if (w.pipeline.steps[i].serving) {
      auto objs = ServingObjects(w, i, ctx, n);
      if (!objs.ok()) return objs.error();
      for (auto& o : *objs) out.push_back(std::move(o));
    } else {
      auto pod = RenderStepPod(w, i, ctx.attempt, ctx);
      if (!pod.ok()) return pod.error();
      out.push_back(std::move(*pod));
    }
  }
  return out;
}

std::string ToYamlDocuments(const std::vector<json>& objects) {
  std::string out;
  for (const auto& o : objects) {
    YAML::Emitter e;
    Emit(e, o);
    out += "---\n";
    out += e.c_str();
    out += "\n";
  }
  return out;
}

}  // namespace rsl::k8s
