#include "serve/autoscaler.h"

#include <gtest/gtest.h>

namespace rsl::serve {
namespace {

spec::Autoscaling Config(int64_t target, int64_t min, int64_t max, int64_t delay_ms) {
  spec::Autoscaling a;
  a.target_utilization = target;
  a.min_replicas = min;
  a.max_replicas = max;
  a.scale_down_delay_ms = delay_ms;
  return a;
}

std::vector<ReplicaSample> Ready(std::vector<double> utils, int not_ready = 0) {
  std::vector<ReplicaSample> out;
  for (double u : utils) out.push_back({true, u});
  for (int i = 0; i < not_ready; ++i) out.push_back({false, 0});
  return out;
}

// One evaluation on a fresh autoscaler (no history): what HPA's formula gives.
struct Case {
  const char* name;
  int current;
  std::vector<ReplicaSample> replicas;
  int want;
};

TEST(AutoscalerTest, OneEvaluationFollowsTheHpaFormula) {
  const Case cases[] = {
      {"at target", 2, Ready({0.7, 0.7}), 2},
      {"inside the 10% tolerance above", 2, Ready({0.76, 0.76}), 2},
      {"inside the 10% tolerance below", 2, Ready({0.64, 0.64}), 2},
      {"just outside the tolerance", 2, Ready({0.78, 0.78}), 3},  // ceil(2*0.78/0.7) = 3
      {"93% on 3 ready: 3 -> 4", 3, Ready({0.93, 0.93, 0.93}), 4},
      {"far above: capped at max", 1, Ready({5.0}), 4},
      {"not ready count as 0% when scaling up", 2, Ready({2.1}, 1), 3},  // 2.1/2/.7 = 1.5
      {"not ready turn the direction: no change", 3, Ready({1.4}, 2), 3},
      {"not ready make it fall inside the tolerance", 2, Ready({1.5}, 1), 2},
      {"nothing ready: no change", 2, Ready({}, 2), 2},
      {"below min is raised at once", 0, Ready({}), 1},
  };
  for (const auto& c : cases) {
    Autoscaler a(Config(70, 1, 4, 0));
    EXPECT_EQ(a.Evaluate(0, c.current, c.replicas).desired, c.want) << c.name;
  }
}

TEST(AutoscalerTest, ScalesUpAtOnceAndSaysWhy) {
  Autoscaler a(Config(70, 1, 4, 300'000));
  ScaleDecision d = a.Evaluate(0, 3, Ready({0.93, 0.93, 0.93}));
  EXPECT_EQ(d.desired, 4);
  EXPECT_EQ(d.reason, "cpu 93% of request, target 70%, 3 ready: 3 -> 4");
}

TEST(AutoscalerTest, ScalesDownOnlyAfterTheWholeWindowWasLowerAndByOne) {
  // A fake clock: the evaluations' own times.
  Autoscaler a(Config(70, 1, 4, 5'000));
  int current = 4;
  int64_t t = 0;
  EXPECT_EQ(a.Evaluate(t, current, Ready({0.7, 0.7, 0.7, 0.7})).desired, 4);
  for (t = 2'000; t < 6'000; t += 2'000) {  // low, but the window still holds the high one
    EXPECT_EQ(a.Evaluate(t, current, Ready({0.1, 0.1, 0.1, 0.1})).desired, 4) << t;
  }
  ScaleDecision d = a.Evaluate(t, current, Ready({0.1, 0.1, 0.1, 0.1}));  // t = 6 s
  EXPECT_EQ(d.desired, 3);
  EXPECT_EQ(d.reason, "cpu 10% of request, target 70%, 4 ready: 4 -> 3");
}

TEST(AutoscalerTest, OneHighRecommendationInTheWindowHoldsTheReplicas) {
  Autoscaler a(Config(70, 1, 4, 5'000));
  EXPECT_EQ(a.Evaluate(0, 2, Ready({0.1, 0.1})).desired, 2);
  EXPECT_EQ(a.Evaluate(2'000, 2, Ready({0.7, 0.7})).desired, 2);  // a burst at target
  EXPECT_EQ(a.Evaluate(4'000, 2, Ready({0.1, 0.1})).desired, 2);
  EXPECT_EQ(a.Evaluate(6'000, 2, Ready({0.1, 0.1})).desired, 2);
  EXPECT_EQ(a.Evaluate(7'000, 2, Ready({0.1, 0.1})).desired, 2);  // 2 s is in [2 s, 7 s]
  EXPECT_EQ(a.Evaluate(8'000, 2, Ready({0.1, 0.1})).desired, 1);
}

TEST(AutoscalerTest, NoScaleDownBelowMinAndNoTargetMeansFixed) {
  Autoscaler a(Config(70, 2, 4, 0));
  EXPECT_EQ(a.Evaluate(0, 2, Ready({0.0, 0.0})).desired, 2);
  Autoscaler fixed(Config(0, 3, 3, 0));
  EXPECT_EQ(fixed.Evaluate(0, 3, Ready({5.0, 5.0, 5.0})).desired, 3);
}

TEST(AutoscalerTest, SteadyNoisyLoadDoesNotFlap) {
  Autoscaler a(Config(70, 1, 4, 10'000));
  int current = 2;
  int changes = 0;
  const double noise[] = {0.66, 0.74, 0.69, 0.75, 0.65, 0.71, 0.73, 0.67, 0.70, 0.76};
  for (int k = 0; k < 30; ++k) {
    double u = noise[k % 10];
    ScaleDecision d = a.Evaluate(k * 2'000, current, Ready({u, u}));
    if (d.desired != current) ++changes;
    current = d.desired;
  }
  EXPECT_EQ(changes, 0);
}

}  // namespace
}  // namespace rsl::serve

namespace rsl::serve {
namespace {

// The reason names what was measured: a GPU replica's devices, or a CPU replica's request.
TEST(AutoscalerTest, TheReasonNamesTheMetric) {
  Autoscaler cpu(Config(70, 1, 4, 300'000));
  EXPECT_EQ(cpu.Evaluate(0, 3, Ready({0.93, 0.93, 0.93})).reason,
            "cpu 93% of request, target 70%, 3 ready: 3 -> 4");
  Autoscaler gpu(Config(70, 1, 4, 300'000));
  EXPECT_EQ(gpu.Evaluate(0, 3, Ready({0.93, 0.93, 0.93}), Autoscaler::Metric::kGpu).reason,
            "gpu 93% busy, target 70%, 3 ready: 3 -> 4");
}

}  // namespace
}  // namespace rsl::serve
