#include "serve/autoscaler.h"

#include <algorithm>
#include <cmath>

namespace rsl::serve {
namespace {

// ceil that ignores the rounding error of the division before it (1.5 * 2 may
// be 3.0000000000000004).
int64_t CeilOf(double x) { return int64_t(std::ceil(x - 1e-9)); }

}  // namespace

int Autoscaler::Recommend(int current, const std::vector<ReplicaSample>& replicas,
                          double* average) const {
  auto clamp = [&](int64_t n) {
    return int(std::clamp<int64_t>(n, config_.min_replicas, config_.max_replicas));
  };
  int ready = 0;
  double sum = 0;
  for (const auto& r : replicas) {
    if (!r.ready) continue;
    ++ready;
    sum += r.utilization;
  }
  *average = ready ? sum / ready : 0;
  if (config_.target_utilization <= 0 || ready == 0) return clamp(current);
  double target = double(config_.target_utilization) / 100.0;
  double ratio = *average / target;
  if (std::fabs(ratio - 1.0) <= kTolerance) return clamp(current);
  int counted = std::max<int>(int(replicas.size()), current);
  if (ratio > 1.0 && counted > ready) {
    // Not-ready replicas (and ones not started yet) as 0 %: the scale-up they are part of
    // already answers some of the load.
    double ratio_all = sum / counted / target;
    if (ratio_all <= 1.0 + kTolerance) return clamp(current);
    return clamp(int64_t(CeilOf(ratio_all * counted)));
  }
  return clamp(int64_t(CeilOf(ratio * ready)));
}

ScaleDecision Autoscaler::Evaluate(int64_t now_ms, int current,
                                   const std::vector<ReplicaSample>& replicas, Metric metric) {
  ScaleDecision d;
  int recommendation = Recommend(current, replicas, &d.average);
  if (history_.empty()) first_ms_ = now_ms;
  history_.emplace_back(now_ms, recommendation);
  while (history_.front().first < now_ms - config_.scale_down_delay_ms) history_.pop_front();
  int ready = 0;
  for (const auto& r : replicas) ready += r.ready ? 1 : 0;
  auto reason = [&](int to) {
    std::string pct = std::to_string(int(std::lround(d.average * 100))) + "%";
    return (metric == Metric::kGpu ? "gpu " + pct + " busy" : "cpu " + pct + " of request") +
           ", target " + std::to_string(config_.target_utilization) + "%, " +
           std::to_string(ready) + " ready: " + std::to_string(current) + " -> " +
           std::to_string(to);
  };
  d.desired = current;
  if (current < config_.min_replicas || current > config_.max_replicas) {
    d.desired = int(std::clamp<int64_t>(current, config_.min_replicas, config_.max_replicas));
    d.reason = reason(d.desired);
    return d;
  }
  if (recommendation > current) {
    d.desired = recommendation;
    d.reason = reason(d.desired);
    return d;
  }
  // Down only once the whole window asked for less, and only as far as its highest ask.
  int highest = 0;
  bool window_full = first_ms_ <= now_ms - config_.scale_down_delay_ms;
  for (const auto& [t, n] : history_) highest = std::max(highest, n);
  if (window_full && highest < current) {
    d.desired = current - 1;
    d.reason = reason(d.desired);
  }
  return d;
}

}  // namespace rsl::serve
