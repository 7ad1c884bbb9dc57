// A small Prometheus metrics registry: counters, gauges and histograms with labels, rendered
// in the Prometheus text exposition format (version 0.0.4) for GET /metrics.
//
// The controller's metric names (docs/api.md):
//   rsl_api_requests_total{route,code}                    counter
//   rsl_api_request_duration_seconds{route}               histogram
//   rsl_workloads{phase}, rsl_steps{phase}                gauges (set at scrape time)
//   rsl_admission_duration_seconds{result}                histogram
//   rsl_step_duration_seconds{phase}                      histogram
//   rsl_step_queue_seconds                                histogram (launch - ready)
//   rsl_reconcile_duration_seconds{kind,phase,result}     histogram, as seed 003 §4.3
//                                                         (ExponentialBuckets(0.01, 2, 10))
// Threading: every method is safe from many threads.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace rsl::api {

using Labels = std::vector<std::pair<std::string, std::string>>;

//! `start`, start*factor, ... (`count` buckets), as Prometheus' ExponentialBuckets.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class Metrics {
 public:
  //! Declares a metric (type "counter" | "gauge" | "histogram"); histograms need buckets.
  void Describe(const std::string& name, const std::string& type, const std::string& help,
                std::vector<double> buckets = {});

  void Add(const std::string& name, const Labels& labels, double delta = 1);
  void Set(const std::string& name, const Labels& labels, double value);
  //! Drops every series of a gauge (before setting fresh values at scrape time).
  void Clear(const std::string& name);
  void Observe(const std::string& name, const Labels& labels, double value);

  //! The text exposition format; metrics in declaration order, series sorted by labels.
  std::string Render() const;

  //! Current value of a counter/gauge series (0 if absent); for tests and the load bench.
  double Value(const std::string& name, const Labels& labels) const;

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  struct Family {
    std::string type;
    std::string help;
    std::vector<double> buckets;
    std::map<std::string, double> values;         // rendered labels -> value
    std::map<std::string, Histogram> histograms;  // rendered labels -> histogram
  };
  static std::string RenderLabels(const Labels& labels);
  Family& FamilyFor(const std::string& name);  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  std::vector<std::string> order_;          // GUARDED_BY(mu_)
  std::map<std::string, Family> families_;  // GUARDED_BY(mu_)
};

//! Declares every metric named above on `metrics`.
void DescribeControllerMetrics(Metrics* metrics);

}  // namespace rsl::api
