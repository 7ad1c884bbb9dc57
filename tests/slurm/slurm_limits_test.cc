// What Slurm enforces and measures, through the Engine on the fixture's cluster (task/cgroup
// with ConstrainRAMSpace, scripts/slurm-cluster.sh): a step's CPU time and peak memory reach
// the store (and so `seedctl workload status`, the console and cost accounting), and a step
// over its --mem ends OOMKilled with the limit named.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

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
  EXPECT_EQ(Sh("squeue -h -t PD,R,CG -o %A"), "");
}

}  // namespace
}  // namespace rsl
