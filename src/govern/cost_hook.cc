#include "govern/cost_hook.h"

#include <cstdio>

namespace rsl::govern {

namespace {

constexpr char kPricingAnnotation[] = "rsl.cost/pricing";
constexpr char kDeviceAnnotation[] = "rsl.cost/device-model";

}  // namespace

const char* ExitKindString(backend::ExitKind kind) {
  switch (kind) {
    case backend::ExitKind::kSucceeded: return "Succeeded";
    case backend::ExitKind::kFailed: return "Failed";
    case backend::ExitKind::kOomKilled: return "OOMKilled";
    case backend::ExitKind::kTimedOut: return "TimedOut";
    case backend::ExitKind::kCancelled: return "Cancelled";
    case backend::ExitKind::kNodeLost: return "NodeLost";
  }
  return "Unknown";
}

CostHook::CostHook(std::string state_dir, Env* env)
    : state_dir_(std::move(state_dir)), env_(env ? env : Env::Default()) {}

std::string CostHook::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

Status CostHook::AfterStep(const engine::RunInfo& run, const spec::Step& step,
                           const engine::StepOutcome& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  auto fail = [&](const Error& e) {
    last_error_ = e.ToString();
    std::fprintf(stderr, "cost: %s/%s attempt %d not recorded: %s\n", run.run_id.c_str(),
                 outcome.step.c_str(), outcome.attempt, last_error_.c_str());
    return Status::Ok();
  };
  std::string state_dir = state_dir_.empty() ? run.state_dir : state_dir_;
  if (!store_) {
    Result<std::unique_ptr<CostStore>> s = CostStore::Open(state_dir);
    if (!s.ok()) return fail(s.error());
    store_ = std::move(*s);
  }
  Result<PriceTable> prices = LoadPriceTable(state_dir);
  if (!prices.ok()) return fail(prices.error());

  const spec::Workload* w = run.workload;
  StepUsage u;
  u.gpus = outcome.allocated_gpus;
  u.wall_ms = outcome.exit.usage.wall_ms;
  u.cpu_request_millis = outcome.allocated_cpu_millis;
  u.cpu_used_ms = outcome.exit.usage.cpu_ms;
  u.memory_request_bytes = outcome.allocated_memory_bytes;
  u.peak_memory_bytes = outcome.exit.usage.peak_memory_bytes;
  u.device_model = outcome.gpu_model;
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
      if (!prices->MatchDevice(cap).empty()) {
        u.device_model = cap;
        break;
      }
    }
  }
  Result<StepCost> cost = ComputeStepCost(u, *prices);
  if (!cost.ok()) return fail(cost.error());

  CostRecord r;
  r.ended_at_ms = env_->NowMs();
  r.run_id = run.run_id;
  r.workload_id = run.workload_id;
  r.workload = w ? w->name : "";
  r.namespace_ = w ? w->namespace_ : "";
  r.step = outcome.step.empty() ? step.name : outcome.step;
  r.attempt = outcome.attempt;
  if (w) r.labels = w->labels;
  r.pricing = u.pricing;
  r.exit_kind = ExitKindString(outcome.exit.kind);
  r.currency = prices->currency;
  r.metrics_json = outcome.metrics_json.empty() ? "{}" : outcome.metrics_json;
  r.cost = *cost;
  // Unlock-free: the store has its own mutex.
  Status st = store_->Record(r);
  if (!st.ok()) return fail(st.error());
  return Status::Ok();
}

}  // namespace rsl::govern
