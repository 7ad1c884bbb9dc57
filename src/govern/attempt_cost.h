// What one step attempt cost, from what it was given and used when it ended (for failed
// attempts too: a failed attempt's GPU hours are spent all the same). runtime/cost_hooks.h
// records it for every attempt of every run.
//
// Device model: the node's (usage.device_model), else the workload annotation
// rsl.cost/device-model, else the first requested capability the price table knows.
// Pricing kind: the workload annotation rsl.cost/pricing (on-demand | spot | reserved),
// default on-demand. Labels team/project/model/stage come from metadata.labels.
#pragma once

#include <string>

#include "base/status.h"
#include "govern/cost.h"
#include "govern/price.h"
#include "spec/workload.h"

namespace rsl::govern {

//! One attempt as it ended.
struct AttemptFacts {
  std::string run_id;
  std::string workload_id;
  std::string step;  //!< "" = the spec step's name
  int attempt = 1;
  std::string exit_kind;     //!< Succeeded, Failed, OOMKilled, ... (backend::ExitKindName)
  std::string metrics_json;  //!< what it wrote to RSL_METRICS_FILE ("" = "{}")
  //! Allocated GPUs, wall time, CPU and memory request and use; device_model is the node's
  //! GPU model ("" unknown); pricing is taken from the workload.
  StepUsage usage;
};

//! Pure. The record of `attempt` of `step` (of `workload`, which may be null), priced with
//! `prices`, ended at `ended_at_ms`. Errors: ComputeStepCost's (no price for the device/kind).
Result<CostRecord> CostOfAttempt(const AttemptFacts& attempt, const spec::Workload* workload,
                                 const spec::Step& step, const PriceTable& prices,
                                 int64_t ended_at_ms);

}  // namespace rsl::govern
