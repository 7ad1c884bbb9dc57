#include "govern/attempt_cost.h"

namespace rsl::govern {

Result<CostRecord> CostOfAttempt(const AttemptFacts& attempt, const spec::Workload* w,
                                 const spec::Step& step, const PriceTable& prices,
                                 int64_t ended_at_ms) {
  StepUsage u = attempt.usage;
  if (w) {
    auto p = w->annotations.find(kPricingAnnotation);
    if (p != w->annotations.end()) u.pricing = p->second;
    if (u.device_model.empty()) {
      auto d = w->annotations.find(kDeviceAnnotation);
      if (d != w->annotations.end()) u.device_model = d->second;
    }
  }
  if (u.device_model.empty() && step.effective.gpu) {
    for (const auto& cap : step.effective.gpu->capabilities) {
      if (!prices.MatchDevice(cap).empty()) {
        u.device_model = cap;
        break;
      }
    }
  }
  Result<StepCost> cost = ComputeStepCost(u, prices);
  if (!cost.ok()) return cost.error();

  CostRecord r;
  r.ended_at_ms = ended_at_ms;
  r.run_id = attempt.run_id;
  r.workload_id = attempt.workload_id;
  r.workload = w ? w->name : "";
  r.namespace_ = w ? w->namespace_ : "";
  r.step = attempt.step.empty() ? step.name : attempt.step;
  r.attempt = attempt.attempt;
  if (w) r.labels = w->labels;
  r.pricing = u.pricing;
  r.exit_kind = attempt.exit_kind;
  r.currency = prices.currency;
  r.metrics_json = attempt.metrics_json.empty() ? "{}" : attempt.metrics_json;
  r.cost = *cost;
  return r;
}

}  // namespace rsl::govern
