// Paging through the workloads list (GET /api/v1/workloads?limit=L&continue=C, docs/api.md):
// the query a page asks for, and the continue token, which names the last item of the page
// before (its creation time and id), so the next page starts right after it however many
// workloads were added meanwhile and costs the same at any depth (keyset paging).
// The same for one workload's steps (GET /api/v1/workloads/{id}[/describe]?limit=L&continue=C):
// a step's token names its pipeline index, which never changes, so pages stay whole while
// steps change phase.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace rsl::api {

struct WorkloadListQuery {
  std::vector<std::string> namespaces;  //!< empty = all
  std::string name;                     //!< "" = all (a name's history)
  std::string phase;                    //!< "" = all
  std::string label_key, label_value;   //!< "" key = any
  int64_t limit = 0;                    //!< 0 = every item
  std::string continue_token;           //!< "" = the first page
};

//! Which of a workload's steps and events an object holds (status, describe).
struct StepsView {
  int64_t limit = 0;           //!< steps in status.steps; 0 = every step
  std::string continue_token;  //!< "" = from the first step
  int64_t event_limit = 0;     //!< describe: the last this many events; 0 = every event
};

//! What GET .../{id} and .../describe show when the request names no limit: a page a person
//! reads, and an answer that stays small (a 100,000-step run's whole document is ~100 MB).
inline constexpr int64_t kDefaultStepLimit = 500;
inline constexpr int64_t kDefaultEventLimit = 500;
//! Beside a page that does not hold every step, status.activeSteps: the first this many steps
//! of each phase that needs attention (running, retrying, failed, timed out).
inline constexpr int64_t kActiveStepsPerPhase = 50;

//! The token after the step at pipeline index `index`: "step-<index>".
std::string StepContinueToken(int index);
//! The index of a token StepContinueToken made. INVALID_ARGUMENT (path "continue") otherwise.
Result<int> ParseStepContinueToken(const std::string& token);

//! The token after an item created at `created_at_ms` with id `id`: "<created_at_ms>_<id>".
std::string ContinueToken(int64_t created_at_ms, const std::string& id);

//! (created_at_ms, id) of a token ContinueToken made. INVALID_ARGUMENT (path "continue", the
//! value, a hint) for anything else.
Result<std::pair<int64_t, std::string>> ParseContinueToken(const std::string& token);

}  // namespace rsl::api
