#include "govern/crd_audit.h"

#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "base/strings.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

// `unregistered resource "<gv>, Resource=<plural>"`, where <gv> is "group/version" or, as the
// seed shows, "<plural>.<group>/<version>".
const std::regex& AccessRe() {
  static const std::regex re(R"re(unregistered resource "([^",]+), Resource=([^"]+)")re");
  return re;
}
// klog header: severity letter, MMDD, time.
const std::regex& KlogRe() {
  static const std::regex re(R"(^[IWEF](\d{4}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?))");
  return re;
}

}  // namespace

std::vector<RuleInfo> CrdAuditRules() {
  return {
      {"CRDA001", "UnregisteredResource", Severity::kError,
       "A custom resource is accessed but no CRD registers its group/resource."},
      {"CRDA002", "VersionMismatch", Severity::kWarning,
       "The CRD exists but does not define the accessed version."},
      {"CRDA003", "VersionNotServed", Severity::kWarning,
       "The accessed version is defined with served: false."},
  };
}

std::vector<ResourceAccess> ExtractUnregisteredAccesses(const std::string& log_text) {
  std::map<std::tuple<std::string, std::string, std::string>, ResourceAccess> acc;
  int line_no = 0;
  for (const auto& line : Split(log_text, '\n')) {
    ++line_no;
    std::smatch m;
    if (!std::regex_search(line, m, AccessRe())) continue;
    std::string gv = m[1].str(), resource = std::string(Trim(m[2].str()));
    std::string group, version;
    size_t slash = gv.rfind('/');
    if (slash == std::string::npos) {
      version = gv;  // core group
    } else {
      group = gv.substr(0, slash);
      version = gv.substr(slash + 1);
    }
    if (StartsWith(group, resource + ".")) group = group.substr(resource.size() + 1);
    std::string ts;
    std::smatch k;
    if (std::regex_search(line, k, KlogRe())) {
      ts = k[1].str().substr(0, 2) + "-" + k[1].str().substr(2) + " " + k[2].str();
    }
    auto& a = acc[{group, resource, version}];
    if (a.count == 0) {
      a.group = group;
      a.version = version;
      a.resource = resource;
      a.first_seen = ts;
      a.first_line = line_no;
    }
    a.count++;
    if (!ts.empty()) {
      if (a.first_seen.empty() || ts < a.first_seen) a.first_seen = ts;
      if (ts > a.last_seen) a.last_seen = ts;
    }
  }
  std::vector<ResourceAccess> out;
  for (auto& [k, v] : acc) out.push_back(std::move(v));
  return out;
}

void AuditCrdAccesses(std::vector<ResourceAccess>* accesses, const std::vector<K8sObject>& crds,
                      const std::string& log_file, Report* report) {
  struct Registered {
    std::map<std::string, bool> versions;  // name -> served
  };
  std::map<std::string, Registered> reg;  // "<plural>.<group>"
  for (const auto& c : crds) {
    if (c.kind() != "CustomResourceDefinition") continue;
    const json spec = c.obj.value("spec", json::object());
    std::string group = spec.value("group", "");
    std::string plural = spec.value("names", json::object()).value("plural", "");
    if (plural.empty()) plural = Split(c.name(), '.')[0];
    auto& r = reg[plural + "." + group];
    if (spec.contains("versions") && spec["versions"].is_array()) {
      for (const auto& v : spec["versions"])
        r.versions[v.value("name", "")] = v.value("served", true);
    } else if (spec.contains("version")) {
      r.versions[spec.value("version", "")] = true;
    }
  }
  for (auto& a : *accesses) {
    std::string gvr = a.resource + "." + a.group + "/" + a.version;
    ObjectRef ref{"CustomResource", "", gvr, log_file, a.first_line};
    std::string seen =
        std::to_string(a.count) + " access(es)" +
        (a.first_seen.empty() ? "" : ", first " + a.first_seen + ", last " + a.last_seen);
    auto it = reg.find(a.resource + "." + a.group);
    if (it == reg.end()) {
      a.status = "missing";
      report->Add(Finding{
          "CRDA001", Severity::kError, ref, gvr + " is not registered (" + seen + ")",
          "register the CRD " + a.resource + "." + a.group + ", or stop the client that uses it"});
      continue;
    }
    for (const auto& [v, served] : it->second.versions) a.registered_versions.push_back(v);
    auto vit = it->second.versions.find(a.version);
    if (vit == it->second.versions.end()) {
      a.status = "version-mismatch";
      report->Add(Finding{
          "CRDA002", Severity::kWarning, ref,
          gvr + ": registered only as " + Join(a.registered_versions, ", ") + " (" + seen + ")",
          "add version " + a.version +
              " to the CRD (with conversion), or update "
              "the client to " +
              a.registered_versions.back()});
    } else if (!vit->second) {
      a.status = "not-served";
      report->Add(
          Finding{"CRDA003", Severity::kWarning, ref,
                  gvr + ": version " + a.version + " is defined but not served (" + seen + ")",
                  "set served: true, or move the client to a served version"});
    } else {
      a.status = "registered";
    }
  }
}

}  // namespace rsl::govern
