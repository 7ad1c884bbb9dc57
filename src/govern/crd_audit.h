// `seedctl k8s crd-audit --log apiserver.log --crds crds.json` (seed 003 §4.1): accesses to
// custom resources the API server does not serve (group/version/resource, count, first/last
// seen), compared with the registered CRDs: missing entirely, or registered under other
// versions (the seed's table). The log may mix, one per line:
//  - audit.k8s.io/v1 Event JSON lines (the audit log): responseStatus.code 404 without reason
//    NotFound (a missing object answers NotFound; an unserved resource does not);
//  - kube-apiserver klog lines: `unregistered resource "foos.example.com/v1, Resource=foos"`,
//    and httplog lines `verb="LIST" URI="/apis/example.com/v1/foos" ... resp=404` (collection
//    URIs only: a 404 on a named object may be a missing object);
//  - client-go reflector errors: `failed to list *v1alpha1.Foo: the server could not find the
//    requested resource (get foos.example.com)` (the version is the Go type's package).
// Only custom API groups count (a dot in the name, not *.k8s.io).
#pragma once

#include <string>
#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

struct ResourceAccess {
  std::string group, resource;
  int64_t count = 0;
  std::string version;  //!< "" when the log does not say (client-go without a Go type version)
  std::string first_seen, last_seen;  //!< "MM-DD hh:mm:ss.uuuuuu" (klog; audit times converted)
  int first_line = 0;
  std::string status;  //!< "missing" | "version-mismatch" | "not-served" | "registered"
  std::vector<std::string> registered_versions;
};

//! What a log held: lines read, lines of each recognised format, the accesses found.
struct LogScan {
  int64_t lines = 0;         //!< non-empty lines
  int64_t audit_events = 0;  //!< audit.k8s.io Event JSON lines
  int64_t klog_lines = 0;    //!< lines with a klog header (apiserver, client-go)
  int64_t access_lines = 0;  //!< lines reporting an access to an unserved custom resource
  std::vector<ResourceAccess> accesses;
  int64_t recognised() const { return audit_events + klog_lines; }
};

std::vector<RuleInfo> CrdAuditRules();

//! Reads every line in the formats above; other lines are counted, not matched. Accesses are
//! sorted by group/resource/version.
LogScan ScanApiserverLog(const std::string& log_text);
//! ScanApiserverLog(log_text).accesses.
std::vector<ResourceAccess> ExtractUnregisteredAccesses(const std::string& log_text);

//! CRDA004 when no line of the log was recognised (object: the log file).
void ReportLogScan(const LogScan& scan, const std::string& log_file, Report* report);

//! Classifies the accesses against the CRDs in `crds` and adds CRDA001..CRDA003 findings
//! (object: the log file and first line of the access). An access without a version
//! (client-go) to a registered CRD is CRDA002.
void AuditCrdAccesses(std::vector<ResourceAccess>* accesses, const std::vector<K8sObject>& crds,
                      const std::string& log_file, Report* report);

}  // namespace rsl::govern
