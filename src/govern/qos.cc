#include "govern/qos.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

constexpr char kBurstPolicyAnnotation[] = "seedance.qos/burst-policy";
constexpr char kLatencyAnnotation[] = "seedance.qos/latency-sensitivity";
constexpr char kNodeCriticalPriorityClass[] = "system-node-critical";

bool IsQosResource(const std::string& name) { return name == "cpu" || name == "memory"; }

// What spec.resources may name (IsSupportedPodLevelResource).
bool IsPodLevelResource(const std::string& name) {
  return IsQosResource(name) || StartsWith(name, "hugepages-");
}

// Reads `obj.resources.requests/limits` (keyed by resource name); `path` is obj's.
Status ReadResources(const json& obj, const std::string& path,
                     std::map<std::string, long double>* requests,
                     std::map<std::string, long double>* limits) {
  const json* res =
      obj.contains("resources") && obj["resources"].is_object() ? &obj["resources"] : nullptr;
  for (const char* which : {"requests", "limits"}) {
    if (!res || !res->contains(which) || !(*res)[which].is_object()) continue;
    auto& dst = std::string(which) == "requests" ? *requests : *limits;
    for (const auto& [name, q] : (*res)[which].items()) {
      Result<long double> v = ParseQuantity(q);
      if (!v.ok()) {
        Error e = v.error();
        return e.Path(path + ".resources." + which + "." + name);
      }
      dst[name] = *v;
    }
  }
  return Status::Ok();
}

// Reads requests/limits of one container, defaulting requests from limits as the API server
// does.
Status ReadContainer(const json& c, const std::string& path, ContainerQos* out) {
  out->name = c.value("name", "");
  RSL_RETURN_IF_ERROR(ReadResources(c, path, &out->requests, &out->limits));
  for (const auto& [name, v] : out->limits) {
    if (!out->requests.count(name)) out->requests[name] = v;
  }
  return Status::Ok();
}

Status ReadContainers(const json& pod_spec, std::vector<ContainerQos>* out) {
  for (const char* list : {"initContainers", "containers"}) {
    if (!pod_spec.contains(list) || !pod_spec[list].is_array()) continue;
    size_t i = 0;
    for (const auto& c : pod_spec[list]) {
      ContainerQos cq;
      cq.init = std::string(list) == "initContainers";
      cq.sidecar = cq.init && c.value("restartPolicy", "") == "Always";
      RSL_RETURN_IF_ERROR(
          ReadContainer(c, "spec." + std::string(list) + "[" + std::to_string(i++) + "]", &cq));
      out->push_back(std::move(cq));
    }
  }
  return Status::Ok();
}

// The pod's request of one resource from its containers (AggregateContainerRequests, the
// sidecar formula): regular containers and sidecars run together; a plain init container
// runs alone beside the sidecars started before it. *any: some container requests it.
long double AggregateRequest(const std::vector<ContainerQos>& cs, const std::string& name,
                             bool* any = nullptr) {
  long double regular = 0, sidecars = 0, init_peak = 0;
  if (any) *any = false;
  for (const auto& c : cs) {
    auto it = c.requests.find(name);
    long double q = it == c.requests.end() ? 0 : it->second;
    if (any && it != c.requests.end()) *any = true;
    if (c.sidecar)
      sidecars += q;
    else if (c.init)
      init_peak = std::max(init_peak, q + sidecars);
    else
      regular += q;
  }
  return std::max(regular + sidecars, init_peak);
}

// Reads spec.resources and defaults its requests as the API server does: a resource with a
// pod-level limit but no pod-level request gets the containers' aggregated request when some
// container sets one, else the limit.
Status ReadPodLevel(const json& pod_spec, const std::vector<ContainerQos>& cs,
                    PodLevelResources* out) {
  RSL_RETURN_IF_ERROR(ReadResources(pod_spec, "spec", &out->requests, &out->limits));
  for (const auto* m : {&out->requests, &out->limits}) {
    for (const auto& [name, q] : *m) out->set = out->set || IsPodLevelResource(name);
  }
  for (const auto& [name, limit] : out->limits) {
    if (!IsPodLevelResource(name) || out->requests.count(name)) continue;
    bool any = false;
    long double aggregated = AggregateRequest(cs, name, &any);
    out->requests[name] = any ? aggregated : limit;
  }
  return Status::Ok();
}

// The end of ComputePodQOS: summed cpu/memory requests and limits (positive ones only), and
// whether every contributor had both a cpu and a memory limit.
std::string ClassOf(const std::map<std::string, long double>& requests,
                    const std::map<std::string, long double>& limits, bool guaranteed) {
  if (requests.empty() && limits.empty()) return "BestEffort";
  if (guaranteed) {
    for (const auto& [name, req] : requests) {
      auto it = limits.find(name);
      if (it == limits.end() || !QuantityEqual(it->second, req)) {
        guaranteed = false;
        break;
      }
    }
  }
  if (guaranteed && requests.size() == limits.size()) return "Guaranteed";
  return "Burstable";
}

// Adds the positive cpu/memory quantities of `from` to `to`; true when both cpu and memory
// were among them.
bool AddQosQuantities(const std::map<std::string, long double>& from,
                      std::map<std::string, long double>* to) {
  bool has_cpu = false, has_mem = false;
  for (const auto& [name, q] : from) {
    if (!IsQosResource(name) || q <= 0) continue;
    (*to)[name] += q;
    has_cpu = has_cpu || name == "cpu";
    has_mem = has_mem || name == "memory";
  }
  return has_cpu && has_mem;
}

// ComputePodQOS over already-read containers and pod-level resources: the pod-level ones alone
// decide when set.
std::string QosOf(const std::vector<ContainerQos>& containers, const PodLevelResources& pod) {
  std::map<std::string, long double> requests, limits;
  if (pod.set) {
    AddQosQuantities(pod.requests, &requests);
    return ClassOf(requests, limits, AddQosQuantities(pod.limits, &limits));
  }
  bool guaranteed = true;
  for (const auto& c : containers) {
    AddQosQuantities(c.requests, &requests);
    if (!AddQosQuantities(c.limits, &limits)) guaranteed = false;
  }
  return ClassOf(requests, limits, guaranteed);
}

std::string FormatDouble(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// The cgroup v2 memory.max / cpu.max the kubelet sets for these limits.
std::string MemoryMax(const std::map<std::string, long double>& limits) {
  auto it = limits.find("memory");
  return it != limits.end() && it->second > 0
             ? FormatDouble("%.0f", static_cast<double>(it->second))
             : "max";
}
std::string CpuMax(const std::map<std::string, long double>& limits) {
  auto it = limits.find("cpu");
  return it != limits.end() && it->second > 0
             ? FormatDouble("%.0f", static_cast<double>(std::llround(it->second * kCfsPeriodUs))) +
                   " " + std::to_string(kCfsPeriodUs)
             : "max " + std::to_string(kCfsPeriodUs);
}

long double MemoryOf(const std::map<std::string, long double>& m) {
  auto it = m.find("memory");
  return it == m.end() ? 0 : it->second;
}

// The oom_score_adj of every container (GetContainerOOMScoreAdjust): a Burstable container's
// memory request plus its share of the pod-level memory request no container claims; a
// sidecar no higher than the regular container with the smallest request.
void SetOomScoreAdj(const std::string& qos_class, bool critical, const PodLevelResources& pod,
                    long double node_memory, std::vector<ContainerQos>* cs) {
  int64_t share = 0;
  const long double pod_memory = MemoryOf(pod.requests);
  bool pod_requests = false;
  for (const auto& [name, q] : pod.requests)
    pod_requests = pod_requests || IsPodLevelResource(name);
  if (pod_requests && pod_memory > 0 && !cs->empty()) {
    int64_t rest =
        static_cast<int64_t>(pod_memory) - static_cast<int64_t>(AggregateRequest(*cs, "memory"));
    share = rest / static_cast<int64_t>(cs->size());
  }
  bool any_regular = false;
  long double min_regular = 0;
  for (const auto& c : *cs) {
    if (c.init) continue;
    long double m = MemoryOf(c.requests);
    min_regular = any_regular ? std::min(min_regular, m) : m;
    any_regular = true;
  }
  for (auto& c : *cs) {
    c.oom_score_adj = OomScoreAdj(qos_class, critical, MemoryOf(c.requests) + share, node_memory);
    if (c.sidecar && any_regular) {
      c.oom_score_adj = std::min(
          c.oom_score_adj, OomScoreAdj(qos_class, critical, min_regular + share, node_memory));
    }
  }
}

long double Sum(const std::vector<ContainerQos>& cs, bool limits, const std::string& name,
                bool* all_set) {
  long double total = 0;
  *all_set = true;
  for (const auto& c : cs) {
    if (c.init && !c.sidecar) continue;  // regular init containers run before, not beside
    const auto& m = limits ? c.limits : c.requests;
    auto it = m.find(name);
    if (it == m.end() || it->second <= 0) {
      *all_set = false;
    } else {
      total += it->second;
    }
  }
  return total;
}

void ExplainAnnotations(const K8sObject& o, const json& annotations,
                        const std::vector<ContainerQos>& cs, QosResult* r, Report* report) {
  ObjectRef ref = o.Ref();
  auto add = [&](const char* id, Severity sev, std::string msg, std::string fix) {
    report->Add(Finding{id, sev, ref, std::move(msg), std::move(fix)});
    r->findings.push_back(id);
  };
  if (annotations.contains(kLatencyAnnotation) && annotations[kLatencyAnnotation].is_string()) {
    std::string v = annotations[kLatencyAnnotation];
    static const std::vector<std::string> kKnown = {"memory-bandwidth-bound", "latency-critical",
                                                    "throughput"};
    if (std::find(kKnown.begin(), kKnown.end(), v) == kKnown.end()) {
      std::string near = ClosestMatch(v, kKnown);
      add("QOS006", Severity::kWarning,
          std::string(kLatencyAnnotation) + ": unknown value " + Quote(v),
          near.empty() ? "use one of memory-bandwidth-bound, latency-critical, throughput"
                       : "did you mean " + Quote(near) + "?");
    } else {
      r->annotation_cgroup["latency-sensitivity"] = v;
    }
  }
  if (!annotations.contains(kBurstPolicyAnnotation) ||
      !annotations[kBurstPolicyAnnotation].is_string()) {
    return;
  }
  std::string policy = annotations[kBurstPolicyAnnotation];
  std::vector<std::string> explained;
  bool all_set = false;
  for (const auto& part : Split(policy, ',')) {
    std::string item(Trim(part));
    if (item.empty()) continue;
    size_t colon = item.find(':');
    std::string key = colon == std::string::npos ? item : std::string(Trim(item.substr(0, colon)));
    std::string val = colon == std::string::npos ? "" : std::string(Trim(item.substr(colon + 1)));
    if (key == "mem-soft-limit") {
      Result<long double> q = ParseQuantity(val);
      if (!q.ok() || *q <= 0) {
        add("QOS006", Severity::kWarning,
            std::string(kBurstPolicyAnnotation) + ": invalid mem-soft-limit " + Quote(val),
            "write a memory quantity, e.g. mem-soft-limit:3Gi");
        continue;
      }
      r->annotation_cgroup["memory.high"] = FormatDouble("%.0f", static_cast<double>(*q));
      explained.push_back("memory.high=" + FormatMemory(*q) + " (reclaim/throttle above it)");
      long double limit = Sum(cs, true, "memory", &all_set);
      if (all_set && *q > limit) {
        add("QOS006", Severity::kWarning,
            "mem-soft-limit " + FormatMemory(*q) + " is above the memory limit " +
                FormatMemory(limit) + ": memory.high never applies before memory.max",
            "set mem-soft-limit below the memory limit");
      }
    } else if (key == "cpu-burst-cap") {
      std::string pct = EndsWith(val, "%") ? val.substr(0, val.size() - 1) : val;
      char* end = nullptr;
      double p = std::strtod(pct.c_str(), &end);
      if (pct.empty() || !end || *end != '\0' || !(p > 0)) {
        add("QOS006", Severity::kWarning,
            std::string(kBurstPolicyAnnotation) + ": invalid cpu-burst-cap " + Quote(val),
            "write a percentage of the CPU request, e.g. cpu-burst-cap:300%");
        continue;
      }
      long double req = Sum(cs, false, "cpu", &all_set);
      if (req <= 0) {
        r->annotation_cgroup["cpu.max"] = "max " + std::to_string(kCfsPeriodUs);
        explained.push_back("cpu.max=max (no CPU request to scale " + val + " from)");
        continue;
      }
      long double quota = req * (p / 100.0) * kCfsPeriodUs;
      std::string cpu_max = FormatDouble("%.0f", static_cast<double>(std::llround(quota))) + " " +
                            std::to_string(kCfsPeriodUs);
      r->annotation_cgroup["cpu.max"] = cpu_max;
      explained.push_back("cpu.max=\"" + cpu_max + "\" (" + val + " of the " + FormatCpu(req) +
                          " CPU request)");
    } else {
      add("QOS006", Severity::kWarning,
          std::string(kBurstPolicyAnnotation) + ": unknown key " + Quote(key),
          "known keys: mem-soft-limit, cpu-burst-cap");
    }
  }
  if (!explained.empty()) {
    add("QOS004", Severity::kNote,
        std::string(kBurstPolicyAnnotation) + " implies cgroup v2 " + Join(explained, ", "), "");
  }
}

}  // namespace

std::vector<RuleInfo> QosRules() {
  return {
      {"QOS001", "MemoryRequestFarBelowLimit", Severity::kWarning,
       "Memory limit is more than the threshold times the request: the pod is packed densely "
       "and is an early OOM/eviction victim under node memory pressure."},
      {"QOS002", "CpuRequestFarBelowLimit", Severity::kWarning,
       "CPU limit is more than the threshold times the request."},
      {"QOS003", "BestEffortPod", Severity::kWarning,
       "No requests or limits: BestEffort pods are evicted first (oom_score_adj 1000)."},
      {"QOS004", "SeedanceQosAnnotation", Severity::kNote,
       "The seedance.qos/* annotations explained as cgroup v2 memory.high / cpu.max."},
      {"QOS005", "InvalidQuantity", Severity::kError, "A resource quantity does not parse."},
      {"QOS006", "InvalidSeedanceAnnotation", Severity::kWarning,
       "A seedance.qos/* annotation is malformed, unknown or contradicts the limits."},
      {"QOS007", "StatusQosMismatch", Severity::kWarning,
       "status.qosClass differs from the class the spec implies (the spec was edited?)."},
  };
}

Result<std::string> ComputeQosClass(const json& pod_spec) {
  std::vector<ContainerQos> cs;
  RSL_RETURN_IF_ERROR(ReadContainers(pod_spec, &cs));
  PodLevelResources pod;
  RSL_RETURN_IF_ERROR(ReadPodLevel(pod_spec, cs, &pod));
  return QosOf(cs, pod);
}

int OomScoreAdj(const std::string& qos_class, bool node_critical, long double memory_request,
                long double node_memory_bytes) {
  if (node_critical) return kGuaranteedOomScoreAdj;
  if (qos_class == "Guaranteed") return kGuaranteedOomScoreAdj;
  if (qos_class == "BestEffort") return kBestEffortOomScoreAdj;
  // Integer arithmetic as in Go: 1000 - (1000*memoryRequest)/memoryCapacity.
  int64_t req = static_cast<int64_t>(memory_request);
  int64_t cap = static_cast<int64_t>(node_memory_bytes);
  int64_t adj = cap > 0 ? 1000 - (1000 * req) / cap : 1000;
  if (adj < 1000 + kGuaranteedOomScoreAdj) return 1000 + kGuaranteedOomScoreAdj;
  if (adj == kBestEffortOomScoreAdj) return static_cast<int>(adj - 1);
  return static_cast<int>(adj);
}

json QosResult::ToJson() const {
  json cs = json::array();
  for (const auto& c : containers) {
    json req = json::object(), lim = json::object();
    for (const auto& [k, v] : c.requests) req[k] = static_cast<double>(v);
    for (const auto& [k, v] : c.limits) lim[k] = static_cast<double>(v);
    cs.push_back({{"name", c.name},
                  {"init", c.init},
                  {"sidecar", c.sidecar},
                  {"requests", req},
                  {"limits", lim},
                  {"oomScoreAdj", c.oom_score_adj},
                  {"memoryMax", c.memory_max},
                  {"cpuMax", c.cpu_max}});
  }
  json j = {{"kind", object.kind},
            {"namespace", object.namespace_},
            {"name", object.name},
            {"qosClass", qos_class},
            {"computedQosClass", computed_class},
            {"source", from_status ? "status" : "computed"},
            {"containers", cs},
            {"findings", findings}};
  if (!annotation_cgroup.empty()) j["annotationCgroup"] = annotation_cgroup;
  if (pod.set) {
    json req = json::object(), lim = json::object();
    for (const auto& [k, v] : pod.requests) req[k] = static_cast<double>(v);
    for (const auto& [k, v] : pod.limits) lim[k] = static_cast<double>(v);
    j["podResources"] = {{"requests", req},
                         {"limits", lim},
                         {"memoryMax", MemoryMax(pod.limits)},
                         {"cpuMax", CpuMax(pod.limits)}};
  }
  j["evictionMemoryRequest"] = static_cast<double>(eviction_memory_request);
  return j;
}

std::vector<QosResult> AnalyzeQos(const std::vector<K8sObject>& objects, const QosOptions& options,
                                  Report* report) {
  std::vector<QosResult> results;
  for (const auto& o : objects) {
    const json* spec = PodSpecOf(o.obj);
    if (!spec) continue;
    QosResult r;
    r.object = o.Ref();
    auto add = [&](const char* id, Severity sev, std::string msg, std::string fix) {
      report->Add(Finding{id, sev, r.object, std::move(msg), std::move(fix)});
      r.findings.push_back(id);
    };
    Status st = ReadContainers(*spec, &r.containers);
    if (st.ok()) st = ReadPodLevel(*spec, r.containers, &r.pod);
    if (!st.ok()) {
      add("QOS005", Severity::kError, st.error().path + ": " + st.error().message, st.error().hint);
      results.push_back(std::move(r));
      continue;
    }
    r.computed_class = QosOf(r.containers, r.pod);
    r.qos_class = r.computed_class;
    if (o.obj.contains("status") && o.obj["status"].is_object() &&
        o.obj["status"].contains("qosClass") && o.obj["status"]["qosClass"].is_string()) {
      r.qos_class = o.obj["status"]["qosClass"];
      r.from_status = true;
      if (r.qos_class != r.computed_class) {
        add("QOS007", Severity::kWarning,
            "status.qosClass is " + r.qos_class + " but the spec implies " + r.computed_class,
            "the pod's QoS class is fixed at creation; recreate the pod to apply the spec");
      }
    }
    bool critical = spec->value("priorityClassName", "") == kNodeCriticalPriorityClass;
    SetOomScoreAdj(r.qos_class, critical, r.pod, options.node_memory_bytes, &r.containers);
    r.eviction_memory_request = r.pod.requests.count("memory")
                                    ? r.pod.requests.at("memory")
                                    : AggregateRequest(r.containers, "memory");
    // Limits far above requests: per container, and for the pod as a whole.
    auto check_ratios = [&](const std::string& who, const std::map<std::string, long double>& req,
                            const std::map<std::string, long double>& lim) {
      for (const char* res : {"memory", "cpu"}) {
        if (!req.count(res) || !lim.count(res) || req.at(res) <= 0) continue;
        double ratio = static_cast<double>(lim.at(res) / req.at(res));
        if (ratio <= options.ratio_threshold) continue;
        bool mem = std::string(res) == "memory";
        add(mem ? "QOS001" : "QOS002", Severity::kWarning,
            who + ": " + res + " limit " +
                (mem ? FormatMemory(lim.at(res)) : FormatCpu(lim.at(res))) + " is " +
                FormatDouble("%.1f", ratio) + "x the request " +
                (mem ? FormatMemory(req.at(res)) : FormatCpu(req.at(res))) + " (threshold " +
                FormatDouble("%.1f", options.ratio_threshold) + "x)" +
                (mem ? "; dense packing and early OOM kill/eviction under memory pressure" : ""),
            "raise the " + std::string(res) +
                " request towards the limit (requests == limits "
                "gives Guaranteed)");
      }
    };
    for (auto& c : r.containers) {
      c.memory_max = MemoryMax(c.limits);
      c.cpu_max = CpuMax(c.limits);
      check_ratios("container " + Quote(c.name), c.requests, c.limits);
    }
    if (r.pod.set) check_ratios("pod-level resources", r.pod.requests, r.pod.limits);
    if (r.qos_class == "BestEffort") {
      add("QOS003", Severity::kWarning,
          "BestEffort: no requests or limits, evicted first under node pressure "
          "(oom_score_adj 1000)",
          "set at least a memory request (e.g. the 512Mi a log buffer needs)");
    }
    const json& md = o.obj.contains("metadata") ? o.obj["metadata"] : json();
    if (md.is_object() && md.contains("annotations") && md["annotations"].is_object()) {
      ExplainAnnotations(o, md["annotations"], r.containers, &r, report);
    }
    // Workload templates carry annotations on the pod template too.
    if (o.kind() != "Pod" && o.obj.contains("spec") && o.obj["spec"].is_object() &&
        o.obj["spec"].contains("template")) {
      const json& t = o.obj["spec"]["template"];
      if (t.is_object() && t.contains("metadata") && t["metadata"].is_object() &&
          t["metadata"].contains("annotations") && t["metadata"]["annotations"].is_object()) {
        ExplainAnnotations(o, t["metadata"]["annotations"], r.containers, &r, report);
      }
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace rsl::govern
