#include "govern/lint.h"

#include <map>
#include <set>
#include <tuple>

#include "base/strings.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

// Long-running services (probes matter): Jobs, CronJobs and Pods with restartPolicy Never or
// OnFailure run to completion.
bool IsService(const std::string& kind, const nlohmann::json& pod_spec) {
  if (kind == "Pod") return pod_spec.value("restartPolicy", "Always") == "Always";
  return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" ||
         kind == "ReplicaSet" || kind == "ReplicationController";
}

bool HasKey(const json& j, const char* k) {
  return j.is_object() && j.contains(k) && !j[k].is_null();
}

bool RequestsGpu(const json& pod_spec) {
  for (const char* list : {"containers", "initContainers"}) {
    if (!HasKey(pod_spec, list) || !pod_spec[list].is_array()) continue;
    for (const auto& c : pod_spec[list]) {
      if (!HasKey(c, "resources")) continue;
      for (const char* which : {"limits", "requests"}) {
        if (!HasKey(c["resources"], which) || !c["resources"][which].is_object()) continue;
        for (const auto& [name, v] : c["resources"][which].items()) {
          if (EndsWith(name, "/gpu")) return true;
        }
      }
    }
  }
  return false;
}

bool AllContainersHaveLimits(const json& pod_spec) {
  if (!HasKey(pod_spec, "containers") || !pod_spec["containers"].is_array()) return false;
  for (const auto& c : pod_spec["containers"]) {
    const json* lim = HasKey(c, "resources") && HasKey(c["resources"], "limits")
                          ? &c["resources"]["limits"]
                          : nullptr;
    if (!lim || !lim->is_object() || !lim->contains("cpu") || !lim->contains("memory"))
      return false;
  }
  return true;
}

struct HpaMetrics {
  bool cpu_utilization = false;
  bool gpu_memory = false;
};

// autoscaling/v2 metrics (and v1's targetCPUUtilizationPercentage).
HpaMetrics ReadHpaMetrics(const json& spec) {
  HpaMetrics m;
  if (HasKey(spec, "targetCPUUtilizationPercentage")) m.cpu_utilization = true;
  if (!HasKey(spec, "metrics") || !spec["metrics"].is_array()) return m;
  for (const auto& metric : spec["metrics"]) {
    std::string type = metric.value("type", "");
    if (type == "Resource" || type == "ContainerResource") {
      const json& r = type == "Resource" ? metric.value("resource", json::object())
                                         : metric.value("containerResource", json::object());
      if (r.value("name", "") == "cpu") m.cpu_utilization = true;
      continue;
    }
    // Pods / Object / External metrics: a GPU memory target is a metric named like
    // DCGM_FI_DEV_FB_USED, gpu_memory_utilization, nvidia_gpu_memory_used_bytes ...
    for (const char* key : {"pods", "object", "external"}) {
      if (!HasKey(metric, key)) continue;
      std::string name = ToLower(metric[key].value("metric", json::object()).value("name", ""));
      bool gpu = name.find("gpu") != std::string::npos || name.find("dcgm") != std::string::npos;
      bool mem = name.find("mem") != std::string::npos || name.find("fb_used") != std::string::npos;
      if (gpu && mem) m.gpu_memory = true;
    }
  }
  return m;
}

}  // namespace

std::vector<RuleInfo> LintRules() {
  return {
      {"LINT001", "MissingRequests", Severity::kWarning,
       "A container sets no CPU or memory request: the scheduler packs it blindly."},
      {"LINT002", "MissingLimits", Severity::kWarning,
       "A container sets no memory limit: one leak can exhaust the node."},
      {"LINT003", "MissingReadinessProbe", Severity::kWarning,
       "A long-running container has no readinessProbe."},
      {"LINT004", "MissingLivenessProbe", Severity::kNote,
       "A long-running container has no livenessProbe."},
      {"LINT005", "HpaTargetNotInInput", Severity::kNote,
       "An HPA's scaleTargetRef names no object among the inputs (a warning when a similar "
       "name exists)."},
      {"LINT006", "HpaFixedReplicas", Severity::kWarning,
       "An HPA-managed Deployment/StatefulSet sets spec.replicas: every apply resets the scale."},
      {"LINT007", "MinReplicasWithoutLimits", Severity::kWarning,
       "The HPA sets minReplicas but its target has no resource limits: cold starts grab "
       "large instances."},
      {"LINT008", "CpuTargetOnGpuWorkload", Severity::kWarning,
       "A CPU utilisation target on a GPU workload without a GPU memory target: CPU-GPU "
       "mismatch."},
      {"LINT009", "InvalidQuantity", Severity::kError, "A resource quantity does not parse."},
      {"LINT010", "HpaMinAboveMax", Severity::kError, "minReplicas is greater than maxReplicas."},
  };
}

void Lint(const std::vector<K8sObject>& objects, Report* report) {
  // Index of scalable objects by namespace/kind/name.
  std::map<std::string, const K8sObject*> by_key;
  auto key = [](const std::string& ns, const std::string& kind, const std::string& name) {
    return (ns.empty() ? "default" : ns) + "/" + kind + "/" + name;
  };
  for (const auto& o : objects) by_key[key(o.namespace_(), o.kind(), o.name())] = &o;
  std::set<const K8sObject*> hpa_targets;

  for (const auto& o : objects) {
    ObjectRef ref = o.Ref();
    auto add = [&](const char* id, Severity s, std::string msg, std::string fix) {
      report->Add(Finding{id, s, ref, std::move(msg), std::move(fix)});
    };
    if (o.kind() == "HorizontalPodAutoscaler") {
      const json spec = o.obj.value("spec", json::object());
      const json target = spec.value("scaleTargetRef", json::object());
      std::string tkind = target.value("kind", ""), tname = target.value("name", "");
      auto it = by_key.find(key(o.namespace_(), tkind, tname));
      if (it == by_key.end()) {
        std::vector<std::string> names;
        for (const auto& other : objects) {
          if (other.kind() == tkind && other.namespace_() == o.namespace_())
            names.push_back(other.name());
        }
        std::string near = ClosestMatch(tname, names);
        // The target usually lives in another file: only a near miss suggests a typo.
        add("LINT005", near.empty() ? Severity::kNote : Severity::kWarning,
            "scaleTargetRef " + tkind + "/" + tname + " is not among the inputs (namespace " +
                (o.namespace_().empty() ? "default" : o.namespace_()) +
                "): its rules were not checked",
            near.empty() ? "pass the target's manifest too (-f) to check it"
                         : "did you mean " + Quote(near) + "?");
      }
      if (spec.contains("minReplicas") && spec.contains("maxReplicas") &&
          spec["minReplicas"].is_number() && spec["maxReplicas"].is_number() &&
          spec["minReplicas"].get<int64_t>() > spec["maxReplicas"].get<int64_t>()) {
        add("LINT010", Severity::kError,
            "minReplicas " + spec["minReplicas"].dump() + " > maxReplicas " +
                spec["maxReplicas"].dump(),
            "make minReplicas <= maxReplicas");
      }
      if (it == by_key.end()) continue;
      const K8sObject& t = *it->second;
      hpa_targets.insert(&t);
      const json* pod = PodSpecOf(t.obj);
      if (!pod) continue;
      if (spec.contains("minReplicas") && !AllContainersHaveLimits(*pod)) {
        add("LINT007", Severity::kWarning,
            "minReplicas " + spec["minReplicas"].dump() + " but " + t.kind() + "/" + t.name() +
                " has containers without cpu and memory limits",
            "set resources.limits on every container of the target");
      }
      HpaMetrics m = ReadHpaMetrics(spec);
      if (m.cpu_utilization && RequestsGpu(*pod) && !m.gpu_memory) {
        add("LINT008", Severity::kWarning,
            "CPU utilisation target on GPU workload " + t.kind() + "/" + t.name() +
                " without a GPU memory utilisation target",
            "add a Pods/External metric on GPU memory (e.g. DCGM_FI_DEV_FB_USED)");
      }
      continue;
    }
    const json* pod = PodSpecOf(o.obj);
    if (!pod) continue;
    // Regular containers, and sidecars: init containers with restartPolicy Always, which run
    // for the pod's whole life (probes are not demanded of them).
    std::vector<std::tuple<const json*, std::string, bool>> containers;  // c, path, sidecar
    const std::string base = PodSpecPathOf(o.obj);
    for (const char* list : {"containers", "initContainers"}) {
      if (!HasKey(*pod, list) || !(*pod)[list].is_array()) continue;
      size_t i = 0;
      for (const auto& c : (*pod)[list]) {
        bool sidecar = std::string(list) == "initContainers";
        std::string path = base + "." + list + "[" + std::to_string(i++) + "]";
        if (sidecar && (!c.is_object() || c.value("restartPolicy", "") != "Always")) continue;
        containers.emplace_back(&c, path, sidecar);
      }
    }
    const bool service = IsService(o.kind(), *pod);
    size_t index = 0;
    for (const auto& [cp, path, sidecar] : containers) {
      const json& c = *cp;
      std::string cname = std::string(sidecar ? "sidecar " : "container ") +
                          Quote(c.value("name", "#" + std::to_string(index++)));
      const json res = c.value("resources", json::object());
      bool bad_quantity = false;
      for (const char* which : {"requests", "limits"}) {
        if (!HasKey(res, which) || !res[which].is_object()) continue;
        for (const auto& [name, q] : res[which].items()) {
          Result<long double> v = ParseQuantity(q);
          if (!v.ok()) {
            add("LINT009", Severity::kError,
                cname + ": resources." + which + "." + name + ": " + v.error().message,
                v.error().hint);
            bad_quantity = true;
          }
        }
      }
      if (bad_quantity) continue;
      const json req = res.value("requests", json::object());
      const json lim = res.value("limits", json::object());
      // Requests default from limits, so a limit counts as a request.
      bool cpu_req = HasKey(req, "cpu") || HasKey(lim, "cpu");
      bool mem_req = HasKey(req, "memory") || HasKey(lim, "memory");
      if (!cpu_req || !mem_req) {
        add("LINT001", Severity::kWarning,
            cname + " has no " +
                std::string(!cpu_req && !mem_req ? "cpu and memory"
                            : !cpu_req           ? "cpu"
                                                 : "memory") +
                " request",
            "set resources.requests (" + path + ")");
      }
      if (!HasKey(lim, "memory")) {
        add("LINT002", Severity::kWarning, cname + " has no memory limit",
            "set resources.limits.memory (" + path + ")");
      }
      if (service && !sidecar) {
        if (!HasKey(c, "readinessProbe")) {
          add("LINT003", Severity::kWarning, cname + " has no readinessProbe",
              "add a readinessProbe (" + path + ") so traffic waits until it is ready");
        }
        if (!HasKey(c, "livenessProbe")) {
          add("LINT004", Severity::kNote, cname + " has no livenessProbe",
              "add a livenessProbe (" + path + ") to restart it when it hangs");
        }
      }
    }
  }
  for (const K8sObject* t : hpa_targets) {
    if ((t->kind() == "Deployment" || t->kind() == "StatefulSet") && t->obj.contains("spec") &&
        t->obj["spec"].contains("replicas")) {
      report->Add(Finding{"LINT006", Severity::kWarning, t->Ref(),
                          "managed by an HPA but sets spec.replicas " +
                              t->obj["spec"]["replicas"].dump() +
                              ": every apply resets the HPA's scale",
                          "remove spec.replicas from the manifest"});
    }
  }
}

}  // namespace rsl::govern
