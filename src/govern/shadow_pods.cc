#include "govern/shadow_pods.h"

#include <cstdio>
#include <ctime>
#include <map>
#include <set>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

std::string Seconds(int64_t s) {
  char buf[64];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s % 3600) / 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  }
  return buf;
}

// Requests (defaulted from limits) of the pod's regular containers: what the scheduler
// accounts against the node for it.
void Requests(const json& spec, ShadowPod* p) {
  if (!spec.contains("containers") || !spec["containers"].is_array()) return;
  for (const auto& c : spec["containers"]) {
    const json res = c.value("resources", json::object());
    const json req = res.value("requests", json::object());
    const json lim = res.value("limits", json::object());
    auto get = [&](const std::string& name) -> double {
      const json* q = req.contains(name) ? &req[name] : lim.contains(name) ? &lim[name] : nullptr;
      if (!q) return 0;
      Result<long double> v = ParseQuantity(*q);
      return v.ok() ? static_cast<double>(*v) : 0;
    };
    p->cpu_cores += get("cpu");
    p->memory_bytes += get("memory");
    p->gpus += get("nvidia.com/gpu");
  }
}

}  // namespace

Result<int64_t> ParseRfc3339(const std::string& text) {
  int y, mo, d, h, mi, s;
  char rest[64] = {0};
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%63s", &y, &mo, &d, &h, &mi, &s, rest) <
      6) {
    return Error(codes::kInvalidArgument, "invalid time " + Quote(text))
        .Value(text)
        .Hint("use RFC 3339, e.g. 2024-03-15T10:22:34Z");
  }
  std::string r = rest;
  if (!r.empty() && r[0] == '.') {
    size_t i = 1;
    while (i < r.size() && std::isdigit(static_cast<unsigned char>(r[i]))) ++i;
    r = r.substr(i);
  }
  int64_t offset = 0;
  if (r == "Z" || r == "z" || r.empty()) {
    offset = 0;
  } else if ((r[0] == '+' || r[0] == '-') && r.size() == 6 && r[3] == ':') {
    int oh = std::atoi(r.substr(1, 2).c_str()), om = std::atoi(r.substr(4, 2).c_str());
    offset = (oh * 3600 + om * 60) * (r[0] == '-' ? -1 : 1);
  } else {
    return Error(codes::kInvalidArgument, "invalid time zone in " + Quote(text))
        .Value(text)
        .Hint("use Z or +hh:mm");
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<int64_t>(timegm(&tm)) - offset;
}

std::vector<RuleInfo> ShadowRules() {
  return {
      {"SHADOW001", "StuckTerminating", Severity::kError,
       "Terminating (deletionTimestamp set) for longer than the limit, finalizers left."},
      {"SHADOW002", "OwnerMissing", Severity::kWarning,
       "An ownerReference points at an owner absent from the input, which has other objects "
       "of that kind."},
      {"SHADOW003", "OwnerInOtherNamespace", Severity::kError,
       "An ownerReference resolves only to an object in another namespace (invalid: owner "
       "references are namespace-local)."},
      {"SHADOW004", "NoControllerOwner", Severity::kNote,
       "ownerReferences present but none has controller: true."},
      {"SHADOW005", "OwnerKindNotInInput", Severity::kNote,
       "Owners of a kind absent from the input were not checked."},
  };
}

ShadowSummary FindShadowPods(const std::vector<K8sObject>& objects, const ShadowOptions& opt,
                             Report* report) {
  // Owners by uid and by namespace/kind/name.
  std::map<std::string, const K8sObject*> by_uid;
  std::map<std::string, const K8sObject*> by_name;
  std::set<std::string> kinds_present;               // kinds with at least one object in the input
  std::map<std::string, int64_t> owners_not_judged;  // owner kind -> references skipped
  for (const auto& o : objects) {
    kinds_present.insert(o.kind());
    const json md = o.obj.value("metadata", json::object());
    std::string uid = md.value("uid", "");
    if (!uid.empty()) by_uid[uid] = &o;
    by_name[o.namespace_() + "/" + o.kind() + "/" + o.name()] = &o;
  }
  ShadowSummary sum;
  for (const auto& o : objects) {
    if (o.kind() != "Pod") continue;
    ShadowPod p;
    p.object = o.Ref();
    const json md = o.obj.value("metadata", json::object());
    const json spec = o.obj.value("spec", json::object());
    p.node = spec.value("nodeName", "");
    Requests(spec, &p);
    auto add = [&](const char* id, Severity s, std::string msg, std::string fix) {
      report->Add(Finding{id, s, p.object, std::move(msg), std::move(fix)});
      p.reasons.push_back(id);
    };
    if (md.contains("deletionTimestamp") && md["deletionTimestamp"].is_string()) {
      Result<int64_t> t = ParseRfc3339(md["deletionTimestamp"]);
      if (t.ok()) {
        // deletionTimestamp is when the grace period ends; terminating since then.
        int64_t age = opt.now_unix - *t;
        if (age > opt.terminating_limit_s) {
          std::vector<std::string> fins;
          if (md.contains("finalizers") && md["finalizers"].is_array()) {
            for (const auto& f : md["finalizers"])
              fins.push_back(f.is_string() ? f.get<std::string>() : f.dump());
          }
          add("SHADOW001", Severity::kError,
              "Terminating for " + Seconds(age) + " (limit " + Seconds(opt.terminating_limit_s) +
                  ")" + (fins.empty() ? "" : ", finalizers: " + Join(fins, ", ")),
              fins.empty() ? "check the node (kubelet down?) or force-delete the pod"
                           : "fix the controller owning the finalizer, or remove it: kubectl "
                             "patch pod " +
                                 o.name() + " -p '{\"metadata\":{\"finalizers\":null}}'");
        }
      }
    }
    bool any_controller = false, any_owner = false;
    if (md.contains("ownerReferences") && md["ownerReferences"].is_array()) {
      for (const auto& ref : md["ownerReferences"]) {
        any_owner = true;
        if (ref.value("controller", false)) any_controller = true;
        std::string uid = ref.value("uid", "");
        std::string desc = ref.value("kind", "") + "/" + ref.value("name", "");
        const K8sObject* owner = nullptr;
        auto u = uid.empty() ? by_uid.end() : by_uid.find(uid);
        if (u != by_uid.end()) {
          owner = u->second;
        } else if (uid.empty()) {
          auto n = by_name.find(o.namespace_() + "/" + ref.value("kind", "") + "/" +
                                ref.value("name", ""));
          if (n != by_name.end()) owner = n->second;
        }
        // Cluster-scoped owners (Node for static pods, ...) are valid from any namespace.
        if (owner && (owner->namespace_() == o.namespace_() || owner->namespace_().empty()))
          continue;
        std::string okind = ref.value("kind", "");
        if (!owner && !kinds_present.count(okind)) {
          // No object of the owner's kind was given: absence proves nothing.
          owners_not_judged[okind]++;
          continue;
        }
        if (!owner) {
          // An owner with that kind/name in another namespace is the cross-namespace case.
          for (const auto& cand : objects) {
            if (cand.kind() == ref.value("kind", "") && cand.name() == ref.value("name", "") &&
                cand.namespace_() != o.namespace_()) {
              owner = &cand;
              break;
            }
          }
        }
        if (owner && owner->namespace_() != o.namespace_()) {
          add("SHADOW003", Severity::kError,
              "owner " + desc + " exists only in namespace " + owner->namespace_() +
                  ": owner references are namespace-local, the garbage collector treats it as "
                  "absent",
              "set the owner in the pod's namespace, or delete the pod");
        } else {
          std::string ns = o.namespace_().empty() ? std::string("default") : o.namespace_();
          add("SHADOW002", Severity::kWarning,
              "owner " + desc + (uid.empty() ? "" : " (uid " + uid + ")") +
                  " is not in the input, which has other " + okind +
                  " objects: it may have been deleted without its pods",
              "confirm with kubectl get " + ToLower(okind) + " -n " + ns + " " +
                  ref.value("name", "") +
                  "; if it is gone, find out why the garbage collector kept the pod before "
                  "removing it");
        }
      }
    }
    if (any_owner && !any_controller) {
      add("SHADOW004", Severity::kNote, "no ownerReference has controller: true",
          "set controller: true on the managing owner");
    }
    bool holds = false;
    for (const auto& r : p.reasons) holds = holds || r != "SHADOW004";
    if (holds) {
      sum.cpu_cores += p.cpu_cores;
      sum.memory_bytes += p.memory_bytes;
      sum.gpus += p.gpus;
      sum.pods.push_back(std::move(p));
    }
  }
  for (const auto& [kind, count] : owners_not_judged) {
    report->Add(Finding{"SHADOW005", Severity::kNote, ObjectRef{kind, "", "*", "", 0},
                        std::to_string(count) + " ownerReference(s) to " + kind +
                            " not checked: the input has no " + kind + " object",
                        "add the owners to the input (e.g. kubectl get pods," + ToLower(kind) +
                            " -A -o json) to check them"});
  }
  return sum;
}

}  // namespace rsl::govern
