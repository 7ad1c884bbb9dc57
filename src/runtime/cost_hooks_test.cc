// The cost hook inside a run: every attempt recorded with its labels, a broken price
// table reported without failing the step.
#include "runtime/cost_hooks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "base/fake_env.h"
#include "base/file.h"

namespace rsl::govern {
namespace {

using runtime::CostHook;

TEST(CostHook, RecordsEveryAttemptWithLabels) {
  std::string dir = "/tmp/rsl-govern-hook-" + std::to_string(getpid());
  RemoveAll(dir);
  ASSERT_TRUE(MakeDirs(dir).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/prices.yaml",
                              "cpu_core_hour: {on-demand: 0.03, spot: 0.01}\n"
                              "memory_gib_hour: {on-demand: 0.004, spot: 0.001}\n"
                              "devices: {A100: {on-demand: 4.0, spot: 1.2}}\n")
                  .ok());
  spec::Workload w;
  w.name = "llama";
  w.namespace_ = "llm";
  w.labels = {{"team", "llm"}, {"project", "chat"}, {"model", "llama-7b"}, {"stage", "sft"}};
  w.annotations = {{"rsl.cost/pricing", "spot"}};
  spec::Step step;
  step.name = "train";
  engine::RunInfo run{"wl-20240101-abcdef12", "run-1", dir, dir + "/runs/run-1", &w};
  FakeClockEnv clock(5000);
  CostHook hook(dir, &clock);
  engine::StepOutcome out;
  out.step = "train";
  out.attempt = 1;
  out.exit.kind = backend::ExitKind::kFailed;
  out.exit.usage.wall_ms = 3600 * 1000;
  out.exit.usage.cpu_ms = 1000;
  out.exit.usage.peak_memory_bytes = 2LL << 30;
  out.allocated_cpu_millis = 2000;
  out.allocated_memory_bytes = 1LL << 30;
  out.allocated_gpus = 1;
  out.gpu_model = "A100";
  out.metrics_json = R"({"loss": 0.5})";
  EXPECT_TRUE(hook.AfterStep(run, step, out).ok());
  out.attempt = 2;
  out.exit.kind = backend::ExitKind::kSucceeded;
  clock.SetNowMs(9000);
  EXPECT_TRUE(hook.AfterStep(run, step, out).ok());
  EXPECT_EQ(hook.last_error(), "");
  auto store = CostStore::Open(dir);
  ASSERT_TRUE(store.ok());
  auto recs = (*store)->List(0);
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 2u);
  const CostRecord& r = (*recs)[0];
  EXPECT_EQ(r.exit_kind, "Failed");
  EXPECT_EQ((*recs)[1].attempt, 2);
  EXPECT_EQ(r.labels.at("stage"), "sft");
  EXPECT_EQ(r.namespace_, "llm");
  EXPECT_EQ(r.pricing, "spot");
  EXPECT_EQ(r.metrics_json, R"({"loss": 0.5})");
  // 1 GPU-hour spot 1.2 + 2 cores (request) x 0.01 + 2 GiB (peak) x 0.001.
  EXPECT_NEAR(r.cost.total, 1.2 + 0.02 + 0.002, 1e-12);

  // A broken price table does not fail the step, but is reported.
  ASSERT_TRUE(WriteFileAtomic(dir + "/prices.yaml", "devices: {A100: {spot: nope}}\n").ok());
  EXPECT_TRUE(hook.AfterStep(run, step, out).ok());
  EXPECT_NE(hook.last_error().find("devices.A100.spot"), std::string::npos) << hook.last_error();
  RemoveAll(dir);
}

// rsl-controller --prices FILE: that table, and <state-dir>/prices.yaml never written.
TEST(CostHook, PricesWithTheOperatorsFile) {
  std::string dir = "/tmp/rsl-govern-hook-file-" + std::to_string(getpid());
  RemoveAll(dir);
  ASSERT_TRUE(MakeDirs(dir).ok());
  std::string prices = dir + "/ops-prices.yaml";
  ASSERT_TRUE(WriteFileAtomic(prices,
                              "cpu_core_hour: {on-demand: 0.5}\n"
                              "memory_gib_hour: {on-demand: 0.25}\n"
                              "devices: {A100: {on-demand: 7.0}}\n")
                  .ok());
  spec::Workload w;
  w.name = "llama";
  w.namespace_ = "llm";
  spec::Step step;
  step.name = "train";
  engine::RunInfo run{"wl-20240101-abcdef12", "run-1", dir, dir + "/runs/run-1", &w};
  FakeClockEnv clock(5000);
  CostHook hook(dir, &clock, prices);
  engine::StepOutcome out;
  out.step = "train";
  out.attempt = 1;
  out.exit.kind = backend::ExitKind::kSucceeded;
  out.exit.usage.wall_ms = 3600 * 1000;
  out.allocated_cpu_millis = 1000;
  out.allocated_memory_bytes = 1LL << 30;
  out.allocated_gpus = 1;
  out.gpu_model = "A100";
  EXPECT_TRUE(hook.AfterStep(run, step, out).ok());
  EXPECT_EQ(hook.last_error(), "");
  EXPECT_FALSE(PathExists(dir + "/prices.yaml"));
  auto store = CostStore::Open(dir);
  ASSERT_TRUE(store.ok());
  auto recs = (*store)->List(0);
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 1u);
  // 1 GPU-hour 7.0 + 1 core x 0.5 + 1 GiB x 0.25.
  EXPECT_NEAR((*recs)[0].cost.total, 7.0 + 0.5 + 0.25, 1e-12);

  // A file that went missing is reported, without failing the step.
  RemoveAll(prices);
  EXPECT_TRUE(hook.AfterStep(run, step, out).ok());
  EXPECT_NE(hook.last_error().find("NOT_FOUND"), std::string::npos) << hook.last_error();
  RemoveAll(dir);
}

}  // namespace
}  // namespace rsl::govern
