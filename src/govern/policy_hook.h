// The engine hook that enforces the applied cost policies on running steps.
//
//  BeforeStep:    adds RSL_METRICS_STREAM=<run_dir>/metrics/<step>.<attempt>.jsonl to the
//                 launch environment (and creates the empty file).
//  OnStepStarted: starts one watcher thread per attempt that tails the stream every
//                 poll interval, derives loss_plateau_duration / gpu_util_avg (policy.h),
//                 evaluates every rule of every applied policy, and performs a rule's
//                 actions once, the first time its condition holds:
//                   stop        RunControl::StopStep(reason PolicyStopped, as_success when the
//                               rule says so); the watcher ends
//                   scale_down  recorded (govern_policy_actions) and event PolicyScaledDown:
//                               there is no serving autoscaler yet, so nothing is resized
//                   notify      webhook POST (retried) with the rule, the workload and the
//                               metrics; event PolicyNotified or PolicyNotifyFailed
//  AfterStep:     tells the attempt's watcher to stop, without waiting for it: AfterStep
//                 runs on the engine's loop, which StopStep waits on, and a notification
//                 in flight may take seconds. Finished watchers are joined later.
// Policies are read from the state directory when a step starts (a later `policy apply`
// affects steps started after it). Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/hooks.h"
#include "govern/policy.h"

namespace rsl::govern {

inline constexpr char kMetricsStreamEnv[] = "RSL_METRICS_STREAM";
//! How often the stream is read; the policy acts within this of its condition holding.
inline constexpr int64_t kDefaultPolicyPollMs = 250;

struct PolicyHookOptions {
  int64_t poll_ms = kDefaultPolicyPollMs;
  //! Wall clock in seconds (tests may fake it).
  std::function<double()> now_s;
  //! Policies to enforce instead of those applied in the state directory (tests).
  std::optional<std::vector<Policy>> policies;
};

class PolicyHook : public engine::StepHook {
 public:
  explicit PolicyHook(std::string state_dir, PolicyHookOptions options = {});
  ~PolicyHook() override;

  std::string name() const override { return "cost-policy"; }
  Status BeforeStep(const engine::RunInfo& run, const spec::Step& step,
                    backend::LaunchSpec* launch) override;
  void OnStepStarted(const engine::RunInfo& run, const spec::Step& step,
                     const backend::LaunchSpec& launch, engine::RunControl* control) override;
  Status AfterStep(const engine::RunInfo& run, const spec::Step& step,
                   const engine::StepOutcome& outcome) override;

  //! The stream path BeforeStep assigns: in the attempt's working directory, which the step
  //! can write when it runs isolated (backend/identity.h); it creates the file itself.
  static std::string StreamPath(const std::string& workdir);

 private:
  struct Watch {
    std::atomic<bool> stop{false};
    std::atomic<bool> done{false};
    std::thread thread;
  };
  void Run(Watch* w, engine::RunInfo run, std::string step, int attempt, std::string stream,
           std::map<std::string, std::string> labels, std::vector<Policy> policies,
           engine::RunControl* control);
  void Stop(const std::string& key);
  //! Joins retired watchers: those that finished, or all of them (destructor).
  void Reap(bool all);
  void RecordAction(const std::string& dir, const std::string& run_id, const std::string& step, int attempt,
                    const std::string& rule, const std::string& action, const std::string& detail);

  std::string state_dir_;
  PolicyHookOptions options_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Watch>> watches_;  // GUARDED_BY(mu_), by attempt id
  std::vector<std::unique_ptr<Watch>> retired_;            // GUARDED_BY(mu_), told to stop
};

}  // namespace rsl::govern
