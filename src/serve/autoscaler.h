// The autoscaling decision of a serving step, pure (no clock, no processes): Kubernetes
// HPA's rules on per-replica utilization, evaluated by the replica supervisor every
// kEvaluatePeriodMs with the time it reads.
//
//   desired = ceil(replicas * average utilization / target), within [min, max];
//   no change while |average / target - 1| <= 10 % (the tolerance);
//   replicas not ready yet count as 0 % when the ready ones ask for more (so a scale-up
//   already under way is not doubled), and the recommendation stands only if it still
//   scales up outside the tolerance;
//   scale up at once; scale down only when every recommendation of the last
//   scaleDownDelay was lower than the current count (the stabilization window), then by
//   one replica.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "spec/workload.h"

namespace rsl::serve {

inline constexpr int64_t kEvaluatePeriodMs = 2'000;
//! HPA's default tolerance: no change within 10 % of the target.
inline constexpr double kTolerance = 0.1;

//! A replica as the autoscaler sees it.
struct ReplicaSample {
  bool ready = false;
  double utilization = 0;  //!< fraction of its request: 0.93 = 93 %
};

struct ScaleDecision {
  int desired = 0;     //!< replicas wanted now (== current: no change)
  std::string reason;  //!< "cpu 93% of request, target 70%, 3 ready: 3 -> 4" when changed
  double average = 0;  //!< average utilization of the ready replicas
};

class Autoscaler {
 public:
  explicit Autoscaler(const spec::Autoscaling& config) : config_(config) {}

  //! What the utilization measures, for the decision's reason.
  enum class Metric { kCpu, kGpu };
  //! The decision at `now_ms` for `current` desired replicas whose state is `replicas` (one
  //! sample per replica that exists; a missing one, being started, counts as not ready).
  //! The reason reads "cpu 93% of request, ..." or "gpu 93% busy, ...".
  ScaleDecision Evaluate(int64_t now_ms, int current, const std::vector<ReplicaSample>& replicas,
                         Metric metric = Metric::kCpu);

 private:
  //! What the utilization asks for, before stabilization (clamped to [min, max]).
  int Recommend(int current, const std::vector<ReplicaSample>& replicas, double* average) const;

  spec::Autoscaling config_;
  //! (time, recommendation) of the last scaleDownDelay, oldest first.
  std::deque<std::pair<int64_t, int>> history_;
  int64_t first_ms_ = 0;  //!< the first evaluation: no scale-down before a whole window
};

}  // namespace rsl::serve
