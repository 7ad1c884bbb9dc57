// The engine hook that records every step attempt's cost when it ends (AfterStep, for
// failed attempts too: a failed attempt's GPU hours are spent all the same).
//
// Device model: the node's (StepOutcome::gpu_model), else the workload annotation
// rsl.cost/device-model, else the first requested capability the price table knows.
// Pricing kind: the workload annotation rsl.cost/pricing (on-demand | spot | reserved),
// default on-demand. Labels team/project/model/stage come from metadata.labels.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/env.h"
#include "engine/hooks.h"
#include "govern/cost.h"

namespace rsl::govern {

class CostHook : public engine::StepHook {
 public:
  //! `state_dir`: where rsl.db and prices.yaml live. `env` is the clock (tests fake it);
  //! nullptr: Env::Default(). It must outlive the hook.
  explicit CostHook(std::string state_dir, Env* env = nullptr);

  std::string name() const override { return "cost"; }
  //! Records the attempt; never fails the step (accounting errors go to stderr and the
  //! returned status is Ok, so a broken price table cannot fail training).
  Status AfterStep(const engine::RunInfo& run, const spec::Step& step,
                   const engine::StepOutcome& outcome) override;

  //! The last accounting error ("" when none), for tests and `describe`.
  std::string last_error() const;

 private:
  std::string state_dir_;
  Env* env_;
  mutable std::mutex mu_;
  std::unique_ptr<CostStore> store_;  // GUARDED_BY(mu_), opened on first use
  std::string last_error_;            // GUARDED_BY(mu_)
};

//! The attempt's exit kind as a name (same strings as backend::ExitKindName).
const char* ExitKindString(backend::ExitKind kind);

}  // namespace rsl::govern
