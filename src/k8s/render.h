#pragma once

// The Kubernetes objects a run becomes (docs/backends/k8s.md): a pure function of a validated
// workload and a small run context, so that `seedctl k8s render` prints exactly what the
// Kubernetes backend creates, and tests check it without a cluster.
//
// For one run:
//   - an owner ConfigMap `<run>` holding the run's identity; every other object names it in
//     ownerReferences, so deleting it deletes the run (Kubernetes' garbage collector);
//   - per envFrom source, a Secret or ConfigMap owned by the run (Secrets carry keys only:
//     render never holds a secret value; the backend fills the values when it creates them);
//   - per batch step attempt, a Pod (restartPolicy Never, requests = limits: QoS Guaranteed);
//   - per serving step, a Deployment (replicas = minReplicas), a Service and, with
//     autoscaling, an autoscaling/v2 HorizontalPodAutoscaler.
// Every name is a DNS-1123 label and every label value valid (k8s/names.h), whatever the RSL
// names are.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "k8s/capability_labels.h"
#include "spec/workload.h"

namespace rsl::k8s {

//! Labels on every object (keys under the rsl.dev/ prefix, plus the managed-by label).
inline constexpr char kLabelManagedBy[] = "app.kubernetes.io/managed-by";
inline constexpr char kManagedByValue[] = "rsl";
inline constexpr char kLabelWorkload[] = "rsl.dev/workload";
inline constexpr char kLabelNamespace[] = "rsl.dev/namespace";
inline constexpr char kLabelRun[] = "rsl.dev/run";
inline constexpr char kLabelStep[] = "rsl.dev/step";
inline constexpr char kLabelAttempt[] = "rsl.dev/attempt";
//! The owner ConfigMap's uid in render output, which the backend replaces by the uid the API
//! server gave the owner when it created it (ownerReferences need one).
inline constexpr char kOwnerUidPlaceholder[] = "00000000-0000-0000-0000-000000000000";
//! What a Secret's value reads as in render output.
inline constexpr char kRedacted[] = "(redacted)";
//! The image of a step that names none (the local backend's host environment has no
//! counterpart on a cluster): a Python image with a shell.
inline constexpr char kDefaultImage[] = "docker.io/library/python:3.12-slim";
//! Requests of a step (and workload) that sets none: a pod without both would not be
//! Guaranteed, and the scheduler would pack it anywhere.
inline constexpr int64_t kDefaultCpuMillis = 1000;
inline constexpr int64_t kDefaultMemoryBytes = int64_t{1} << 30;
//! The port a serving replica listens on (RSL_PORT) when the step sets none.
inline constexpr int64_t kDefaultServingPort = 8080;
//! Where a pod's working directory (metrics and progress files) is mounted (an emptyDir).
inline constexpr char kWorkDir[] = "/rsl/work";
//! The name of that emptyDir volume.
inline constexpr char kWorkVolume[] = "rsl-work";

struct RenderContext {
  //! RSL namespace -> Kubernetes namespace; a namespace not listed maps to the same name (as a
  //! DNS label).
  std::map<std::string, std::string> namespaces;
  std::string run_id = "run-1";
  //! The attempt number of every Pod RenderRun makes (RenderStepPod takes its own).
  int attempt = 1;
  //! RSL_WORKLOAD_ID of the steps (the stored version id); "" = the spec's content digest.
  std::string workload_id;
  //! Image reference as written in the spec -> "sha256:<64 hex>" where admission resolved it.
  std::map<std::string, std::string> image_digests;
  std::string default_image = kDefaultImage;
  //! Object-store prefix steps write their outputs under ("s3://bucket/rsl-staging"): step S's
  //! attempt N writes <prefix>/<namespace>/<run id>/staging/S[.N]. "" = s3://rsl-staging.
  std::string staging_prefix;
  CapabilityLabels capability_labels = CapabilityLabels::Defaults();
  int64_t default_cpu_millis = kDefaultCpuMillis;
  int64_t default_memory_bytes = kDefaultMemoryBytes;
  //! false: no cpu limit (the pod is Burstable; no CFS throttling). Memory and GPUs always have
  //! limits = requests.
  bool cpu_limits = true;
  //! Keys of the RSL secrets steps name in envFrom (values never reach render). A secret not
  //! listed renders with no keys, for the backend to fill.
  std::map<std::string, std::vector<std::string>> secret_keys;
  //! Data of the RSL configmaps steps name in envFrom (not secret: printed).
  std::map<std::string, std::map<std::string, std::string>> config_maps;
};

//! The Kubernetes namespace of RSL namespace `rsl_namespace` under `ctx`.
std::string KubeNamespace(const std::string& rsl_namespace, const RenderContext& ctx);
//! The run's owner ConfigMap name (and the prefix of the other objects' names).
std::string RunObjectName(const spec::Workload& w, const RenderContext& ctx);

//! Every object of the run, owner first, then Secrets/ConfigMaps, then per step in pipeline
//! order its Pod or Deployment/Service/HPA. Errors: K8S_CAPABILITY_UNMAPPED (a requested
//! capability with no node label; path of the capability), K8S_NOT_REPRESENTABLE (a value no
//! Kubernetes field can carry, e.g. scaleDownDelay over an hour), IMAGE_REFERENCE_INVALID.
Result<std::vector<nlohmann::json>> RenderRun(const spec::Workload& w, const RenderContext& ctx);

//! The Pod of attempt `attempt` of batch step `step_index` (what the backend creates for one
//! attempt). `dep_attempts`: the attempt whose output each dependency committed (missing = 1).
Result<nlohmann::json> RenderStepPod(const spec::Workload& w, size_t step_index, int attempt,
                                     const RenderContext& ctx,
                                     const std::map<std::string, int>& dep_attempts = {});

//! The longest behavior.scaleDown.stabilizationWindowSeconds autoscaling/v2 accepts (1h).
inline constexpr int64_t kMaxStabilizationSeconds = 3600;

//! Whole seconds, rounded up, at least 1 (probe periods, deadlines, windows).
int64_t CeilSeconds(int64_t ms);
//! Kubernetes quantities of a Pod's requests and limits: "2" or "1500m" CPUs; memory in the
//! largest binary unit that divides it ("4Gi", "512Mi", "3Ki"), else bytes.
std::string CpuQuantity(int64_t millis);
std::string MemoryQuantity(int64_t bytes);

//! The name of a serving step's Deployment, Service and HPA: one per RSL namespace, workload
//! name and step (a new version updates them in place). `rsl-<workload>-<step>` where the RSL
//! namespace is the Kubernetes namespace's own name (the default mapping); where it is mapped
//! onto another (several RSL namespaces may share one) `rsl-<namespace>-<workload>-<step>-<hash
//! of the three>`, so equal workload names of two RSL namespaces never share objects. Shared by
//! `seedctl k8s render` and the k8s backend.
std::string ServingObjectName(const std::string& rsl_namespace, const std::string& k8s_namespace,
                              const std::string& workload, const std::string& step);

//! What a serving step's Deployment selects (and its Service routes to): RSL's Pods of that
//! workload and step in that RSL namespace, whichever run or version started them.
nlohmann::json ServingSelector(const std::string& workload, const std::string& rsl_namespace,
                               const std::string& step);

//! A serving Deployment's rollout: a new version's Pod comes up before an old one goes
//! (maxUnavailable 0, maxSurge 1), so the endpoint never lacks one.
nlohmann::json ServingStrategy();

//! The ClusterIP Service in front of a serving step's Pods (selected by `selector`), on
//! `port`, named port `http`. Shared by `seedctl k8s render` and the k8s backend.
nlohmann::json ServingService(const nlohmann::json& metadata, const nlohmann::json& selector,
                              int64_t port);

//! The autoscaling/v2 HorizontalPodAutoscaler of Deployment `deployment`: CPU utilization
//! target, min/max replicas and scaleDownDelay as the scale-down stabilization window.
//! Errors: K8S_NOT_REPRESENTABLE (a window past the API's 1h; the caller adds the path).
Result<nlohmann::json> ServingAutoscaler(const nlohmann::json& metadata,
                                         const std::string& deployment,
                                         const spec::Autoscaling& as);

//! The objects as multi-document YAML ("---" between documents), strings quoted wherever YAML
//! would read them as another type.
std::string ToYamlDocuments(const std::vector<nlohmann::json>& objects);

}  // namespace rsl::k8s
