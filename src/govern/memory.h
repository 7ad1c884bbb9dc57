// The training-memory advisor (`seedctl advise memory`, seed 003 ch.1): model-state memory per
// GPU and CPU memory per node for ZeRO stages 0-3, with the formula used.
//
//  - Every row follows DeepSpeed's estimators, since the same output emits a DeepSpeed config:
//    estimate_zero2_model_states_mem_needs (deepspeed/runtime/zero/stage_1_and_2.py, stages 1
//    and 2; no offload: 4Ψ + 16Ψ/N) and estimate_zero3_model_states_mem_needs (stage3.py; no
//    offload: 4*largest_layer + 18Ψ/N), additional_buffer_factor 1.5 for CPU memory. Offload
//    applies to stages 2 and 3 (params offload: 3 only). DeepSpeed has no stage-0 estimator
//    and assumes mixed precision: stage 0 and fp32 rows use the paper's formula.
//  - The ZeRO paper (Rajbhandari et al. 2020, §3 and Table 1) is kept as a labelled column
//    (no offload): with P bytes per parameter, G per gradient and K per parameter of optimizer
//    state (mixed-precision Adam: P = G = 2, K = 12; fp32 Adam: P = G = 4, K = 8), per GPU
//      stage 0: (P+G+K)Ψ   stage 1: (P+G)Ψ + KΨ/N   stage 2: PΨ + (G+K)Ψ/N   stage 3: (P+G+K)Ψ/N
//  - Activations (optional): Korthikanti et al. 2022, per layer s*b*h*(34 + 5*a*s/h) bytes
//    without recomputation, 2*s*b*h with full activation checkpointing (no tensor/sequence
//    parallelism, 16-bit activations).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::govern {

//! DeepSpeed's additional_buffer_factor default.
inline constexpr double kDeepSpeedBufferFactor = 1.5;

enum class Offload { kNone, kOptimizer, kOptimizerAndParams };

struct MemoryPlanInput {
  double params = 0;  //!< Ψ, total parameters
  int64_t gpus = 1;   //!< N, data-parallel GPUs in total
  int64_t gpus_per_node = 8;
  std::optional<int> stage;  //!< only this stage; all applicable when unset
  Offload offload = Offload::kNone;
  std::string precision = "fp16";   //!< fp16 | bf16 | fp32
  double largest_layer_params = 0;  //!< ZeRO-3 estimates need it (0 = unknown)
  bool zero_init = false;           //!< deepspeed.zero.Init: no full model copy per process
  // Activations (all set, or none).
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, micro_batch = 0;
  bool full_recompute = false;
};

struct StageEstimate {
  int stage = 0;
  double gpu_bytes = 0;  //!< model states (+ activations when given) per GPU
  double cpu_bytes = 0;  //!< per node
  double model_state_gpu_bytes = 0;
  double paper_gpu_bytes = 0;   //!< the ZeRO paper's model states per GPU (0 with offload)
  double activation_bytes = 0;  //!< per GPU (0 when not requested)
  std::string formula;          //!< the formula with the numbers substituted
};

struct MemoryPlan {
  std::vector<StageEstimate> stages;
  std::vector<std::string> notes;  //!< e.g. "stage 0/1: DeepSpeed offloads from stage 2"
};

//! Errors: INVALID_ARGUMENT (params <= 0, gpus < 1, gpus not a multiple of gpus-per-node is
//! allowed (nodes rounded up), unknown precision, stage outside 0..3, offload with a stage
//! that does not support it, partial activation flags).
Result<MemoryPlan> PlanMemory(const MemoryPlanInput& in);

//! `{"stages":[{"stage","gpu_bytes","cpu_bytes","model_state_gpu_bytes","paper_gpu_bytes"
//! (null with offload),"activation_bytes","formula"}], "notes": [...]}`.
std::string MemoryPlanJson(const MemoryPlan& plan);

//! The DeepSpeed config (JSON) and the seed's SEEDANCE_* environment for one stage.
std::string EmitDeepSpeedConfig(const MemoryPlanInput& in, int stage);
std::string EmitSeedanceEnv(const MemoryPlanInput& in, int stage);

//! "31.4 GB" (1e9) and "5.31 GiB" (2^30) for tables.
std::string FormatGB(double bytes);
std::string FormatGiB(double bytes);

}  // namespace rsl::govern
