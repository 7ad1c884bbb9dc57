// `seedctl k8s crd-diff OLD NEW`: breaking changes between two versions of a
// CustomResourceDefinition (seed 003 ch.3: Seedance Operator v1.8 -> v2.3 changed
// spec.replicas from a required int32 to an optional *int32 and controllers silently
// degraded). Schemas are compared per version name present in both; when the two files
// share no version name, the old storage version is compared with the new storage version.
#pragma once

#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

std::vector<RuleInfo> CrdDiffRules();

//! Compares the CRDs of `old_objs` and `new_objs` (matched by metadata.name; a CRD present
//! only in OLD is CRD016). Adds CRD001..CRD016 findings to `report`.
void DiffCrds(const std::vector<K8sObject>& old_objs, const std::vector<K8sObject>& new_objs,
              Report* report);

}  // namespace rsl::govern
