// Node inventory for the local backend: this machine's cores and memory (probed), GPUs seen
// by nvidia-smi (probed), plus devices and extra nodes declared in a node file ("declared,
// not probed"). Zero-trust: a probed device counts only if the probe sees it.
//
// Node file (YAML, docs/engine.md "Node file"):
//   nodes:
//     - name: local            # "local" (or omitted name) = this machine: merges with probe
//       cpu: "8"               # optional: overrides the probed value (less is allowed)
//       memory: 32Gi
//       capabilities: [low_latency]
//       labels: {zone: a}
//       gpus:
//         - {model: A10, memory: 24Gi, count: 2, capabilities: [tensor_core, fp16_support]}
// A file with no `nodes:` key describes the local node itself (the keys of one entry).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "sched/node.h"

namespace rsl::sched {

inline constexpr char kLocalNodeName[] = "local";

//! Cores (cpu_millis), memory, hostname label and nvidia-smi GPUs of this machine.
//! `nvidia_smi` is the command to run ("" = skip the GPU probe).
Node ProbeLocalNode(const std::string& nvidia_smi = "nvidia-smi");

//! Parses nvidia-smi `--query-gpu=name,memory.total --format=csv,noheader,nounits` output.
std::vector<Device> ParseNvidiaSmi(const std::string& csv);

//! Reads a node file and merges it with `probed` (the local node). Errors: SPEC_PARSE_ERROR
//! / SPEC_INVALID with the file, line:column and field path.
Result<std::vector<Node>> LoadNodeFile(const std::string& path, const Node& probed);
Result<std::vector<Node>> ParseNodeFile(const std::string& yaml, const std::string& file,
                                        const Node& probed);

//! Capabilities of a known GPU model from the built-in catalog (A100, H100, A10, T4, ...),
//! matched case-insensitively on the model name ("NVIDIA A100-SXM4-80GB" -> A100).
std::vector<std::string> CatalogCapabilities(const std::string& model);

//! "A10 24Gi (declared, not probed)" for messages and tables.
std::string DescribeDevice(const Device& d);

}  // namespace rsl::sched
