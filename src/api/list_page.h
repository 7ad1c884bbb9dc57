// Paging through the workloads list (GET /api/v1/workloads?limit=L&continue=C, docs/api.md):
// the query a page asks for, and the continue token, which names the last item of the page
// before (its creation time and id), so the next page starts right after it however many
// workloads were added meanwhile and costs the same at any depth (keyset paging).
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

//! The token after an item created at `created_at_ms` with id `id`: "<created_at_ms>_<id>".
std::string ContinueToken(int64_t created_at_ms, const std::string& id);

//! (created_at_ms, id) of a token ContinueToken made. INVALID_ARGUMENT (path "continue", the
//! value, a hint) for anything else.
Result<std::pair<int64_t, std::string>> ParseContinueToken(const std::string& token);

}  // namespace rsl::api
