#include "govern/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/codes.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

std::string SixDigits(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct Bytes {
  double p, g, k;
};

Error Bad(const std::string& flag, const std::string& value, const std::string& msg,
          const std::string& hint) {
  return Error(codes::kInvalidArgument, msg).Path(flag).Value(value).Hint(hint);
}

// Paper formulas (no offload), per GPU.
StageEstimate PaperStage(int stage, double psi, double n, Bytes b) {
  StageEstimate e;
  e.stage = stage;
  const std::string pp = SixDigits(b.p), gg = SixDigits(b.g), kk = SixDigits(b.k);
  switch (stage) {
    case 0:
      e.model_state_gpu_bytes = (b.p + b.g + b.k) * psi;
      e.formula = "(" + pp + "+" + gg + "+" + kk + ")Ψ";
      break;
    case 1:
      e.model_state_gpu_bytes = (b.p + b.g) * psi + b.k * psi / n;
      e.formula = SixDigits(b.p + b.g) + "Ψ + " + kk + "Ψ/N";
      break;
    case 2:
      e.model_state_gpu_bytes = b.p * psi + (b.g + b.k) * psi / n;
      e.formula = pp + "Ψ + " + SixDigits(b.g + b.k) + "Ψ/N";
      break;
    default:
      e.model_state_gpu_bytes = (b.p + b.g + b.k) * psi / n;
      e.formula = SixDigits(b.p + b.g + b.k) + "Ψ/N";
      break;
  }
  e.formula = "gpu = " + e.formula + " (ZeRO paper, K=" + kk + ")";
  return e;
}

}  // namespace

std::string FormatGB(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

std::string FormatGiB(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

Result<MemoryPlan> PlanMemory(const MemoryPlanInput& in) {
  if (!(in.params > 0) || !std::isfinite(in.params)) {
    return Bad("--params", SixDigits(in.params), "the parameter count must be positive",
               "write e.g. --params 7.5e9");
  }
  if (in.gpus < 1) {
    return Bad("--gpus", std::to_string(in.gpus), "at least one GPU is needed", "--gpus 8");
  }
  if (in.gpus_per_node < 1) {
    return Bad("--gpus-per-node", std::to_string(in.gpus_per_node),
               "at least one GPU per node is needed", "--gpus-per-node 8");
  }
  Bytes b;
  if (in.precision == "fp16" || in.precision == "bf16") {
    b = {2, 2, 12};
  } else if (in.precision == "fp32") {
    b = {4, 4, 8};
  } else {
    return Bad("--precision", in.precision, "unknown precision", "use fp16, bf16 or fp32");
  }
  if (in.stage && (*in.stage < 0 || *in.stage > 3)) {
    return Bad("--zero", std::to_string(*in.stage), "ZeRO stage must be 0, 1, 2 or 3", "--zero 2");
  }
  if (in.stage && in.offload != Offload::kNone && *in.stage < 2) {
    return Bad("--offload", in.offload == Offload::kOptimizer ? "optimizer" : "optimizer+params",
               "DeepSpeed offloads from ZeRO stage 2 on", "use --zero 2 or --zero 3");
  }
  if (in.stage && in.offload == Offload::kOptimizerAndParams && *in.stage != 3) {
    return Bad("--offload", "optimizer+params", "parameter offload needs ZeRO stage 3",
               "use --zero 3 or --offload optimizer");
  }
  int act_given =
      (in.layers > 0) + (in.hidden > 0) + (in.heads > 0) + (in.seq > 0) + (in.micro_batch > 0);
  if (act_given != 0 && act_given != 5) {
    return Bad("--layers", "",
               "activation memory needs all of --layers --hidden --heads --seq "
               "--micro-batch",
               "give all five, or none");
  }

  const double psi = in.params;
  const double n = static_cast<double>(in.gpus);
  const double gpn = static_cast<double>(std::min(in.gpus, in.gpus_per_node));
  const double nodes = std::ceil(n / static_cast<double>(in.gpus_per_node));
  const double f = kDeepSpeedBufferFactor;
  MemoryPlan plan;

  double act = 0;
  std::string act_formula;
  if (act_given == 5) {
    double s = static_cast<double>(in.seq), bb = static_cast<double>(in.micro_batch),
           h = static_cast<double>(in.hidden), a = static_cast<double>(in.heads),
           l = static_cast<double>(in.layers);
    if (in.full_recompute) {
      act = l * 2 * s * bb * h;
      act_formula = "activations = L*2*s*b*h (full recomputation, Korthikanti et al. 2022)";
    } else {
      act = l * s * bb * h * (34 + 5 * a * s / h);
      act_formula =
          "activations = L*s*b*h*(34 + 5*a*s/h) (no recomputation, Korthikanti et "
          "al. 2022)";
    }
  }

  std::vector<int> stages;
  if (in.stage) {
    stages.push_back(*in.stage);
  } else {
    for (int s = 0; s <= 3; ++s) {
      if (in.offload != Offload::kNone && s < 2) continue;
      if (in.offload == Offload::kOptimizerAndParams && s < 3) continue;
      stages.push_back(s);
    }
    if (in.offload != Offload::kNone) {
      plan.notes.push_back(in.offload == Offload::kOptimizer
                               ? "optimizer offload: stages 2 and 3 only (DeepSpeed)"
                               : "parameter offload: stage 3 only (DeepSpeed)");
    }
  }
  if (in.precision == "fp32") {
    plan.notes.push_back(in.offload != Offload::kNone
                             ? "DeepSpeed's offload estimators assume mixed precision (16-bit "
                               "params on the GPU)"
                             : "fp32: DeepSpeed's estimators assume mixed precision, so the GPU "
                               "column is the ZeRO paper's formula with fp32 bytes");
  }

  for (int stage : stages) {
    StageEstimate e;
    if (in.offload == Offload::kNone) {
      const StageEstimate paper = PaperStage(stage, psi, n, b);
      const bool mixed = in.precision != "fp32";
      if (stage == 0 || !mixed) {
        // DeepSpeed has no stage-0 estimator, and its estimators assume mixed precision.
        e = paper;
      } else if (stage <= 2) {
        e.stage = stage;
        e.model_state_gpu_bytes = 4 * psi + std::floor(16 * psi / n);
        e.formula =
            "gpu = 4Ψ + 16Ψ/N (DeepSpeed estimate_zero2_model_states_mem_needs, stages 1 and 2)";
      } else {
        e.stage = 3;
        e.model_state_gpu_bytes = 4 * in.largest_layer_params + std::floor(18 * psi / n);
        e.formula =
            "gpu = 4*largest_layer + 18Ψ/N (DeepSpeed estimate_zero3_model_states_mem_needs)";
        if (in.largest_layer_params <= 0) {
          e.formula += " [--largest-layer not given: counted as 0]";
        }
      }
      e.paper_gpu_bytes = std::floor(paper.model_state_gpu_bytes);
      // DeepSpeed (no offload): each process loads the fp32 model on the CPU first, unless
      // zero.Init partitions it at construction (stage 3).
      if (stage == 3 && in.zero_init) {
        e.cpu_bytes = in.largest_layer_params * 4 * gpn * f;
        e.formula += "; cpu = largest_layer*4*gpus_per_node*1.5 (DeepSpeed, zero.Init)";
      } else {
        e.cpu_bytes = psi * 4 * gpn * f;
        e.formula += "; cpu = 4Ψ*gpus_per_node*1.5 (DeepSpeed)";
      }
    } else if (stage == 2) {
      e.stage = 2;
      e.model_state_gpu_bytes = 2 * psi;
      e.cpu_bytes = psi * std::max(4 * n, 16.0) * f;
      e.formula =
          "gpu = 2Ψ; cpu = Ψ*max(4*total_gpus, 16)*1.5 (DeepSpeed "
          "estimate_zero2_model_states_mem_needs, offload optimizer)";
    } else {  // stage 3 with offload
      e.stage = 3;
      double largest = 4 * in.largest_layer_params;
      double gpus_factor = 1.0 / nodes;
      const char* fn = "DeepSpeed estimate_zero3_model_states_mem_needs";
      if (in.offload == Offload::kOptimizerAndParams) {
        e.model_state_gpu_bytes = largest;
        e.cpu_bytes = in.zero_init ? psi * 18 * gpus_factor * f
                                   : psi * std::max(4 * gpn, 18 * gpus_factor) * f;
        e.formula = std::string("gpu = 4*largest_layer; cpu = ") +
                    (in.zero_init ? "Ψ*18/nodes*1.5" : "Ψ*max(4*gpus_per_node, 18/nodes)*1.5") +
                    " (" + fn + ", offload optimizer+params)";
      } else {
        e.model_state_gpu_bytes = largest + std::floor(2 * psi / n);
        e.cpu_bytes = in.zero_init ? psi * 16 * gpus_factor * f
                                   : psi * std::max(4 * gpn, 16 * gpus_factor) * f;
        e.formula = std::string("gpu = 4*largest_layer + 2Ψ/N; cpu = ") +
                    (in.zero_init ? "Ψ*16/nodes*1.5" : "Ψ*max(4*gpus_per_node, 16/nodes)*1.5") +
                    " (" + fn + ", offload optimizer)";
      }
      if (in.largest_layer_params <= 0) {
        e.formula += " [--largest-layer not given: counted as 0]";
      }
    }
    e.model_state_gpu_bytes = std::floor(e.model_state_gpu_bytes);
    e.cpu_bytes = std::floor(e.cpu_bytes);
    e.activation_bytes = act;
    e.gpu_bytes = e.model_state_gpu_bytes + act;
    if (act > 0) e.formula += "; + " + act_formula;
    plan.stages.push_back(e);
  }
  return plan;
}

std::string MemoryPlanJson(const MemoryPlan& plan) {
  json stages = json::array();
  for (const auto& s : plan.stages) {
    stages.push_back(
        {{"stage", s.stage},
         {"gpu_bytes", s.gpu_bytes},
         {"cpu_bytes", s.cpu_bytes},
         {"model_state_gpu_bytes", s.model_state_gpu_bytes},
         {"paper_gpu_bytes", s.paper_gpu_bytes > 0 ? json(s.paper_gpu_bytes) : json(nullptr)},
         {"activation_bytes", s.activation_bytes},
         {"formula", s.formula}});
  }
  return json({{"stages", stages}, {"notes", plan.notes}}).dump(2) + "\n";
}

std::string EmitDeepSpeedConfig(const MemoryPlanInput& in, int stage) {
  json zero = {{"stage", stage}, {"overlap_comm", true}, {"contiguous_gradients", true}};
  if (in.offload != Offload::kNone) {
    zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  if (in.offload == Offload::kOptimizerAndParams) {
    zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  json cfg = {{"train_micro_batch_size_per_gpu", in.micro_batch > 0 ? in.micro_batch : 1},
              {"gradient_accumulation_steps", 1},
              {"zero_optimization", zero}};
  if (in.precision == "bf16") cfg["bf16"] = {{"enabled", true}};
  if (in.precision == "fp16") cfg["fp16"] = {{"enabled", true}, {"loss_scale", 0}};
  if (in.full_recompute) {
    cfg["activation_checkpointing"] = {{"partition_activations", stage == 3},
                                       {"contiguous_memory_optimization", false}};
  }
  return cfg.dump(2) + "\n";
}

std::string EmitSeedanceEnv(const MemoryPlanInput& in, int stage) {
  std::string out;
  out += "export SEEDANCE_ZERO_STAGE=" + std::to_string(stage) + "\n";
  out += std::string("export SEEDANCE_GRADIENT_CHECKPOINTING=") +
         (in.full_recompute ? "true" : "false") + "\n";
  out += std::string("export SEEDANCE_OFFLOAD_OPTIMIZER=") +
         (in.offload != Offload::kNone ? "true" : "false") + "\n";
  return out;
}

}  // namespace rsl::govern
