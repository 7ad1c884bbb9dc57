// api_load: a bounded load test of rsl-controller on loopback (bench/api_load.sh runs it).
//
//   api_load --server URL --token T --workload FILE --submissions N --concurrency C
//            --gets-seconds S
//
// Phase 1 submits N copies of FILE from C threads and waits until every run is terminal:
// prints submissions/s (acknowledged) with the submit latency's p50/p99, and workloads/min
// (submitted -> all SUCCEEDED). Completion is polled with one-item pages per terminal phase
// (their metadata.total), not the whole list: a list of every workload costs the controller
// O(workloads) per poll (0.25 s at 2,000 on a 2-core machine), which the load test would
// otherwise measure as its own throughput's ceiling.
// Phase 2 issues GET /api/v1/workloads/{id} from C threads for S seconds: prints GETs/s and
// p50/p99 latency. Every request goes through the same client seedctl uses.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/client.h"
#include "base/file.h"

namespace {

using Clock = std::chrono::steady_clock;

double Secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(idx, v.size() - 1)];
}

const char* Arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == name) return argv[i + 1];
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  rsl::api::ClientConfig config;
  config.server = Arg(argc, argv, "--server", "http://127.0.0.1:7070");
  config.token = Arg(argc, argv, "--token", "");
  std::string file = Arg(argc, argv, "--workload", "");
  int submissions = std::atoi(Arg(argc, argv, "--submissions", "200"));
  int concurrency = std::max(1, std::atoi(Arg(argc, argv, "--concurrency", "4")));
  double get_seconds = std::atof(Arg(argc, argv, "--gets-seconds", "5"));
  auto yaml = rsl::ReadFile(file);
  if (!yaml.ok()) {
    std::fprintf(stderr, "%s\n", yaml.error().ToString().c_str());
    return 1;
  }

  // Phase 1: submissions, then completion.
  // Workloads already there (a store with history) are not counted as this run's.
  rsl::api::Client poller(config);
  const char* kTerminal[] = {"SUCCEEDED", "FAILED", "REJECTED", "CANCELLED", "TIMED_OUT"};
  auto count_phases = [&](int* succeeded, int* terminal) -> bool {
    *succeeded = *terminal = 0;
    for (const char* phase : kTerminal) {
      auto page =
          poller.Get(std::string("/api/v1/workloads?allNamespaces=true&limit=1&phase=") + phase);
      if (!page.ok()) {
        std::fprintf(stderr, "list: %s\n", page.error().ToString().c_str());
        return false;
      }
      int n = (*page)["metadata"].value("total", 0);
      *terminal += n;
      if (std::string(phase) == "SUCCEEDED") *succeeded = n;
    }
    return true;
  };
  int succeeded0 = 0, terminal0 = 0;
  if (!count_phases(&succeeded0, &terminal0)) return 1;

  std::vector<std::string> ids(static_cast<size_t>(submissions));
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::mutex mu;
  std::vector<double> submit_ms;
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&] {
      rsl::api::Client client(config);
      std::vector<double> mine;
      for (int i = next++; i < submissions; i = next++) {
        auto s = Clock::now();
        auto r = client.Post("/api/v1/workloads", *yaml, "application/yaml");
        if (!r.ok()) {
          if (failures++ == 0) std::fprintf(stderr, "submit: %s\n", r.error().ToString().c_str());
          continue;
        }
        mine.push_back(Secs(s, Clock::now()) * 1000.0);
        ids[static_cast<size_t>(i)] = (*r)["metadata"].value("id", "");
      }
      std::lock_guard<std::mutex> lock(mu);
      submit_ms.insert(submit_ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  auto t_acked = Clock::now();
  int succeeded = 0, terminal = 0;
  for (;;) {
    if (!count_phases(&succeeded, &terminal)) return 1;
    succeeded -= succeeded0;
    terminal -= terminal0;
    if (terminal >= submissions - failures) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto t_done = Clock::now();
  double submit_rate = (submissions - failures) / Secs(t0, t_acked);
  double per_min = succeeded / Secs(t0, t_done) * 60.0;
  std::printf(
      "submitted %d (failed %d) in %.2fs: %.1f submissions/s acknowledged, submit p50 %.2f ms, "
      "p99 %.2f ms\n",
      submissions - failures.load(), failures.load(), Secs(t0, t_acked), submit_rate,
      Percentile(submit_ms, 0.5), Percentile(submit_ms, 0.99));
  std::printf("completed %d SUCCEEDED of %d terminal in %.2fs after the first submission\n",
              succeeded, terminal, Secs(t0, t_done));

  // Phase 2: status GETs.
  std::vector<double> latencies;
  std::atomic<bool> stop{false};
  auto g0 = Clock::now();
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      rsl::api::Client client(config);
      std::vector<double> mine;
      size_t i = static_cast<size_t>(t);
      while (!stop) {
        const std::string& id = ids[i++ % ids.size()];
        if (id.empty()) continue;
        auto s = Clock::now();
        auto r = client.Get("/api/v1/workloads/" + id);
        if (r.ok()) mine.push_back(Secs(s, Clock::now()) * 1000.0);
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(get_seconds));
  stop = true;
  for (auto& t : threads) t.join();
  double g_secs = Secs(g0, Clock::now());
  std::printf("status GETs: %.0f/s over %.1fs (%zu requests), p50 %.2f ms, p99 %.2f ms\n",
              latencies.size() / g_secs, g_secs, latencies.size(), Percentile(latencies, 0.5),
              Percentile(latencies, 0.99));
  std::printf("workloads/min %.1f\n", per_min);
  return failures > 0 ? 1 : 0;
}
