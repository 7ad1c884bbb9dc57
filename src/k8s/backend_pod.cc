// A batch step's Pod: the object the k8s backend creates for an attempt (image, command,
// environment, resources, capability node affinity, volumes for inputs, outputs and staging),
// and where a dependency's outputs are read from.
#include "k8s/backend.h"

#include <algorithm>

#include "base/codes.h"
#include "base/strings.h"
#include "image/reference.h"
#include "k8s/backend_internal.h"
#include "k8s/codes.h"
#include "k8s/names.h"
#include "k8s/render.h"
#include "spec/names.h"

namespace rsl::k8s {

using backend::LaunchSpec;
using nlohmann::json;

std::string K8sBackend::InputUriFor(const LaunchSpec& spec, const std::string& dep,
                                    const std::string& ns) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = succeeded_staging_.find(spec.run_id + "/" + dep);
    if (it != succeeded_staging_.end()) return it->second;
  }
  // Not seen by this process (a restart): the dependency's succeeded Pod says which attempt.
  int best = 0;
  if (Informer* inf = InformerFor(PodsPath(ns))) {
    for (const auto& [name, pod] : inf->Snapshot()) {
      const json labels = pod.value("metadata", json::object()).value("labels", json::object());
      if (labels.value(kLabelRun, "") != LabelValue(spec.run_id) ||
          labels.value(kLabelStep, "") != LabelValue(dep)) {
        continue;
      }
      if (Str(pod.value("status", json::object()), "phase") != "Succeeded") continue;
      best = std::max(best, std::atoi(labels.value(kLabelAttempt, "0").c_str()));
    }
  }
  return AttemptStagingUri(opts_.staging_prefix, spec.namespace_, spec.run_id, dep,
                           best > 0 ? best : 1);
}

Result<json> K8sBackend::PodFor(const LaunchSpec& spec, const std::string& owner_uid) {
  const std::string ns = KubeNs(opts_.namespaces, spec.namespace_);
  const std::string pod = AttemptPodName(spec.workload_name, spec.run_id, spec.step, spec.attempt);
  const std::string staging = AttemptStagingUri(opts_.staging_prefix, spec.namespace_, spec.run_id,
                                                spec.step, spec.attempt);
  // The image admission resolved (the model hooks set RSL_IMAGE), pinned by digest.
  std::string image = opts_.default_image;
  if (auto it = spec.env.find("RSL_IMAGE"); it != spec.env.end() && !it->second.empty()) {
    image = it->second;
  }
  auto ref = image::ParseReference(image);
  if (!ref.ok()) return ref.error();
  if (auto d = spec.env.find("RSL_IMAGE_DIGEST"); d != spec.env.end() && !d->second.empty()) {
    image = ref->Name() + "@" + d->second;
  }
  // Dependencies' inputs: the engine's values are local paths; which variables they are.
  std::set<std::string> dep_vars;
  std::map<std::string, std::string> env = spec.env;
  for (const auto& [k, v] : spec.env) {
    if (!StartsWith(k, "RSL_INPUT_") || k == "RSL_INPUT_URI") continue;
    dep_vars.insert(k);
  }
  env.erase("PATH");  // the image's own PATH applies
  env["RSL_OUTPUT"] = staging;
  env["RSL_BACKEND"] = "k8s";
  env["RSL_METRICS_FILE"] = std::string(kWorkDir) + "/.rsl-metrics.json";
  env["RSL_PROGRESS_FILE"] = std::string(kWorkDir) + "/.rsl-progress";
  if (auto in = spec.env.find("RSL_INPUT_URI"); in != spec.env.end()) env["RSL_INPUT"] = in->second;
  json env_list = json::array();
  std::set<std::string> secrets(spec.secret_values.begin(), spec.secret_values.end());
  for (const auto& [k, v] : env) {
    if (dep_vars.count(k)) continue;
    if (secrets.count(v) && !v.empty()) {
      env_list.push_back(
          {{"name", k}, {"valueFrom", {{"secretKeyRef", {{"name", pod}, {"key", k}}}}}});
    } else {
      env_list.push_back({{"name", k}, {"value", v}});
    }
  }
  // RSL_INPUT_<DEP>: the dependency's succeeded attempt's staging URI.
  // (InputUriFor may read the informer's cache: no lock held here.)
  for (const auto& var : dep_vars) {
    // The engine's value is the dependency's committed output directory, which ends with
    // the step's name (and the variable is named after it: spec::StepInputVariable).
    const std::string& local = spec.env.at(var);
    std::string base = local;
    while (!base.empty() && base.back() == '/') base.pop_back();
    const std::string dep_step = base.substr(base.find_last_of('/') + 1);
    if (spec::StepInputVariable(dep_step) != var) {
      // A hook moved it: keep the engine's value (a shared path, or an object-store URI).
      env_list.push_back({{"name", var}, {"value", local}});
      continue;
    }
    env_list.push_back({{"name", var}, {"value", InputUriFor(spec, dep_step, ns)}});
  }
  std::sort(env_list.begin(), env_list.end(),
            [](const json& a, const json& b) { return a["name"] < b["name"]; });

  int64_t cpu = spec.cpu_millis > 0 ? spec.cpu_millis : opts_.default_cpu_millis;
  int64_t mem = spec.memory_bytes > 0 ? spec.memory_bytes : opts_.default_memory_bytes;
  json limits = {{"cpu", CpuQuantity(cpu)}, {"memory", MemoryQuantity(mem)}};
  if (spec.gpus > 0) limits[kGpuResource] = std::to_string(spec.gpus);
  json requests = {{"cpu", CpuQuantity(cpu)}, {"memory", MemoryQuantity(mem)}};

  json mounts = json::array({{{"name", kWorkVolume}, {"mountPath", kWorkDir}}});
  json volumes = json::array({{{"name", kWorkVolume}, {"emptyDir", json::object()}}});
  if (IsFileUri(opts_.staging_prefix)) {
    std::string root = FilePath(opts_.staging_prefix);
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    mounts.push_back({{"name", kStagingVolume}, {"mountPath", root}});
    volumes.push_back(
        {{"name", kStagingVolume}, {"hostPath", {{"path", root}, {"type", "DirectoryOrCreate"}}}});
  }
  json container = {{"name", "main"},
                    {"image", image},
                    {"command", spec.argv},
                    {"env", env_list},
                    {"resources", {{"requests", requests}, {"limits", limits}}},
                    {"workingDir", kWorkDir},
                    {"volumeMounts", mounts}};
  json pod_spec = {{"restartPolicy", "Never"},
                   {"containers", json::array({container})},
                   {"volumes", volumes},
                   {"enableServiceLinks", false}};
  if (spec.timeout_ms && *spec.timeout_ms > 0) {
    pod_spec["activeDeadlineSeconds"] = std::max<int64_t>(1, (*spec.timeout_ms + 999) / 1000);
  }
  if (!spec.capabilities.empty()) {
    json exprs = json::array();
    for (const auto& cap : spec.capabilities) {
      const NodeRequirement* r = opts_.capability_labels.Find(cap);
      if (r == nullptr) {
        return Error(codes::kK8sCapabilityUnmapped,
                     "capability " + Quote(cap) + " has no node label on Kubernetes")
            .Path("step " + spec.step + ": resources.gpu.capability")
            .Value(cap)
            .Hint("map it in the capability label table (--capability-labels FILE)");
      }
      json e = {{"key", r->key}, {"operator", r->op}};
      if (!r->values.empty()) e["values"] = r->values;
      exprs.push_back(e);
    }
    pod_spec["affinity"] = {
        {"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms", json::array({{{"matchExpressions", exprs}}})}}}}}};
  }
  if (spec.gpus > 0) {
    pod_spec["tolerations"] =
        json::array({{{"key", kGpuResource}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  }
  json meta = {
      {"name", pod},
      {"namespace", ns},
      {"labels", AttemptLabels(spec)},
      {"annotations", {{kAnnotationAttempt, spec.attempt_id}}},
      {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                        {"kind", "ConfigMap"},
                                        {"name", RunOwnerName(spec.workload_name, spec.run_id)},
                                        {"uid", owner_uid},
                                        {"controller", true}}})}};
  return json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", pod_spec}};
}

}  // namespace rsl::k8s
