// `seedctl k8s qos`: the QoS class of every Pod-bearing object exactly as Kubernetes computes
// it (pkg/apis/core/v1/helper/qos ComputePodQOS, after the API server's defaulting of
// requests from limits), the oom_score_adj the kubelet assigns (pkg/kubelet/qos/policy.go
// GetContainerOOMScoreAdjust, with the sidecar rule of 1.31+), eviction risk from requests far
// below limits, and the seed's `seedance.qos/*` annotations explained as the cgroup v2 knobs
// they imply.
//
// Pod-level resources (`spec.resources`, the PodLevelResources feature, beta and on by default
// since 1.34) are modelled as the feature defines them: when the pod names cpu, memory or hugepages
// there, its class comes from the pod-level requests and limits alone; pod-level requests are
// defaulted from pod-level limits (to the containers' aggregated requests where they set one);
// the pod memory request the containers do not claim is shared equally among them for
// oom_score_adj; and the kubelet's eviction ranking compares usage with the pod-level memory
// request.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

// Constants of pkg/kubelet/qos/policy.go.
inline constexpr int kGuaranteedOomScoreAdj = -997;
inline constexpr int kBestEffortOomScoreAdj = 1000;
//! The memory/cpu limit-to-request ratio above which QOS001/QOS002 flag eviction risk.
inline constexpr double kDefaultRatioThreshold = 4.0;
//! The seed's worker nodes have 8G of memory (ch.2.2); oom_score_adj of Burstable containers
//! depends on node capacity, so it is a flag (--node-memory).
inline constexpr long double kDefaultNodeMemoryBytes = 8.0L * 1024 * 1024 * 1024;
//! cgroup v2 cpu.max period the kubelet uses (100 ms).
inline constexpr int64_t kCfsPeriodUs = 100000;

struct QosOptions {
  double ratio_threshold = kDefaultRatioThreshold;
  long double node_memory_bytes = kDefaultNodeMemoryBytes;
};

struct ContainerQos {
  std::string name;
  bool init = false;
  bool sidecar = false;                         //!< init container with restartPolicy: Always
  std::map<std::string, long double> requests;  //!< after defaulting from limits
  std::map<std::string, long double> limits;
  int oom_score_adj = 0;
  std::string memory_max;  //!< cgroup v2 memory.max the kubelet sets ("max" if no limit)
  std::string cpu_max;     //!< cgroup v2 cpu.max ("max 100000" if no limit)
};

//! A pod's `spec.resources`, after defaulting.
struct PodLevelResources {
  bool set = false;  //!< names cpu, memory or hugepages-* (requests or limits)
  std::map<std::string, long double> requests;
  std::map<std::string, long double> limits;
};

struct QosResult {
  ObjectRef object;
  PodLevelResources pod;  //!< pod-level resources, when set
  //! The memory request the kubelet's eviction manager ranks the pod by (usage above it
  //! first): the pod-level request when set, else the containers' aggregated requests.
  long double eviction_memory_request = 0;
  std::string qos_class;       //!< Guaranteed | Burstable | BestEffort
  std::string computed_class;  //!< from the spec, even when status.qosClass is present
  bool from_status = false;
  std::vector<ContainerQos> containers;
  //! The seed's annotations turned into cgroup v2 settings (empty when absent).
  std::map<std::string, std::string> annotation_cgroup;
  std::vector<std::string> findings;  //!< ids of this object's findings
  nlohmann::json ToJson() const;
};

//! Pure: the QoS class of a Pod spec as ComputePodQOS computes it. Requests are defaulted
//! from limits per container, and pod-level ones as the feature says, first (the API server's
//! SetDefaults_Pod). Errors: an invalid quantity (INVALID_ARGUMENT with the field path).
Result<std::string> ComputeQosClass(const nlohmann::json& pod_spec);

//! The kubelet's oom_score_adj for one container of a pod of class `qos_class`.
int OomScoreAdj(const std::string& qos_class, bool node_critical, long double memory_request,
                long double node_memory_bytes);

//! Analyses every Pod-bearing object; adds findings QOS001..QOS007 to `report`.
std::vector<QosResult> AnalyzeQos(const std::vector<K8sObject>& objects, const QosOptions& options,
                                  Report* report);

std::vector<RuleInfo> QosRules();

}  // namespace rsl::govern
