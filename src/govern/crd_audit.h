// `seedctl k8s crd-audit --log apiserver.log --crds crds.json` (seed 003 §4.1): accesses to
// unregistered custom resources, extracted from kube-apiserver log lines such as
//   W0315 10:22:34.112] ... unregistered resource "foos.example.com/v1, Resource=foos"
// (group/version/resource, count, first/last seen), compared with the registered CRDs:
// missing entirely, or registered under other versions (the seed's table).
#pragma once

#include <string>
#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

struct ResourceAccess {
  std::string group, version, resource;
  int64_t count = 0;
  std::string first_seen, last_seen;  //!< klog "MMDD hh:mm:ss.uuuuuu" as logged
  int first_line = 0;
  std::string status;  //!< "missing" | "version-mismatch" | "not-served" | "registered"
  std::vector<std::string> registered_versions;
};

std::vector<RuleInfo> CrdAuditRules();

//! Parses the log text; lines without the pattern are ignored. Sorted by group/resource/version.
std::vector<ResourceAccess> ExtractUnregisteredAccesses(const std::string& log_text);

//! Classifies the accesses against the CRDs in `crds` and adds CRDA001..CRDA003 findings
//! (object: the log file and first line of the access).
void AuditCrdAccesses(std::vector<ResourceAccess>* accesses, const std::vector<K8sObject>& crds,
                      const std::string& log_file, Report* report);

}  // namespace rsl::govern
