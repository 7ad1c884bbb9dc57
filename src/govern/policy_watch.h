// Enforcing the applied cost policies on one running step attempt, as a plain loop:
// it tails the attempt's metrics stream every poll interval, derives
// loss_plateau_duration / gpu_util_avg (policy.h), evaluates every rule of every policy, and
// performs a rule's actions once, the first time its condition holds:
//   stop        PolicyControl::stop_step(reason PolicyStopped, as_success when the rule says
//               so); the watch ends
//   scale_down  recorded (govern_policy_actions) and event PolicyScaledDown: there is no
//               serving autoscaler yet, so nothing is resized
//   notify      webhook POST (retried) with the rule, the workload and the metrics; event
//               PolicyNotified or PolicyNotifyFailed
// runtime/policy_hooks.h runs one watch per attempt on a thread of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "govern/policy.h"

namespace rsl::govern {

//! The environment variable that names an attempt's metrics stream (JSON lines).
inline constexpr char kMetricsStreamEnv[] = "RSL_METRICS_STREAM";
//! How often the stream is read; the policy acts within this of its condition holding.
inline constexpr int64_t kDefaultPolicyPollMs = 250;

//! The stream path of an attempt: in its working directory, which the step can write when it
//! runs isolated (backend/identity.h); the step creates the file itself.
std::string MetricsStreamPath(const std::string& workdir);

//! The attempt being watched.
struct WatchedAttempt {
  std::string state_dir;  //!< where actions are recorded ("" = not recorded)
  std::string workload_id;
  std::string run_id;
  std::string workload;    //!< metadata.name
  std::string namespace_;  //!< metadata.namespace
  std::map<std::string, std::string> labels;
  std::string step;
  int attempt = 1;
  std::string stream;  //!< the metrics stream's path
};

//! How a watch acts on the run. Either may be empty (nothing is stopped / emitted).
struct PolicyControl {
  std::function<Status(const std::string& reason, const std::string& message, bool as_success)>
      stop_step;
  std::function<void(const std::string& reason, const std::string& message)> emit;
};

struct PolicyWatchOptions {
  int64_t poll_ms = kDefaultPolicyPollMs;
  std::function<double()> now_s;  //!< wall clock in seconds; empty: the system clock
};

//! Watches `attempt` against `policies` until `stop` is set or a stop action ran. Blocks;
//! checks `stop` at least every 50 ms. Only regular files are read as the stream (the step
//! owns it; we may be root), at most 1 MiB at a time.
void WatchPolicies(const WatchedAttempt& attempt, const std::vector<Policy>& policies,
                   const PolicyWatchOptions& options, const PolicyControl& control,
                   const std::atomic<bool>& stop);

}  // namespace rsl::govern
