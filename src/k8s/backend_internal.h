// What the k8s backend's two halves share (backend.cc: batch steps as Pods; backend_serving.cc:
// serving steps as a Deployment, a Service and an HPA): paths, labels, small readers.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/backend.h"
#include "k8s/names.h"
#include "k8s/render.h"

namespace rsl::k8s {

//! The annotation that names the attempt an object belongs to.
inline constexpr char kAnnotationAttempt[] = "rsl.dev/attempt-id";

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline std::string Str(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

inline std::string DeploymentsPath(const std::string& ns) {
  return "/apis/apps/v1/namespaces/" + ns + "/deployments";
}
inline std::string ServicesPath(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/services";
}

inline int64_t ServingPort(const backend::LaunchSpec& s) {
  return s.serving && s.serving->port ? *s.serving->port : kDefaultServingPort;
}

inline std::string AttemptAnnotation(const nlohmann::json& obj) {
  return obj.value("metadata", nlohmann::json::object())
      .value("annotations", nlohmann::json::object())
      .value(kAnnotationAttempt, "");
}

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
