#include "govern/memory.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace rsl::govern {
namespace {

constexpr double kGB = 1e9;
constexpr double kGiB = 1024.0 * 1024 * 1024;

struct PaperCase {
  double params;
  int64_t gpus;
  double stage1_gb, stage2_gb, stage3_gb;  // ZeRO paper, Table 1 (truncated: +-1 GB)
};

TEST(MemoryAdvisor, ZeroPaperTable1) {
  const PaperCase cases[] = {
      {7.5e9, 64, 31.4, 16.6, 1.88}, {7.5e9, 1024, 30.1, 15.1, 0.12}, {1e12, 64, 4187, 2218, 250},
      {128e9, 16, 608, 368, 128},    {7.5e9, 1, 120, 120, 120},       {128e9, 1024, 513, 257, 2},
  };
  for (const auto& c : cases) {
    MemoryPlanInput in;
    in.params = c.params;
    in.gpus = c.gpus;
    Result<MemoryPlan> plan = PlanMemory(in);
    ASSERT_TRUE(plan.ok()) << plan.error().ToString();
    ASSERT_EQ(plan->stages.size(), 4u);
    SCOPED_TRACE(std::to_string(c.params) + " @ " + std::to_string(c.gpus));
    // The paper's numbers are the labelled PAPER column; the GPU column follows DeepSpeed.
    EXPECT_NEAR(plan->stages[0].gpu_bytes / kGB, 16 * c.params / kGB, 1e-6);
    EXPECT_NEAR(plan->stages[0].paper_gpu_bytes / kGB, 16 * c.params / kGB, 1e-6);
    EXPECT_NEAR(plan->stages[1].paper_gpu_bytes / kGB, c.stage1_gb, 1.0);
    EXPECT_NEAR(plan->stages[2].paper_gpu_bytes / kGB, c.stage2_gb, 1.0);
    EXPECT_NEAR(plan->stages[3].paper_gpu_bytes / kGB, c.stage3_gb, 1.0);
  }
}

TEST(MemoryAdvisor, ExactPaperFormulas) {
  MemoryPlanInput in;
  in.params = 7.5e9;
  in.gpus = 64;
  in.stage = 2;
  Result<MemoryPlan> plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->stages.size(), 1u);
  EXPECT_EQ(plan->stages[0].paper_gpu_bytes, 2 * 7.5e9 + 14 * 7.5e9 / 64);
  EXPECT_EQ(plan->stages[0].gpu_bytes, 4 * 7.5e9 + 16 * 7.5e9 / 64);
  EXPECT_NE(plan->stages[0].formula.find("4Ψ + 16Ψ/N"), std::string::npos)
      << plan->stages[0].formula;
  EXPECT_NE(MemoryPlanJson(*plan).find("\"paper_gpu_bytes\": 16640625000.0"), std::string::npos)
      << MemoryPlanJson(*plan);
}

// DeepSpeed's documented estimates without offload (docs/code-docs/source/memory.rst,
// estimate_zero{2,3}_model_states_mem_needs_all_cold, t5-3b: 2851e6 params, 32e6 in the
// largest layer, 1 node x 8 GPUs): ZeRO-2 127.45 GB CPU / 15.93 GB GPU; ZeRO-3 1.43 / 6.09
// with zero_init, 127.45 / 6.09 without (the docs' "GB" are GiB).
TEST(MemoryAdvisor, DeepSpeedWithoutOffloadT5_3b) {
  MemoryPlanInput in;
  in.params = 2851e6;
  in.largest_layer_params = 32e6;
  in.gpus = 8;
  in.gpus_per_node = 8;
  Result<MemoryPlan> plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  ASSERT_EQ(plan->stages.size(), 4u);
  EXPECT_EQ(FormatGiB(plan->stages[2].gpu_bytes), "15.93 GiB");
  EXPECT_EQ(FormatGiB(plan->stages[2].cpu_bytes), "127.45 GiB");
  EXPECT_EQ(FormatGiB(plan->stages[1].gpu_bytes), "15.93 GiB");  // same estimator
  EXPECT_EQ(FormatGiB(plan->stages[3].gpu_bytes), "6.09 GiB");
  EXPECT_EQ(FormatGiB(plan->stages[3].cpu_bytes), "127.45 GiB");
  EXPECT_EQ(FormatGiB(plan->stages[0].gpu_bytes), FormatGiB(16 * 2851e6));  // paper: no estimator
  EXPECT_NE(plan->stages[3].formula.find("18Ψ/N"), std::string::npos) << plan->stages[3].formula;
  in.zero_init = true;
  in.stage = 3;
  Result<MemoryPlan> init = PlanMemory(in);
  ASSERT_TRUE(init.ok());
  EXPECT_EQ(FormatGiB(init->stages[0].gpu_bytes), "6.09 GiB");
  EXPECT_EQ(FormatGiB(init->stages[0].cpu_bytes), "1.43 GiB");
}

TEST(MemoryAdvisor, DeepSpeedZero2OptimizerOffloadT5_3b) {
  MemoryPlanInput in;
  in.params = 2851e6;
  in.gpus = 8;
  in.gpus_per_node = 8;
  in.stage = 2;
  in.offload = Offload::kOptimizer;
  Result<MemoryPlan> plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  ASSERT_EQ(plan->stages.size(), 1u);
  EXPECT_NEAR(plan->stages[0].cpu_bytes / kGiB, 127.45, 0.005);
  EXPECT_NEAR(plan->stages[0].gpu_bytes / kGiB, 5.31, 0.005);
  EXPECT_EQ(FormatGiB(plan->stages[0].cpu_bytes), "127.45 GiB");
  EXPECT_EQ(FormatGiB(plan->stages[0].gpu_bytes), "5.31 GiB");
}

TEST(MemoryAdvisor, DeepSpeedZero3Offloads) {
  // DeepSpeed's docs, t5-3b with largest layer 32.9M params, 1 node x 8 GPUs:
  // offload_param=cpu, offload_optimizer=cpu, zero_init=1: 0.12GB/GPU, 71.71GB CPU
  // offload_optimizer=cpu only, zero_init=1: 0.79GB/GPU, 63.74GB CPU.
  // (the docs' table rounds the live model's 2851.6M parameters to "2851M").
  MemoryPlanInput in;
  in.params = 2851.6e6;
  in.largest_layer_params = 32.9e6;
  in.gpus = 8;
  in.stage = 3;
  in.zero_init = true;
  in.offload = Offload::kOptimizerAndParams;
  Result<MemoryPlan> both = PlanMemory(in);
  ASSERT_TRUE(both.ok());
  EXPECT_NEAR(both->stages[0].gpu_bytes / kGiB, 0.12, 0.005);
  EXPECT_NEAR(both->stages[0].cpu_bytes / kGiB, 71.71, 0.01);
  in.offload = Offload::kOptimizer;
  Result<MemoryPlan> opt = PlanMemory(in);
  ASSERT_TRUE(opt.ok());
  EXPECT_NEAR(opt->stages[0].gpu_bytes / kGiB, 0.79, 0.005);
  EXPECT_NEAR(opt->stages[0].cpu_bytes / kGiB, 63.74, 0.01);
}

TEST(MemoryAdvisor, ActivationsKorthikanti) {
  MemoryPlanInput in;
  in.params = 7e9;
  in.gpus = 8;
  in.stage = 3;
  in.layers = 32;
  in.hidden = 4096;
  in.heads = 32;
  in.seq = 2048;
  in.micro_batch = 1;
  Result<MemoryPlan> plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok());
  double per_layer = 2048.0 * 1 * 4096 * (34 + 5.0 * 32 * 2048 / 4096);
  EXPECT_EQ(plan->stages[0].activation_bytes, 32 * per_layer);
  EXPECT_EQ(plan->stages[0].gpu_bytes, plan->stages[0].model_state_gpu_bytes + 32 * per_layer);
  in.full_recompute = true;
  plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->stages[0].activation_bytes, 32 * 2.0 * 2048 * 1 * 4096);
  EXPECT_NE(plan->stages[0].formula.find("full recomputation"), std::string::npos);
}

TEST(MemoryAdvisor, BadInputIsAnErrorWithHint) {
  struct Case {
    MemoryPlanInput in;
    std::string path;
  };
  MemoryPlanInput base;
  base.params = 1e9;
  std::vector<Case> cases;
  Case c{base, "--params"};
  c.in.params = 0;
  cases.push_back(c);
  c = {base, "--gpus"};
  c.in.gpus = 0;
  cases.push_back(c);
  c = {base, "--precision"};
  c.in.precision = "fp8";
  cases.push_back(c);
  c = {base, "--zero"};
  c.in.stage = 4;
  cases.push_back(c);
  c = {base, "--offload"};
  c.in.stage = 1;
  c.in.offload = Offload::kOptimizer;
  cases.push_back(c);
  c = {base, "--layers"};
  c.in.layers = 4;
  cases.push_back(c);
  for (const auto& k : cases) {
    Result<MemoryPlan> plan = PlanMemory(k.in);
    ASSERT_FALSE(plan.ok()) << k.path;
    EXPECT_EQ(plan.error().code, "INVALID_ARGUMENT");
    EXPECT_EQ(plan.error().path, k.path);
    EXPECT_FALSE(plan.error().hint.empty());
  }
}

TEST(MemoryAdvisor, JsonAndEmit) {
  MemoryPlanInput in;
  in.params = 7.5e9;
  in.gpus = 64;
  Result<MemoryPlan> plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok());
  auto j = nlohmann::json::parse(MemoryPlanJson(*plan));
  ASSERT_EQ(j["stages"].size(), 4u);
  EXPECT_EQ(j["stages"][3]["stage"], 3);
  EXPECT_TRUE(j["stages"][3].contains("gpu_bytes"));
  EXPECT_TRUE(j["stages"][3].contains("cpu_bytes"));
  EXPECT_TRUE(j["stages"][3]["formula"].is_string());

  in.offload = Offload::kOptimizer;
  in.precision = "bf16";
  in.full_recompute = true;
  auto cfg = nlohmann::json::parse(EmitDeepSpeedConfig(in, 2));
  EXPECT_EQ(cfg["zero_optimization"]["stage"], 2);
  EXPECT_EQ(cfg["zero_optimization"]["offload_optimizer"]["device"], "cpu");
  EXPECT_TRUE(cfg["bf16"]["enabled"].get<bool>());
  EXPECT_EQ(EmitSeedanceEnv(in, 2),
            "export SEEDANCE_ZERO_STAGE=2\nexport SEEDANCE_GRADIENT_CHECKPOINTING=true\n"
            "export SEEDANCE_OFFLOAD_OPTIMIZER=true\n");
}

}  // namespace
}  // namespace rsl::govern
