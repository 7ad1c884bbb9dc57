// What the k8s backend's two halves share (backend.cc: batch steps as Pods; backend_serving.cc:
// serving steps as a Deployment, a Service and an HPA): paths, labels, small readers
// (k8s/json_fields.h's too).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "base/strings.h"
#include "k8s/json_fields.h"
#include "k8s/names.h"
#include "k8s/render.h"

namespace rsl::k8s {

//! The annotation that names the attempt an object belongs to.
inline constexpr char kAnnotationAttempt[] = "rsl.dev/attempt-id";
//! On a serving Deployment while a new version rolls out: the attempt that still serves (the
//! older version), superseded only once the new one is ready.
inline constexpr char kAnnotationPrevious[] = "rsl.dev/previous-attempt-id";
//! Beside it: what the older version's Deployment, Service and HPA were (labels,
//! ownerReferences, spec; compact JSON), re-applied when the new version never gets ready.
inline constexpr char kAnnotationRollback[] = "rsl.dev/rollback";

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

//! The volume of a Pod's staging directory (its outputs, copied out when it ends).
inline constexpr char kStagingVolume[] = "rsl-staging";

inline constexpr std::string_view kFileScheme = "file://";
inline bool IsFileUri(const std::string& uri) { return StartsWith(uri, kFileScheme); }
inline std::string FilePath(const std::string& uri) { return uri.substr(kFileScheme.size()); }

//! The Kubernetes namespace of an RSL namespace: as mapped in the options, else its DNS label.
inline std::string KubeNs(const std::map<std::string, std::string>& map, const std::string& ns) {
  auto it = map.find(ns);
  return it != map.end() ? it->second : DnsLabel(ns);
}

inline std::string PodsPath(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/pods"; }

inline std::string DeploymentsPath(const std::string& ns) {
  return "/apis/apps/v1/namespaces/" + ns + "/deployments";
}
inline std::string ServicesPath(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/services";
}

inline int64_t ServingPort(const backend::LaunchSpec& s) {
  return s.serving && s.serving->port ? *s.serving->port : kDefaultServingPort;
}

inline std::string Annotation(const nlohmann::json& obj, const char* key) {
  auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) return "";
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return "";
  auto it = ann->find(key);
  return it != ann->end() && it->is_string() ? it->get<std::string>() : "";
}

inline std::string AttemptAnnotation(const nlohmann::json& obj) {
  return Annotation(obj, kAnnotationAttempt);
}

//! The JSON merge patch (RFC 7386) that turns `from` into `to`: members of `to` that differ,
//! null for members of `from` that `to` lacks; objects compared member by member, anything
//! else (lists included) replaced whole.
nlohmann::json MergePatchBetween(const nlohmann::json& from, const nlohmann::json& to);

// The attempt's labels: what adoption selects on.
inline nlohmann::json AttemptLabels(const backend::LaunchSpec& s) {
  return {{kLabelManagedBy, kManagedByValue},
          {kLabelWorkload, LabelValue(s.workload_name)},
          {kLabelNamespace, LabelValue(s.namespace_)},
          {kLabelRun, LabelValue(s.run_id)},
          {kLabelStep, LabelValue(s.step)},
          {kLabelAttempt, std::to_string(s.attempt)}};
}

}  // namespace rsl::k8s
