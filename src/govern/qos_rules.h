// `seedctl k8s qos-rules` and `seedctl k8s qos-check` (seed 003 §2.4): the seed's QoS
// violation thresholds as Prometheus alerting rules, and the same thresholds checked
// offline against a Prometheus query-result export.
//   Guaranteed: CPU > 110 % of request, memory usage > 95 % of limit
//   Burstable:  CPU > 150 % of request, working set > 90 % of limit
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

inline constexpr double kGuaranteedCpuRatio = 1.10;
inline constexpr double kGuaranteedMemoryRatio = 0.95;
inline constexpr double kBurstableCpuRatio = 1.50;
inline constexpr double kBurstableWorkingSetRatio = 0.90;

//! A Prometheus rule file (YAML) with one group `seedance-qos` and four alerts, using
//! cAdvisor (container_*) and kube-state-metrics (kube_pod_container_resource_*,
//! kube_pod_status_qos_class) series. `for_duration` is the alerts' `for:` (e.g. "5m").
std::string PrometheusQosRules(const std::string& for_duration);

std::vector<RuleInfo> QosCheckRules();

//! Compares manifests with measured usage. `metrics_json` is a JSON object whose keys
//! "cpu" (cores, e.g. rate(container_cpu_usage_seconds_total[5m])), "memory_usage"
//! (container_memory_usage_bytes) and "memory_working_set"
//! (container_memory_working_set_bytes) each hold a Prometheus /api/v1/query response
//! (resultType vector) with namespace/pod/container labels. Pods match Pod objects by name,
//! and workload objects (Deployment ...) by the "<name>-" prefix.
//! Errors: INVALID_ARGUMENT when the export is not in that shape.
Status CheckQos(const std::vector<K8sObject>& objects, const std::string& metrics_json,
                const std::string& metrics_file, Report* report);

}  // namespace rsl::govern
