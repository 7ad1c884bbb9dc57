// `seedctl k8s tenancy -f dump.json` (seed 003 §4.4): custom resources whose spec points into
// another namespace (spec.targetNamespace and any other spec field named *Namespace), checked
// against that namespace's LimitRange (max per container/pod), its ResourceQuota (hard minus
// used) and the NetworkPolicies' egress rules of the resource's own namespace.
#pragma once

#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

std::vector<RuleInfo> TenancyRules();

//! Adds TEN001..TEN006 findings for the custom resources in `objects`.
void AuditTenancy(const std::vector<K8sObject>& objects, Report* report);

}  // namespace rsl::govern
