#include "govern/crd_diff.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/strings.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

struct Differ {
  ObjectRef ref;
  std::string version_label;  // "v1" or "v1 -> v2"
  Report* report;
  // Paths where a zero-value default ("", 0, false) was added: one grouped note at the end.
  std::map<std::string, std::vector<std::string>> zero_defaults;  // default -> paths

  void Add(const char* id, Severity s, const std::string& path, const std::string& msg,
           const std::string& fix) {
    report->Add(Finding{id, s, ref, version_label + " " + path + ": " + msg, fix});
  }

  static std::string TypeOf(const json& s) {
    std::string t = s.value("type", "");
    if (t == "integer" && s.contains("format")) t += "(" + s.value("format", "") + ")";
    if (t.empty() && s.value("x-kubernetes-int-or-string", false)) t = "int-or-string";
    return t;
  }

  // A schema that accepts any value: no type (and not int-or-string), or unknown fields kept
  // with no properties declared.
  static bool IsOpen(const json& s) {
    bool preserve = s.value("x-kubernetes-preserve-unknown-fields", false);
    bool has_props =
        s.contains("properties") && s["properties"].is_object() && !s["properties"].empty();
    return (preserve && !has_props) || (TypeOf(s).empty() && !has_props && !s.contains("items"));
  }

  static bool IsZeroValue(const json& v) {
    return (v.is_string() && v.get<std::string>().empty()) || (v.is_number() && v == 0) ||
           (v.is_boolean() && !v.get<bool>());
  }

  static std::set<std::string> StrSet(const json& s, const char* key) {
    std::set<std::string> out;
    if (s.contains(key) && s[key].is_array()) {
      for (const auto& v : s[key]) out.insert(v.is_string() ? v.get<std::string>() : v.dump());
    }
    return out;
  }

  // Tightened when the new bound is more restrictive (or newly present).
  void Bound(const json& o, const json& n, const std::string& path, const char* key, bool is_min) {
    if (!n.contains(key) || !n[key].is_number()) return;
    double nv = n[key].get<double>();
    if (!o.contains(key) || !o[key].is_number()) {
      Add("CRD009", Severity::kError, path,
          std::string(key) + " " + n[key].dump() + " added: existing objects may now be invalid",
          "keep the old bounds, or migrate stored objects first");
      return;
    }
    double ov = o[key].get<double>();
    if ((is_min && nv > ov) || (!is_min && nv < ov)) {
      Add("CRD009", Severity::kError, path,
          std::string(key) + " tightened from " + o[key].dump() + " to " + n[key].dump(),
          "keep the old bound, or migrate stored objects first");
    }
  }

  void Compare(const json& o, const json& n, const std::string& path) {
    std::string ot = TypeOf(o), nt = TypeOf(n);
    auto shown = [](const std::string& t) { return t.empty() ? std::string("<any>") : t; };
    if (ot != nt) {
      if (IsOpen(n)) {
        Add("CRD002", Severity::kNote, path,
            "type widened from " + shown(ot) + " to " + shown(nt) +
                (n.value("x-kubernetes-preserve-unknown-fields", false)
                     ? " (x-kubernetes-preserve-unknown-fields)"
                     : "") +
                ": every stored value still validates",
            "make sure clients accept the wider values");
      } else if (IsOpen(o)) {
        Add("CRD002", Severity::kError, path,
            "type narrowed from " + shown(ot) + " to " + shown(nt) +
                ": stored values of another type no longer validate",
            "validate stored objects against the new type before upgrading");
      } else {
        Add("CRD002", Severity::kError, path, "type changed from " + shown(ot) + " to " + shown(nt),
            "add a new field instead of changing a type; convert with a webhook");
      }
    }
    bool opres = o.value("x-kubernetes-preserve-unknown-fields", false);
    bool npres = n.value("x-kubernetes-preserve-unknown-fields", false);
    if (opres && !npres && !IsOpen(n) && ot == nt) {
      Add("CRD020", Severity::kError, path,
          "x-kubernetes-preserve-unknown-fields removed: fields the schema does not declare are "
          "now pruned from stored objects",
          "keep x-kubernetes-preserve-unknown-fields, or declare every field clients write");
    }
    if (n.contains("pattern") && n["pattern"].is_string()) {
      if (!o.contains("pattern")) {
        Add("CRD018", Severity::kError, path,
            "pattern " + n["pattern"].dump() + " added: existing values may now be invalid",
            "validate stored objects against the pattern before upgrading");
      } else if (o["pattern"] != n["pattern"]) {
        Add("CRD018", Severity::kWarning, path,
            "pattern changed from " + o["pattern"].dump() + " to " + n["pattern"].dump(),
            "validate stored objects against the new pattern before upgrading");
      }
    }
    std::set<std::string> orules = Rules(o);
    for (const auto& rule : Rules(n)) {
      if (!orules.count(rule)) {
        Add("CRD019", Severity::kError, path,
            "validation rule added (x-kubernetes-validations): " + rule,
            "check stored objects against the rule before upgrading (updates that leave a "
            "field unchanged are ratcheted from Kubernetes 1.30)");
      }
    }
    bool on = o.value("nullable", false), nn = n.value("nullable", false);
    if (!on && nn) {
      Add("CRD003", Severity::kWarning, path,
          "nullable added: clients that do not expect null (a non-pointer Go field) fail on it",
          "handle null in every client version");
    } else if (on && !nn) {
      Add("CRD004", Severity::kError, path, "nullable removed: stored nulls no longer validate",
          "keep nullable: true, or migrate stored objects first");
    }
    std::set<std::string> oe = StrSet(o, "enum"), ne = StrSet(n, "enum");
    if (!oe.empty() && !ne.empty()) {
      for (const auto& v : oe) {
        if (!ne.count(v)) {
          Add("CRD005", Severity::kError, path, "enum value " + v + " removed",
              "keep the value (deprecate it) until stored objects are migrated");
        }
      }
      for (const auto& v : ne) {
        if (!oe.count(v)) {
          Add("CRD006", Severity::kWarning, path, "enum value " + v + " added",
              "make sure every controller version handles it");
        }
      }
    } else if (oe.empty() && !ne.empty() && !ot.empty() && ot == nt) {
      Add("CRD015", Severity::kError, path,
          "enum restriction added (" + Join(std::vector<std::string>(ne.begin(), ne.end()), ", ") +
              "): existing values may be rejected",
          "validate stored objects against the new enum before upgrading");
    }
    Bound(o, n, path, "minimum", true);
    Bound(o, n, path, "maximum", false);
    Bound(o, n, path, "minLength", true);
    Bound(o, n, path, "maxLength", false);
    Bound(o, n, path, "minItems", true);
    Bound(o, n, path, "maxItems", false);
    if (!o.contains("default") && n.contains("default") && IsZeroValue(n["default"])) {
      zero_defaults[n["default"].dump()].push_back(path.empty() ? "<root>" : path);
    } else if (o.contains("default") != n.contains("default") ||
               (o.contains("default") && o["default"] != n["default"])) {
      Add("CRD010", Severity::kWarning, path,
          "default changed from " + (o.contains("default") ? o["default"].dump() : "<none>") +
              " to " + (n.contains("default") ? n["default"].dump() : "<none>"),
          "objects created without the field now behave differently; document it");
    }
    if (o.value("format", "") != n.value("format", "") && ot.rfind("integer", 0) != 0) {
      Add("CRD011", Severity::kWarning, path,
          "format changed from " + Quote(o.value("format", "")) + " to " +
              Quote(n.value("format", "")),
          "keep the format, or validate stored objects");
    }
    // Required lists.
    std::set<std::string> oreq = StrSet(o, "required"), nreq = StrSet(n, "required");
    for (const auto& r : nreq) {
      if (!oreq.count(r)) {
        Add("CRD007", Severity::kError, Child(path, r), "newly required",
            "give it a default, or keep it optional");
      }
    }
    for (const auto& r : oreq) {
      if (!nreq.count(r) && n.contains("properties") && n["properties"].contains(r)) {
        Add("CRD008", Severity::kWarning, Child(path, r),
            "required -> optional: clients that assume it is set break when it is omitted",
            "handle the field's absence in every client (nil check), or give it a default");
      }
    }
    // Properties.
    if (o.contains("properties") && o["properties"].is_object()) {
      const json np = n.value("properties", json::object());
      bool preserve = n.value("x-kubernetes-preserve-unknown-fields", false);
      for (const auto& [name, sub] : o["properties"].items()) {
        if (!np.contains(name)) {
          if (!preserve) {
            std::vector<std::string> names;
            for (const auto& [k, v] : np.items()) names.push_back(k);
            std::string near = ClosestMatch(name, names);
            Add("CRD001", Severity::kError, Child(path, name), "field removed",
                near.empty() ? "keep the field (deprecated) until clients stop sending it"
                             : "renamed to " + Quote(near) + "? renames break clients too");
          }
          continue;
        }
        Compare(sub, np[name], Child(path, name));
      }
    }
    if (o.contains("items") && o["items"].is_object() && n.contains("items") &&
        n["items"].is_object()) {
      Compare(o["items"], n["items"], path + "[]");
    }
    if (o.contains("additionalProperties") && o["additionalProperties"].is_object() &&
        n.contains("additionalProperties") && n["additionalProperties"].is_object()) {
      Compare(o["additionalProperties"], n["additionalProperties"], path + "{}");
    }
  }

  static std::set<std::string> Rules(const json& s) {
    std::set<std::string> out;
    if (!s.contains("x-kubernetes-validations") || !s["x-kubernetes-validations"].is_array())
      return out;
    for (const auto& v : s["x-kubernetes-validations"]) {
      if (v.is_object() && v.contains("rule") && v["rule"].is_string()) out.insert(v["rule"]);
    }
    return out;
  }

  // One note per default value for the zero-value defaults collected by Compare.
  void Flush() {
    for (const auto& [value, paths] : zero_defaults) {
      std::vector<std::string> shown(paths.begin(),
                                     paths.begin() + std::min<size_t>(paths.size(), 5));
      std::string list = Join(shown, ", ");
      if (paths.size() > shown.size()) {
        list += " (+" + std::to_string(paths.size() - shown.size()) + " more)";
      }
      report->Add(Finding{"CRD010", Severity::kNote, ref,
                          version_label + ": default " + value + " added to " +
                              std::to_string(paths.size()) + " optional field(s): " + list,
                          "a zero-value default changes nothing for clients that read an "
                          "absent field as its zero value; others now see it set"});
    }
    zero_defaults.clear();
  }

  static std::string Child(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }
};

const json* SchemaOf(const json& version) {
  if (version.contains("schema") && version["schema"].is_object() &&
      version["schema"].contains("openAPIV3Schema")) {
    return &version["schema"]["openAPIV3Schema"];
  }
  return nullptr;
}

std::map<std::string, json> Versions(const json& crd) {
  std::map<std::string, json> out;
  const json spec = crd.value("spec", json::object());
  // apiextensions.k8s.io/v1beta1: one schema for every version in spec.validation, unless a
  // version carries its own.
  const json* shared = nullptr;
  if (spec.contains("validation") && spec["validation"].is_object() &&
      spec["validation"].contains("openAPIV3Schema")) {
    shared = &spec["validation"]["openAPIV3Schema"];
  }
  if (spec.contains("versions") && spec["versions"].is_array()) {
    for (const auto& v : spec["versions"]) {
      json copy = v;
      if (shared && !SchemaOf(copy)) copy["schema"] = {{"openAPIV3Schema", *shared}};
      out[v.value("name", "")] = copy;
    }
  } else if (spec.contains("version")) {  // apiextensions/v1beta1 single version
    json v = {{"name", spec["version"]}, {"served", true}, {"storage", true}};
    if (shared) v["schema"] = {{"openAPIV3Schema", *shared}};
    out[spec.value("version", "")] = v;
  }
  return out;
}

std::string StorageVersion(const std::map<std::string, json>& vs) {
  for (const auto& [name, v] : vs) {
    if (v.value("storage", false)) return name;
  }
  return vs.empty() ? "" : vs.begin()->first;
}

}  // namespace

std::vector<RuleInfo> CrdDiffRules() {
  return {
      {"CRD001", "FieldRemoved", Severity::kError, "A field was removed from the schema."},
      {"CRD002", "TypeChanged", Severity::kError,
       "A field's type (or integer format) changed or was narrowed (widening: a note)."},
      {"CRD003", "NullableAdded", Severity::kWarning,
       "nullable was added (int32 -> *int32): old controllers dereference nil."},
      {"CRD004", "NullableRemoved", Severity::kError, "nullable was removed."},
      {"CRD005", "EnumValueRemoved", Severity::kError, "An enum value was removed."},
      {"CRD006", "EnumValueAdded", Severity::kWarning, "An enum value was added."},
      {"CRD007", "NewlyRequired", Severity::kError, "A field became required."},
      {"CRD008", "RequiredToOptional", Severity::kWarning, "A required field became optional."},
      {"CRD009", "BoundTightened", Severity::kError,
       "minimum/maximum/minLength/maxLength/minItems/maxItems tightened or added."},
      {"CRD010", "DefaultChanged", Severity::kWarning,
       "A default was added, removed or changed (zero-value defaults added: one note)."},
      {"CRD011", "FormatChanged", Severity::kWarning, "A string format changed."},
      {"CRD012", "ScopeChanged", Severity::kError, "spec.scope changed (Namespaced <-> Cluster)."},
      {"CRD013", "StoredVersionRemoved", Severity::kError,
       "A version that objects are stored in is no longer listed."},
      {"CRD014", "ServedVersionRemoved", Severity::kError,
       "A served version is no longer served: clients using it get 404."},
      {"CRD015", "EnumAdded", Severity::kError, "An enum restriction was added to a free field."},
      {"CRD016", "CrdRemoved", Severity::kError, "A CRD present in OLD is missing from NEW."},
      {"CRD017", "SchemaNotFound", Severity::kWarning,
       "No schema was found for a CRD, so its versions were not compared."},
      {"CRD018", "PatternAdded", Severity::kError,
       "A pattern was added (or changed) on a string field."},
      {"CRD019", "ValidationRuleAdded", Severity::kError,
       "A CEL validation rule (x-kubernetes-validations) was added."},
      {"CRD020", "PreserveUnknownFieldsRemoved", Severity::kError,
       "x-kubernetes-preserve-unknown-fields was removed: undeclared fields are pruned."},
      {"CRD021", "UnservedVersionRemoved", Severity::kWarning,
       "A version that was no longer served was removed: status.storedVersions must not list it."},
  };
}

void DiffCrds(const std::vector<K8sObject>& old_objs, const std::vector<K8sObject>& new_objs,
              Report* report) {
  std::map<std::string, const K8sObject*> news;
  for (const auto& n : new_objs) {
    if (n.kind() == "CustomResourceDefinition") news[n.name()] = &n;
  }
  for (const auto& o : old_objs) {
    if (o.kind() != "CustomResourceDefinition") continue;
    auto it = news.find(o.name());
    if (it == news.end()) {
      report->Add(Finding{"CRD016", Severity::kError, o.Ref(), "CRD missing from the new version",
                          "keep the CRD, or migrate its objects first"});
      continue;
    }
    const K8sObject& n = *it->second;
    ObjectRef ref = n.Ref();
    std::string oscope = o.obj.value("spec", json::object()).value("scope", "Namespaced");
    std::string nscope = n.obj.value("spec", json::object()).value("scope", "Namespaced");
    if (oscope != nscope) {
      report->Add(Finding{"CRD012", Severity::kError, ref,
                          "scope changed from " + oscope + " to " + nscope,
                          "scope cannot change in place: create a new CRD and migrate"});
    }
    auto ov = Versions(o.obj), nv = Versions(n.obj);
    // Stored versions: the old storage version plus status.storedVersions.
    std::set<std::string> stored = {StorageVersion(ov)};
    const json ostatus = o.obj.value("status", json::object());
    if (ostatus.contains("storedVersions") && ostatus["storedVersions"].is_array()) {
      for (const auto& v : ostatus["storedVersions"]) {
        if (v.is_string()) stored.insert(v.get<std::string>());
      }
    }
    for (const auto& v : stored) {
      if (!v.empty() && !nv.count(v)) {
        report->Add(Finding{"CRD013", Severity::kError, ref,
                            "stored version " + v + " is no longer listed: objects stored as " + v +
                                " become unreadable",
                            "keep " + v +
                                " (served: false) until storage is migrated and "
                                "status.storedVersions no longer lists it"});
      }
    }
    for (const auto& [name, v] : ov) {
      auto nit = nv.find(name);
      if (!v.value("served", true)) {
        if (nit == nv.end() && !stored.count(name)) {
          report->Add(Finding{
              "CRD021", Severity::kWarning, ref,
              "version " + name +
                  " (not served) removed: the API server rejects the new CRD while the live "
                  "CRD's status.storedVersions still lists " +
                  name,
              "rewrite stored objects in the storage version (e.g. kube-storage-version-migrator), "
              "then drop " +
                  name + " from status.storedVersions before upgrading"});
        }
        continue;
      }
      if (stored.count(name) && nit == nv.end()) continue;  // already CRD013
      if (nit == nv.end() || !nit->second.value("served", true)) {
        report->Add(Finding{"CRD014", Severity::kError, ref,
                            "served version " + name + " is no longer served",
                            "keep serving " + name + " with a conversion webhook"});
      }
    }
    bool compared = false;
    for (const auto& [name, v] : ov) {
      auto nit = nv.find(name);
      if (nit == nv.end()) continue;
      const json* os = SchemaOf(v);
      const json* ns = SchemaOf(nit->second);
      if (!os || !ns) continue;
      Differ d{ref, name, report, {}};
      d.Compare(*os, *ns, "");
      d.Flush();
      compared = true;
    }
    if (!compared) {
      std::string os_name = StorageVersion(ov), ns_name = StorageVersion(nv);
      if (ov.count(os_name) && nv.count(ns_name)) {
        const json* os = SchemaOf(ov[os_name]);
        const json* ns = SchemaOf(nv[ns_name]);
        if (os && ns) {
          Differ d{ref, os_name + " -> " + ns_name, report, {}};
          d.Compare(*os, *ns, "");
          d.Flush();
          compared = true;
        }
      }
    }
    if (!compared) {
      auto missing = [](const std::map<std::string, json>& vs) {
        for (const auto& [name, v] : vs) {
          if (SchemaOf(v)) return false;
        }
        return true;
      };
      std::string where = missing(ov) && missing(nv) ? "OLD and NEW" : missing(ov) ? "OLD" : "NEW";
      report->Add(Finding{"CRD017", Severity::kWarning, ref,
                          "schemas not compared: no openAPIV3Schema in " + where +
                              " (looked in spec.versions[].schema and spec.validation)",
                          "pass CRDs with their schemas (kubectl get crd NAME -o yaml)"});
    }
  }
}

}  // namespace rsl::govern
