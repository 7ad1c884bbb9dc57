// A node as the scheduler sees it: what it has, and what is free now.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spec/phase.h"

namespace rsl::sched {

struct Device {
  std::string model;  //!< e.g. "A10", "NVIDIA H200"
  int64_t memory_bytes = 0;
  std::vector<std::string> capabilities;  //!< from the capability catalog or node features
  bool probed = false;                    //!< false: "declared, not probed" (node file)
};

struct Node {
  std::string name;
  spec::NodeState state = spec::NodeState::kReady;  //!< only Ready nodes take new work
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  std::vector<Device> gpus;
  std::vector<std::string> capabilities;  //!< node-level features (Slurm Features)
  std::map<std::string, std::string> labels;
  // What is in use now (filled by the backend/engine).
  int64_t used_cpu_millis = 0;
  int64_t used_memory_bytes = 0;
  int64_t used_gpus = 0;
};

}  // namespace rsl::sched
