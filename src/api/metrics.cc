#include "api/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rsl::api {

namespace {

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

// Joins rendered labels `{a="x"}` with one more label (for histogram buckets' `le`).
std::string WithLabel(const std::string& rendered, const std::string& extra) {
  if (rendered.empty()) return "{" + extra + "}";
  return rendered.substr(0, rendered.size() - 1) + "," + extra + "}";
}

}  // namespace

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double v = start;
  for (int i = 0; i < count; ++i) {
    out.push_back(v);
    v *= factor;
  }
  return out;
}

std::string Metrics::RenderLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ",";
    out += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + "\"";
  }
  return out + "}";
}

Metrics::Family& Metrics::FamilyFor(const std::string& name) {
  auto it = families_.find(name);
  if (it != families_.end()) return it->second;
  order_.push_back(name);
  Family& f = families_[name];
  f.type = "untyped";
  return f;
}

void Metrics::Describe(const std::string& name, const std::string& type, const std::string& help,
                       std::vector<double> buckets) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name);
  f.type = type;
  f.help = help;
  std::sort(buckets.begin(), buckets.end());
  f.buckets = std::move(buckets);
}

void Metrics::Add(const std::string& name, const Labels& labels, double delta) {
  std::lock_guard<std::mutex> lock(mu_);
  FamilyFor(name).values[RenderLabels(labels)] += delta;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  FamilyFor(name).values[RenderLabels(labels)] = value;
}

void Metrics::Clear(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  FamilyFor(name).values.clear();
}

void Metrics::Observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name);
  Histogram& h = f.histograms[RenderLabels(labels)];
  if (h.counts.size() != f.buckets.size()) h.counts.assign(f.buckets.size(), 0);
  for (size_t i = 0; i < f.buckets.size(); ++i) {
    if (value <= f.buckets[i]) {
      ++h.counts[i];
      break;
    }
  }
  ++h.count;
  h.sum += value;
}

double Metrics::Value(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto v = it->second.values.find(RenderLabels(labels));
  return v == it->second.values.end() ? 0 : v->second;
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& name : order_) {
    const Family& f = families_.at(name);
    if (!f.help.empty()) out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + " " + f.type + "\n";
    if (f.type == "histogram") {
      for (const auto& [labels, h] : f.histograms) {
        uint64_t cumulative = 0;
        for (size_t i = 0; i < f.buckets.size(); ++i) {
          cumulative += i < h.counts.size() ? h.counts[i] : 0;
          out += name + "_bucket" + WithLabel(labels, "le=\"" + FormatValue(f.buckets[i]) + "\"") +
                 " " + std::to_string(cumulative) + "\n";
        }
        out += name + "_bucket" + WithLabel(labels, "le=\"+Inf\"") + " " + std::to_string(h.count) +
               "\n";
        out += name + "_sum" + labels + " " + FormatValue(h.sum) + "\n";
        out += name + "_count" + labels + " " + std::to_string(h.count) + "\n";
      }
    } else {
      for (const auto& [labels, v] : f.values) out += name + labels + " " + FormatValue(v) + "\n";
    }
  }
  return out;
}

void DescribeControllerMetrics(Metrics* m) {
  const auto latency = ExponentialBuckets(0.001, 2, 14);  // 1 ms .. 8 s
  const auto steps = ExponentialBuckets(0.01, 4, 10);     // 10 ms .. ~43 min
  m->Describe("rsl_api_requests_total", "counter", "API requests by route and HTTP status code.");
  m->Describe("rsl_api_request_duration_seconds", "histogram", "API request latency by route.",
              latency);
  m->Describe("rsl_api_open_connections", "gauge",
              "Open client connections (reading, working, writing, streaming).");
  m->Describe("rsl_api_open_streams", "gauge", "Connections streaming an answer (log follow).");
  m->Describe("rsl_workloads", "gauge", "Workload versions by phase.");
  m->Describe("rsl_steps", "gauge", "Steps (of every run) by phase.");
  m->Describe("rsl_engine_runs_in_memory", "gauge",
              "Runs the engine holds in memory: the unfinished ones (finished runs are read "
              "from the store).");
  m->Describe("rsl_engine_finished_runs_remembered", "gauge",
              "Ended run ids the engine remembers for waiters (bounded).");
  m->Describe("rsl_engine_submits_total", "counter", "Submissions recorded durably.");
  m->Describe("rsl_engine_submit_commits_total", "counter",
              "Store transactions that recorded submissions (concurrent ones share one).");
  m->Describe("rsl_engine_turn_commits_total", "counter",
              "Store transactions of the engine's loop (one per turn that changed anything).");
  m->Describe("rsl_engine_launches_total", "counter", "Attempts the engine launched.");
  m->Describe("rsl_api_cached_snapshots", "gauge",
              "Parsed workload versions the API caches (bounded).");
  m->Describe("rsl_serving_replicas", "gauge", "Running replicas of a serving step.");
  m->Describe("rsl_serving_ready_replicas", "gauge", "Ready replicas of a serving step.");
  m->Describe("rsl_serving_utilization_ratio", "gauge",
              "Average utilization of a serving step's ready replicas (1 = their request).");
  m->Describe("rsl_serving_requests_total", "counter",
              "Requests a serving step's endpoint took (HAProxy's frontend sessions).");
  m->Describe("rsl_serving_request_errors_total", "counter",
              "5xx answers of a serving step's endpoint (HAProxy's counter).");
  m->Describe("rsl_admission_duration_seconds", "histogram",
              "Admission (parse, validation, admission checks) latency by result.", latency);
  m->Describe("rsl_step_duration_seconds", "histogram", "Step attempt run time by outcome.", steps);
  m->Describe("rsl_step_queue_seconds", "histogram",
              "Time from a step becoming ready to its launch.", steps);
  // Seed 003 §4.3: the reconcile histogram, ExponentialBuckets(0.01, 2, 10) = 10 ms .. 5.12 s.
  m->Describe("rsl_reconcile_duration_seconds", "histogram",
              "Reconciliation duration by kind, phase and result.",
              ExponentialBuckets(0.01, 2, 10));
}

}  // namespace rsl::api
