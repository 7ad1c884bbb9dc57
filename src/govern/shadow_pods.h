// `seedctl k8s shadow-pods -f pods.json [--now T]` (seed 003 §3.3): "shadow pods" an operator
// failed to clean up, which keep holding requested compute: pods Terminating longer than a
// limit (deletionTimestamp set, finalizers left), and pods whose ownerReferences point at
// owners absent from the dump or living in another namespace (owner references are
// namespace-local, so such a reference is dangling for the garbage collector). An owner is
// judged absent only when the input holds other objects of its kind: a pods-only dump proves
// nothing about ReplicaSets or custom resources, so those references are counted in one note
// per kind instead. Advice never deletes on absence of evidence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

//! Terminating longer than this is suspicious: the default grace period is 30 s, so ten
//! minutes leaves room for slow preStop hooks while catching stuck finalizers.
inline constexpr int64_t kDefaultTerminatingLimitSeconds = 600;

struct ShadowOptions {
  int64_t now_unix = 0;  //!< "now" (seconds since the epoch)
  int64_t terminating_limit_s = kDefaultTerminatingLimitSeconds;
};

struct ShadowPod {
  ObjectRef object;
  std::vector<std::string> reasons;  //!< finding ids
  double cpu_cores = 0;              //!< requested (what it still holds on its node)
  double memory_bytes = 0;
  double gpus = 0;
  std::string node;
};

struct ShadowSummary {
  std::vector<ShadowPod> pods;
  double cpu_cores = 0, memory_bytes = 0, gpus = 0;
};

std::vector<RuleInfo> ShadowRules();

//! "2024-03-15T10:22:34Z" (RFC 3339, optional fraction and offset) -> unix seconds.
//! Errors: INVALID_ARGUMENT.
Result<int64_t> ParseRfc3339(const std::string& text);

//! Adds SHADOW001..SHADOW005 findings for the Pods in `objects`; returns the pods flagged
//! and the resources they hold.
ShadowSummary FindShadowPods(const std::vector<K8sObject>& objects, const ShadowOptions& opt,
                             Report* report);

}  // namespace rsl::govern
