// What Slurm enforces and measures, through the Engine on the fixture's cluster (task/cgroup
// with ConstrainRAMSpace, scripts/slurm-cluster.sh): a step's CPU time and peak memory reach
// the store (and so `seedctl workload status`, the console and cost accounting), and a step
// over its --mem ends OOMKilled with the limit named; a running step's live usage (the batch
// script's sampler) and the usage of a step stopped at its timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "base/strings.h"
#include "engine_fixture.h"

namespace rsl {
namespace {

using namespace rsl::slurm_test;  // NOLINT

constexpr int64_t kMiB = 1024 * 1024;

// ~2 s of CPU in python, holding 150 MiB it has written to (so it is resident), under a
// 400 MiB limit.
TEST_F(SlurmEngineTest, BusyStepReportsItsCpuTimeAndPeakMemory) {
  StartEngine("slurm");
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: busy-on-slurm}
spec:
  resources: {cpu: "1", memory: "400Mi"}
  pipeline:
    - name: busy
      command: ["python3", "-c", "import time\nx = b'a' * (150 << 20)\nt = time.process_time()\nwhile time.process_time() - t < 2.0: pass\nprint(len(x))"]
)yaml");
  auto run = engine_->Wait(id, 120'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto busy = Steps(run->id)["busy"];
  ASSERT_EQ(run->phase, spec::RunPhase::kSucceeded)
      << run->failure_message << " / " << busy.message;
  std::printf("Slurm step usage: wall %lld ms, cpu %lld ms, peak memory %lld bytes\n",
              static_cast<long long>(busy.wall_ms), static_cast<long long>(busy.cpu_ms),
              static_cast<long long>(busy.peak_memory_bytes));
  // At least the 2 s it burned, at most its wall time (one thread) and a little more.
  EXPECT_GE(busy.cpu_ms, 2000);
  EXPECT_LE(busy.cpu_ms, busy.wall_ms + 500);
  // The 150 MiB it held, within the cgroup's limit.
  EXPECT_GE(busy.peak_memory_bytes, 150 * kMiB);
  EXPECT_LE(busy.peak_memory_bytes, 400 * kMiB);
}

TEST_F(SlurmEngineTest, StepOverItsMemoryIsOomKilledWithTheLimitNamed) {
  StartEngine("slurm");
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: oom-on-slurm}
spec:
  resources: {cpu: "1", memory: "100Mi"}
  pipeline:
    - name: hog
      command: ["python3", "-c", "x = b'a' * (400 << 20)\nprint(len(x))"]
)yaml");
  auto run = engine_->Wait(id, 120'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto hog = Steps(run->id)["hog"];
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(hog.failure_code, "STEP_OOM_KILLED") << hog.message;
  std::string oom_event;
  for (const auto& e : Events(run->id)) {
    if (e.step == "hog" && e.reason == "OOMKilled") oom_event = e.message;
  }
  EXPECT_NE(oom_event.find("memory limit of 100Mi (--mem=100M)"), std::string::npos)
      << "OOMKilled event: " << oom_event << "\nstep: " << hog.message;
  // Its cgroup's high-water mark is the limit it ran into.
  EXPECT_GE(hog.peak_memory_bytes, 90 * kMiB);
  EXPECT_LE(hog.peak_memory_bytes, 101 * kMiB);
  EXPECT_EQ(JobsLeft(), "");
}

// Live usage while the step runs (the batch script's sampler, read by the monitor): the
// engine's live sample (what `seedctl workload status`, describe and the API show for a
// running step) has its CPU time and memory before it ends.
TEST_F(SlurmEngineTest, RunningStepShowsItsLiveCpuAndMemory) {
  StartEngine("slurm");
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: live-on-slurm}
spec:
  resources: {cpu: "1", memory: "400Mi"}
  pipeline:
    - name: busy
      command: ["python3", "-c", "import time\nx = b'a' * (120 << 20)\nt = time.process_time()\nwhile time.process_time() - t < 6.0: pass\nprint(len(x))"]
)yaml");
  ASSERT_FALSE(id.empty());
  std::optional<backend::AttemptUsage> live;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::string run_id;
  while (std::chrono::steady_clock::now() < deadline) {
    auto run = store_->GetRun(id);
    if (run.ok()) run_id = run->id;
    if (run.ok() && spec::IsTerminal(run->phase)) break;
    auto busy = Steps(run_id)["busy"];
    if (!busy.attempt_id.empty()) {
      live = engine_->LiveUsage(busy.attempt_id);
      if (live && live->usage.cpu_ms >= 1000 && live->usage.peak_memory_bytes >= 120 * kMiB) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(live) << "no live usage for the running Slurm step";
  std::printf("Slurm live usage: wall %lld ms, cpu %lld ms, peak memory %lld bytes\n",
              static_cast<long long>(live->usage.wall_ms),
              static_cast<long long>(live->usage.cpu_ms),
              static_cast<long long>(live->usage.peak_memory_bytes));
  EXPECT_GE(live->usage.cpu_ms, 1000);
  EXPECT_LE(live->usage.cpu_ms, live->usage.wall_ms + 500);
  EXPECT_GE(live->usage.peak_memory_bytes, 120 * kMiB);
  EXPECT_LE(live->usage.peak_memory_bytes, 400 * kMiB);
  EXPECT_GT(live->usage.peak_cpu_millicores, 0);
  auto run = engine_->Wait(id, 120'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded);
  auto busy = Steps(run->id)["busy"];
  EXPECT_GE(busy.cpu_ms, 6000);
  EXPECT_GE(busy.cpu_ms, live->usage.cpu_ms);
  std::printf("Slurm step at its end: wall %lld ms, cpu %lld ms, peak cpu %lld millicores\n",
              static_cast<long long>(busy.wall_ms), static_cast<long long>(busy.cpu_ms),
              static_cast<long long>(busy.peak_cpu_millicores));
  // One busy thread: up to about a core (less on a loaded machine), never two.
  EXPECT_GT(busy.peak_cpu_millicores, 0);
  EXPECT_LE(busy.peak_cpu_millicores, 1500);
}

// A step stopped at its timeout (the engine's stop: scancel, every process of the job
// signalled, the script too): its CPU time and peak memory are those of its last sample.
TEST_F(SlurmEngineTest, TimedOutStepKeepsItsLastSampledUsage) {
  StartEngine("slurm");
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: timeout-on-slurm}
spec:
  resources: {cpu: "1", memory: "400Mi"}
  pipeline:
    - name: spin
      timeout: 7s
      command: ["python3", "-c", "x = b'a' * (80 << 20)\nwhile True: pass"]
)yaml");
  auto run = engine_->Wait(id, 120'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto spin = Steps(run->id)["spin"];
  EXPECT_EQ(spin.phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(spin.failure_code, "STEP_TIMED_OUT") << spin.message;
  std::printf("Slurm step stopped at its timeout: wall %lld ms, cpu %lld ms, peak %lld bytes\n",
              static_cast<long long>(spin.wall_ms), static_cast<long long>(spin.cpu_ms),
              static_cast<long long>(spin.peak_memory_bytes));
  EXPECT_GE(spin.cpu_ms, 1000) << spin.message;
  EXPECT_GE(spin.peak_memory_bytes, 80 * kMiB);
  EXPECT_LE(spin.peak_memory_bytes, 400 * kMiB);
  EXPECT_EQ(JobsLeft(), "");
}

}  // namespace
}  // namespace rsl
