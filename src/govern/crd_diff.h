// `seedctl k8s crd-diff OLD NEW`: breaking changes between two versions of a
// CustomResourceDefinition (seed 003 ch.3: an optional field that used to be required, a
// nullable int, an enum on a free string, ... silently break controllers). Both layouts are
// read: apiextensions.k8s.io/v1 (spec.versions[].schema) and v1beta1 (spec.validation, shared
// by every version, or per-version schemas). Schemas are compared per version name present in
// both; when the two files share no version name, the old storage version is compared with the
// new storage version. A CRD whose schemas cannot be found is reported (CRD017), never passed.
#pragma once

#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

std::vector<RuleInfo> CrdDiffRules();

//! Compares the CRDs of `old_objs` and `new_objs` (matched by metadata.name; a CRD present
//! only in OLD is CRD016). Adds CRD001..CRD021 findings to `report`. Zero-value defaults
//! ("", 0, false) added to optional fields are one CRD010 note per CRD version and value.
void DiffCrds(const std::vector<K8sObject>& old_objs, const std::vector<K8sObject>& new_objs,
              Report* report);

}  // namespace rsl::govern
