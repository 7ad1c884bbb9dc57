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

// client-go: "the server could not find the requested resource (get foos.example.com)", the
// message of a 404 without a Status body, i.e. an API path the server does not serve.
const std::regex& ReflectorRe() {
  static const std::regex re(
      R"re(the server could not find the requested resource \((?:get|list|watch|create|update|patch|delete|deletecollection) ([a-z0-9.-]+)[ )])re");
  return re;
}
const std::regex& GoTypeVersionRe() {
  static const std::regex re(R"(\*(v\d+(?:(?:alpha|beta)\d+)?)\.[A-Z])");
  return re;
}
// kube-apiserver httplog: `"HTTP" verb="LIST" URI="/apis/..." ... resp=404` (older releases
// without the "HTTP" prefix).
const std::regex& HttplogRe() {
  static const std::regex re(R"re(URI="([^"]+)".*\bresp=404\b)re");
  return re;
}

// /apis/<group>/<version>[/namespaces/<ns>]/<resource>: a collection (list, watch, create).
// A 404 on a named object may just mean the object does not exist, so those are skipped.
bool CollectionOf(const std::string& uri, std::string* group, std::string* version,
                  std::string* resource) {
  std::string path = uri.substr(0, uri.find('?'));
  std::vector<std::string> parts;
  for (const auto& p : Split(path, '/')) {
    if (!p.empty()) parts.push_back(p);
  }
  if (parts.size() < 4 || parts[0] != "apis") return false;
  size_t i = 3;
  if (parts.size() >= 6 && parts[3] == "namespaces") i = 5;
  if (parts.size() != i + 1) return false;
  *group = parts[1];
  *version = parts[2];
  *resource = parts[i];
  return true;
}

// "2024-03-15T10:22:34.112Z" -> "03-15 10:22:34.112" (the klog form the table shows).
std::string KlogTime(const std::string& rfc3339) {
  if (rfc3339.size() < 19 || rfc3339[10] != 'T') return "";
  std::string t = rfc3339.substr(11);
  while (!t.empty() && (t.back() == 'Z' || t.back() == 'z')) t.pop_back();
  size_t tz = t.find_first_of("+-");
  if (tz != std::string::npos) t = t.substr(0, tz);
  return rfc3339.substr(5, 5) + " " + t;
}

// An audit.k8s.io Event of a 404 without a NotFound Status (the server does not serve the
// resource; a missing object answers reason NotFound).
template <typename Record>
void AuditEventAccess(const json& ev, Record&& record) {
  const json status = ev.value("responseStatus", json::object());
  if (!status.is_object() || status.value("code", 0) != 404) return;
  if (status.value("reason", "") == "NotFound") return;
  const json ref = ev.value("objectRef", json::object());
  if (!ref.is_object()) return;
  std::string group = ref.value("apiGroup", ""), version = ref.value("apiVersion", "");
  std::string resource = ref.value("resource", "");
  if (resource.empty()) return;
  record(group, version, resource, KlogTime(ev.value("requestReceivedTimestamp", "")));
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
      {"CRDA004", "LogNotRecognised", Severity::kWarning,
       "No line of the log is an audit event or a klog line: nothing was checked."},
  };
}

LogScan ScanApiserverLog(const std::string& log_text) {
  LogScan scan;
  std::map<std::tuple<std::string, std::string, std::string>, ResourceAccess> acc;
  int line_no = 0;
  auto record = [&](std::string group, const std::string& version, const std::string& resource,
                    const std::string& ts) {
    // Custom resources only: groups with a dot outside *.k8s.io (built-in APIs that were
    // removed are not CRD problems).
    if (group.find('.') == std::string::npos || EndsWith(group, ".k8s.io") || group == "k8s.io") {
      return;
    }
    ++scan.access_lines;
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
  };
  for (const auto& raw : Split(log_text, '\n')) {
    ++line_no;
    std::string line(Trim(raw));
    if (line.empty()) continue;
    ++scan.lines;
    if (line[0] == '{') {
      json ev = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (ev.is_object() && ev.value("kind", "") == "Event" &&
          StartsWith(ev.value("apiVersion", ""), "audit.k8s.io/")) {
        ++scan.audit_events;
        AuditEventAccess(ev, record);
        continue;
      }
    }
    std::smatch k;
    std::string ts;
    if (std::regex_search(line, k, KlogRe())) {
      ++scan.klog_lines;
      ts = k[1].str().substr(0, 2) + "-" + k[1].str().substr(2) + " " + k[2].str();
    }
    std::smatch m;
    if (std::regex_search(line, m, AccessRe())) {
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
      record(group, version, resource, ts);
    } else if (std::regex_search(line, m, ReflectorRe())) {
      // "(get foos.example.com)": resource.group; the version is the Go package of the type
      // the reflector lists ("*v1alpha1.Foo"), when it looks like a version.
      std::string rg = m[1].str();
      size_t dot = rg.find('.');
      if (dot == std::string::npos) continue;
      std::smatch t;
      std::string version;
      if (std::regex_search(line, t, GoTypeVersionRe())) version = t[1].str();
      record(rg.substr(dot + 1), version, rg.substr(0, dot), ts);
    } else if (std::regex_search(line, m, HttplogRe())) {
      std::string group, version, resource;
      if (CollectionOf(m[1].str(), &group, &version, &resource)) {
        record(group, version, resource, ts);
      }
    }
  }
  for (auto& [k, v] : acc) scan.accesses.push_back(std::move(v));
  return scan;
}

std::vector<ResourceAccess> ExtractUnregisteredAccesses(const std::string& log_text) {
  return ScanApiserverLog(log_text).accesses;
}

void ReportLogScan(const LogScan& scan, const std::string& log_file, Report* report) {
  if (scan.recognised() > 0) return;
  report->Add(Finding{"CRDA004", Severity::kWarning, ObjectRef{"Log", "", log_file, log_file, 0},
                      "none of " + std::to_string(scan.lines) +
                          " line(s) is an audit.k8s.io Event or a kube-apiserver/client-go klog "
                          "line: nothing was checked",
                      "pass the audit log (JSON lines) or the kube-apiserver / controller log"});
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
    if (a.version.empty()) {
      a.status = "version-mismatch";
      report->Add(Finding{"CRDA002", Severity::kWarning, ref,
                          gvr +
                              ": the server did not serve the version the client asked for "
                              "(the log does not name it); registered as " +
                              Join(a.registered_versions, ", ") + " (" + seen + ")",
                          "check the client's API version against the CRD's served versions"});
    } else if (vit == it->second.versions.end()) {
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
