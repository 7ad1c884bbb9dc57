#include "govern/tenancy.h"

#include <map>
#include <set>

#include "base/strings.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

// Built-in API groups; anything else with a dot in its group is a custom resource.
bool IsCustomResource(const K8sObject& o) {
  std::string av = o.api_version();
  size_t slash = av.find('/');
  if (slash == std::string::npos) return false;  // core v1
  std::string group = av.substr(0, slash);
  if (group.find('.') == std::string::npos) return false;  // apps, batch, autoscaling ...
  if (EndsWith(group, ".k8s.io")) return false;            // networking.k8s.io, rbac ...
  return o.kind() != "CustomResourceDefinition";
}

// Every spec field whose name is targetNamespace / *Namespace with a string value.
void FindNamespaceRefs(const json& j, const std::string& path,
                       std::vector<std::pair<std::string, std::string>>* out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      std::string p = path + "." + k;
      if (v.is_string() &&
          (k == "targetNamespace" || (EndsWith(k, "Namespace") && k != "Namespace"))) {
        out->push_back({p, v.get<std::string>()});
      } else {
        FindNamespaceRefs(v, p, out);
      }
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      FindNamespaceRefs(j[i], path + "[" + std::to_string(i) + "]", out);
  }
}

// The CR's requested cpu/memory: spec.resources.requests (or .limits), summed over
// spec.template...containers when it embeds a pod template, times spec.replicas.
std::map<std::string, long double> Requested(const json& spec) {
  std::map<std::string, long double> out;
  auto add_res = [&](const json& res) {
    for (const char* which : {"requests", "limits"}) {
      if (!res.contains(which) || !res[which].is_object()) continue;
      for (const auto& [name, q] : res[which].items()) {
        if (std::string(which) == "limits" && out.count(name)) continue;
        Result<long double> v = ParseQuantity(q);
        if (v.ok()) out[name] += *v;
      }
      if (std::string(which) == "requests" && !res[which].empty()) break;
    }
  };
  if (spec.contains("resources") && spec["resources"].is_object()) add_res(spec["resources"]);
  json pod = json::object();
  if (spec.contains("template") && spec["template"].is_object())
    pod = spec["template"].value("spec", json::object());
  if (pod.contains("containers") && pod["containers"].is_array()) {
    for (const auto& c : pod["containers"]) add_res(c.value("resources", json::object()));
  }
  long double replicas = spec.contains("replicas") && spec["replicas"].is_number()
                             ? spec["replicas"].get<double>()
                             : 1;
  for (auto& [k, v] : out) v *= replicas;
  return out;
}

bool SelectorMatches(const json& sel, const std::map<std::string, std::string>& labels) {
  if (!sel.is_object()) return false;
  if (sel.contains("matchLabels") && sel["matchLabels"].is_object()) {
    for (const auto& [k, v] : sel["matchLabels"].items()) {
      auto it = labels.find(k);
      if (it == labels.end() || !v.is_string() || it->second != v.get<std::string>()) return false;
    }
  }
  if (sel.contains("matchExpressions") && sel["matchExpressions"].is_array()) {
    for (const auto& e : sel["matchExpressions"]) {
      std::string key = e.value("key", ""), op = e.value("operator", "");
      std::set<std::string> vals;
      if (e.contains("values") && e["values"].is_array()) {
        for (const auto& v : e["values"])
          if (v.is_string()) vals.insert(v.get<std::string>());
      }
      auto it = labels.find(key);
      bool has = it != labels.end();
      if (op == "In" && !(has && vals.count(it->second))) return false;
      if (op == "NotIn" && has && vals.count(it->second)) return false;
      if (op == "Exists" && !has) return false;
      if (op == "DoesNotExist" && has) return false;
    }
  }
  return true;
}

std::string FormatQuantity(const std::string& res, long double v) {
  return res == "memory" ? FormatMemory(v) : res == "cpu" ? FormatCpu(v) : FormatCpu(v);
}

}  // namespace

std::vector<RuleInfo> TenancyRules() {
  return {
      {"TEN001", "CrossNamespaceReference", Severity::kNote,
       "A custom resource's spec points into another namespace."},
      {"TEN002", "TargetNamespaceMissing", Severity::kError,
       "The referenced namespace does not exist in the dump."},
      {"TEN003", "LimitRangeExceeded", Severity::kError,
       "The resource requests more than the target namespace's LimitRange max."},
      {"TEN004", "QuotaExceeded", Severity::kError,
       "The resource requests more than the target namespace's remaining ResourceQuota."},
      {"TEN005", "EgressBlocked", Severity::kError,
       "Egress NetworkPolicies of the source namespace allow no traffic to the target namespace."},
      {"TEN006", "EgressUnrestricted", Severity::kWarning,
       "No egress NetworkPolicy governs the cross-namespace traffic: isolation is bypassed."},
  };
}

void AuditTenancy(const std::vector<K8sObject>& objects, Report* report) {
  std::map<std::string, std::map<std::string, std::string>> ns_labels;
  bool dump_has_namespaces = false;
  std::map<std::string, std::vector<const K8sObject*>> limit_ranges, quotas, netpols;
  for (const auto& o : objects) {
    std::string k = o.kind();
    if (k == "Namespace") {
      dump_has_namespaces = true;
      auto& l = ns_labels[o.name()];
      const json md = o.obj.value("metadata", json::object());
      if (md.contains("labels") && md["labels"].is_object()) {
        for (const auto& [lk, lv] : md["labels"].items())
          if (lv.is_string()) l[lk] = lv;
      }
      l["kubernetes.io/metadata.name"] = o.name();
    } else if (k == "LimitRange") {
      limit_ranges[o.namespace_()].push_back(&o);
    } else if (k == "ResourceQuota") {
      quotas[o.namespace_()].push_back(&o);
    } else if (k == "NetworkPolicy") {
      netpols[o.namespace_()].push_back(&o);
    }
  }
  for (const auto& o : objects) {
    if (!IsCustomResource(o)) continue;
    const json spec = o.obj.value("spec", json::object());
    std::vector<std::pair<std::string, std::string>> refs;
    FindNamespaceRefs(spec, "spec", &refs);
    ObjectRef ref = o.Ref();
    std::string own = o.namespace_().empty() ? "default" : o.namespace_();
    for (const auto& [path, target] : refs) {
      if (target == own || target.empty()) continue;
      report->Add(Finding{"TEN001", Severity::kNote, ref,
                          path + " points into namespace " + target + " from " + own,
                          "make sure " + target + "'s LimitRange, quota and policies allow it"});
      if (dump_has_namespaces && !ns_labels.count(target)) {
        report->Add(Finding{"TEN002", Severity::kError, ref,
                            path + ": namespace " + Quote(target) + " does not exist",
                            "create the namespace or fix " + path});
      }
      std::map<std::string, long double> req = Requested(spec);
      for (const K8sObject* lr : limit_ranges[target]) {
        const json lspec = lr->obj.value("spec", json::object());
        if (!lspec.contains("limits") || !lspec["limits"].is_array()) continue;
        for (const auto& item : lspec["limits"]) {
          std::string type = item.value("type", "Container");
          if (type != "Container" && type != "Pod") continue;
          if (!item.contains("max") || !item["max"].is_object()) continue;
          for (const auto& [res, q] : item["max"].items()) {
            Result<long double> max = ParseQuantity(q);
            if (!max.ok() || !req.count(res) || req[res] <= *max) continue;
            report->Add(Finding{"TEN003", Severity::kError, ref,
                                res + " request " + FormatQuantity(res, req[res]) +
                                    " exceeds LimitRange " + target + "/" + lr->name() + " max " +
                                    FormatQuantity(res, *max) + " (" + type + ")",
                                "lower the request, or raise the LimitRange in " + target});
          }
        }
      }
      for (const K8sObject* rq : quotas[target]) {
        const json hard = rq->obj.value("spec", json::object()).value("hard", json::object());
        const json used = rq->obj.value("status", json::object()).value("used", json::object());
        for (const auto& [key, q] : hard.items()) {
          std::string res = StartsWith(key, "requests.") ? key.substr(9) : key;
          if (res != "cpu" && res != "memory") continue;
          Result<long double> h = ParseQuantity(q);
          long double u = 0;
          if (used.contains(key)) {
            Result<long double> uv = ParseQuantity(used[key]);
            if (uv.ok()) u = *uv;
          }
          if (!h.ok() || !req.count(res)) continue;
          long double left = *h - u;
          if (req[res] > left) {
            report->Add(Finding{"TEN004", Severity::kError, ref,
                                res + " request " + FormatQuantity(res, req[res]) +
                                    " exceeds what quota " + target + "/" + rq->name() +
                                    " has left (" + FormatQuantity(res, left) + ")",
                                "free quota in " + target + " or lower the request"});
          }
        }
      }
      // Egress from the CR's own namespace: policies with Egress in policyTypes (or with
      // egress rules) isolate the selected pods; traffic is allowed if any rule admits the
      // target namespace.
      bool any_egress_policy = false, allowed = false;
      const auto& target_labels =
          ns_labels.count(target)
              ? ns_labels[target]
              : std::map<std::string, std::string>{{"kubernetes.io/metadata.name", target}};
      for (const K8sObject* np : netpols[own]) {
        const json ps = np->obj.value("spec", json::object());
        bool egress = ps.contains("egress");
        if (ps.contains("policyTypes") && ps["policyTypes"].is_array()) {
          for (const auto& t : ps["policyTypes"]) egress = egress || t == "Egress";
        }
        if (!egress) continue;
        any_egress_policy = true;
        if (!ps.contains("egress") || !ps["egress"].is_array()) continue;
        for (const auto& rule : ps["egress"]) {
          if (!rule.contains("to") || !rule["to"].is_array() || rule["to"].empty()) {
            allowed = true;  // no `to`: all destinations
            break;
          }
          for (const auto& peer : rule["to"]) {
            if (peer.contains("namespaceSelector") &&
                SelectorMatches(peer["namespaceSelector"], target_labels)) {
              allowed = true;
            }
          }
        }
      }
      if (any_egress_policy && !allowed) {
        report->Add(
            Finding{"TEN005", Severity::kError, ref,
                    "egress NetworkPolicies in " + own + " allow no traffic to namespace " + target,
                    "add an egress rule with a namespaceSelector matching " + target});
      } else if (!any_egress_policy) {
        report->Add(Finding{"TEN006", Severity::kWarning, ref,
                            "no egress NetworkPolicy in " + own + " governs traffic to " + target,
                            "add a default-deny egress policy and an explicit rule for " + target});
      }
    }
  }
}

}  // namespace rsl::govern
