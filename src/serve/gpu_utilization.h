// A serving replica's GPU utilization, where GPUs are probed: nvidia-smi's per-device
// utilization (`nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits`),
// averaged over the devices the replica was given (its CUDA_VISIBLE_DEVICES). The parser and
// the selection are pure; ProbeGpuUtilization runs nvidia-smi once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"

namespace rsl::serve {

//! nvidia-smi's query command (`nvidia_smi` is the executable).
std::vector<std::string> GpuUtilizationCommand(const std::string& nvidia_smi);

//! Device index -> utilization as a fraction (0.37 = 37 %), from the query's output: one
//! "index, utilization" line per device. A device that reports no number ("[N/A]",
//! "[Not Supported]") is left out. Errors: INTERNAL naming the first line that is neither.
Result<std::map<int, double>> ParseGpuUtilization(const std::string& csv);

//! The devices in a CUDA_VISIBLE_DEVICES value ("0,2"); what is not a device index (a UUID,
//! "" ) is left out.
std::vector<int> VisibleDevices(const std::string& cuda_visible_devices);

//! The average utilization of `devices` in `by_index`; nothing when none of them is there
//! (then the replica's CPU use stands in).
std::optional<double> DevicesUtilization(const std::map<int, double>& by_index,
                                         const std::vector<int>& devices);

//! Runs the query through `env` (bounded: a hung nvidia-smi is killed after 5 s). Errors:
//! IO_ERROR when it cannot run or fails, and the parser's.
Result<std::map<int, double>> ProbeGpuUtilization(Env* env, const std::string& nvidia_smi);

}  // namespace rsl::serve
