// Placement: which node a step goes to. Filters nodes that are Ready, have enough free
// cpu/memory/GPUs and whose devices hold every requested capability (and device memory),
// then picks the LEAST-LOADED one (SPEC.md "resources": never simply the strongest).
// Pure functions over Node values; the engine keeps the usage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/node.h"

namespace rsl::sched {

struct Request {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int64_t gpus = 0;
  std::vector<std::string> gpu_capabilities;
  std::optional<int64_t> gpu_memory_bytes;
};

//! Why a request cannot be placed, in words (names the missing capability or resource).
struct Misfit {
  std::string node;
  std::string reason;  //!< e.g. "no GPU with capability low_latency", "cpu 16 > 8"
};

struct Placement {
  std::string node;              //!< "" when nothing fits now
  std::vector<int> gpu_indices;  //!< indices into the node's gpus
  std::vector<Misfit> misfits;   //!< one per node that was refused
};

//! Does `n` fit `req`? With `now`, against its current use and state (only Ready nodes take
//! work; `busy` are its held device indices) and `gpus` gets the free devices to use;
//! otherwise as if it were idle and Ready. On false, `why` says what is missing.
bool Fits(const Node& n, const Request& req, bool now, const std::vector<int>& busy,
          std::vector<int>* gpus, std::string* why);

//! Joins (node, reason) pairs into one message, grouped by reason, the most common first:
//! "n1: reason", "n1, n2: reason", or "9750 nodes (n1, n2, n3, ...): reason"; at most six
//! reasons, then "and N more node(s)".
std::string SummarizeMisfits(const std::vector<Misfit>& misfits);

//! Could any node satisfy `req` if it were idle and Ready? Returns "" if so, else a message
//! naming what is missing (for INSUFFICIENT_RESOURCES), summarized (SummarizeMisfits). A node's
//! state is transient (drained, down, not responding: it may come back) and never makes a request
//! impossible.
std::string WhyNeverFits(const std::vector<Node>& nodes, const Request& req);

//! Chooses the least-loaded node that fits now. `gpus_in_use[i]` are the busy device indices
//! of nodes[i] (may be shorter than nodes).
Placement Place(const std::vector<Node>& nodes, const Request& req,
                const std::vector<std::vector<int>>& gpus_in_use = {});

//! Load of a node in [0, 1]: the largest used fraction of cpu, memory and GPUs.
double Load(const Node& n);

}  // namespace rsl::sched
