#include "api/metrics.h"

#include <gtest/gtest.h>

namespace rsl::api {
namespace {

TEST(MetricsTest, CountersAndGaugesRenderInTextFormat) {
  Metrics m;
  m.Describe("rsl_api_requests_total", "counter", "API requests.");
  m.Add("rsl_api_requests_total", {{"route", "/a"}, {"code", "200"}});
  m.Add("rsl_api_requests_total", {{"route", "/a"}, {"code", "200"}}, 2);
  m.Add("rsl_api_requests_total", {{"route", "/b\"x"}, {"code", "404"}});
  EXPECT_EQ(m.Render(),
            "# HELP rsl_api_requests_total API requests.\n"
            "# TYPE rsl_api_requests_total counter\n"
            "rsl_api_requests_total{route=\"/a\",code=\"200\"} 3\n"
            "rsl_api_requests_total{route=\"/b\\\"x\",code=\"404\"} 1\n");
  EXPECT_EQ(m.Value("rsl_api_requests_total", {{"route", "/a"}, {"code", "200"}}), 3);
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  Metrics m;
  m.Describe("h", "histogram", "", {0.1, 1, 10});
  m.Observe("h", {{"kind", "AIWorkload"}}, 0.05);
  m.Observe("h", {{"kind", "AIWorkload"}}, 0.5);
  m.Observe("h", {{"kind", "AIWorkload"}}, 0.5);
  m.Observe("h", {{"kind", "AIWorkload"}}, 50);
  EXPECT_EQ(m.Render(),
            "# TYPE h histogram\n"
            "h_bucket{kind=\"AIWorkload\",le=\"0.1\"} 1\n"
            "h_bucket{kind=\"AIWorkload\",le=\"1\"} 3\n"
            "h_bucket{kind=\"AIWorkload\",le=\"10\"} 3\n"
            "h_bucket{kind=\"AIWorkload\",le=\"+Inf\"} 4\n"
            "h_sum{kind=\"AIWorkload\"} 51.05\n"
            "h_count{kind=\"AIWorkload\"} 4\n");
}

TEST(MetricsTest, ReconcileBucketsFollowSeed003) {
  auto b = ExponentialBuckets(0.01, 2, 10);
  ASSERT_EQ(b.size(), 10u);
  EXPECT_DOUBLE_EQ(b.front(), 0.01);
  EXPECT_DOUBLE_EQ(b.back(), 5.12);
  Metrics m;
  DescribeControllerMetrics(&m);
  m.Observe("rsl_reconcile_duration_seconds",
            {{"kind", "AIWorkload"}, {"phase", "admission"}, {"result", "success"}}, 0.02);
  std::string text = m.Render();
  EXPECT_NE(text.find("rsl_reconcile_duration_seconds_bucket{kind=\"AIWorkload\",phase="
                      "\"admission\",result=\"success\",le=\"5.12\"} 1"),
            std::string::npos);
}

TEST(MetricsTest, ClearDropsGaugeSeries) {
  Metrics m;
  m.Describe("rsl_workloads", "gauge", "");
  m.Set("rsl_workloads", {{"phase", "RUNNING"}}, 2);
  m.Clear("rsl_workloads");
  m.Set("rsl_workloads", {{"phase", "SUCCEEDED"}}, 1);
  EXPECT_EQ(m.Render(), "# TYPE rsl_workloads gauge\nrsl_workloads{phase=\"SUCCEEDED\"} 1\n");
}

}  // namespace
}  // namespace rsl::api
