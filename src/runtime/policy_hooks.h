// The step hook that enforces the applied cost policies on running steps, one
// govern::WatchPolicies loop (govern/policy_watch.h) per attempt.
//
//  BeforeStep:    adds RSL_METRICS_STREAM=<workdir>/.rsl-metrics-stream.jsonl to the launch
//                 environment.
//  OnStepStarted: reads the policies and starts one watcher thread for the attempt, which
//                 stops the step and emits events through the RunControl it was handed.
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
#include "govern/cost.h"
#include "govern/policy.h"
#include "govern/policy_watch.h"

namespace rsl::runtime {

struct PolicyHookOptions {
  int64_t poll_ms = govern::kDefaultPolicyPollMs;
  //! Wall clock in seconds (tests may fake it).
  std::function<double()> now_s;
  //! Policies to enforce instead of those applied in the state directory (tests).
  std::optional<std::vector<govern::Policy>> policies;
};

class PolicyHook : public engine::StepHook {
 public:
  //! `state_dir`: where policies are read and actions recorded ("" = the run's).
  explicit PolicyHook(std::string state_dir, PolicyHookOptions options = {});
  ~PolicyHook() override;  //!< stops every watcher and waits for them

  std::string name() const override { return "cost-policy"; }
  Status BeforeStep(const engine::RunInfo& run, const spec::Step& step,
                    backend::LaunchSpec* launch) override;
  void OnStepStarted(const engine::RunInfo& run, const spec::Step& step,
                     const backend::LaunchSpec& launch, engine::RunControl* control) override;
  Status AfterStep(const engine::RunInfo& run, const spec::Step& step,
                   const engine::StepOutcome& outcome) override;

 private:
  struct Watch {
    std::atomic<bool> stop{false};
    std::atomic<bool> done{false};
    std::thread thread;
  };
  //! The policies applied in `dir`: read on every call (one query on a connection kept
  //! open), parsed again only when they changed. Opening the database and parsing every
  //! policy at each step's start cost 13% of the controller's CPU under api_load.
  Result<std::vector<govern::Policy>> Applied(const std::string& dir);
  void Stop(const std::string& key);
  //! Joins retired watchers: those that finished, or all of them (destructor).
  void Reap(bool all);

  std::string state_dir_;
  PolicyHookOptions options_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Watch>> watches_;  // GUARDED_BY(mu_), by attempt id
  std::vector<std::unique_ptr<Watch>> retired_;            // GUARDED_BY(mu_), told to stop
  std::mutex applied_mu_;
  std::string applied_dir_;                           // GUARDED_BY(applied_mu_)
  std::unique_ptr<govern::CostStore> applied_store_;  // GUARDED_BY(applied_mu_)
  std::vector<govern::StoredPolicy> applied_stored_;  // GUARDED_BY(applied_mu_)
  std::vector<govern::Policy> applied_;               // GUARDED_BY(applied_mu_), parsed
  bool applied_valid_ = false;                        // GUARDED_BY(applied_mu_)
};

}  // namespace rsl::runtime
