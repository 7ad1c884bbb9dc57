// Kubernetes objects as the audits read them: from multi-document YAML manifests, JSON files
// (`kubectl get -o json` dumps, single objects) and `List` objects, from a file or every
// *.yaml / *.yml / *.json file under a directory (recursively, hidden entries skipped). Objects are
// kept as JSON (yaml-cpp scalars are typed the way YAML 1.2 core schema types them; quoted scalars
// stay strings) with the file and line they came from, so findings can point at them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "govern/findings.h"

namespace rsl::govern {

struct K8sObject {
  nlohmann::json obj;
  std::string file;
  int line = 0;  //!< 1-based line of the document / list item (0 for JSON files)

  std::string kind() const;
  std::string name() const;
  std::string namespace_() const;  //!< metadata.namespace ("" when unset)
  std::string api_version() const;
  ObjectRef Ref() const;
};

//! Loads every object under `path` (file, or directory searched recursively). `List` kinds (v1
//! List, PodList, ...) are expanded into their items. Empty documents are skipped. Errors: IO_ERROR
//! (unreadable path), SPEC_PARSE_ERROR with file:line:col (bad YAML/JSON).
Result<std::vector<K8sObject>> LoadObjects(const std::string& path);
//! Same, from text (`file` names the source in positions).
Result<std::vector<K8sObject>> ParseObjects(const std::string& text, const std::string& file);

//! A Kubernetes resource.Quantity ("100m", "2Gi", "1e3", "0.5", 2) as a number of base units
//! (cores, bytes, devices). Errors: INVALID_ARGUMENT naming the value and the accepted forms.
Result<long double> ParseQuantity(const nlohmann::json& value);
Result<long double> ParseQuantity(const std::string& text);
//! Exact enough for Quantity comparison (Cmp): values within 1e-9 relative are equal.
bool QuantityEqual(long double a, long double b);

//! The Pod spec inside a workload object: Pod -> spec; Deployment, StatefulSet, DaemonSet,
//! ReplicaSet, ReplicationController, Job -> spec.template.spec; CronJob ->
//! spec.jobTemplate.spec.template.spec. nullptr for other kinds.
const nlohmann::json* PodSpecOf(const nlohmann::json& obj);
//! The field path of that Pod spec, for fixes: "spec", "spec.template.spec",
//! "spec.jobTemplate.spec.template.spec" (CronJob), "template.spec" (PodTemplate).
std::string PodSpecPathOf(const nlohmann::json& obj);

//! Human-readable quantity for messages: 2Gi, 512Mi, 1.5 (cores), 500m.
std::string FormatMemory(long double bytes);
std::string FormatCpu(long double cores);

}  // namespace rsl::govern
