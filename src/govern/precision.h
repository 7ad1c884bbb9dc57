// `seedctl advise precision -f config.yaml` (seed 003 ch.1): checks the per-layer precision
// policy block
//   precision_policy:
//     default: fp16
//     overrides:
//       - {module: "embedding", dtype: bf16}
//       - {module: "lm_head", dtype: bf16}
// found at the top level of the file or anywhere below it. fp16's narrow range overflows in
// the embedding and output (lm_head) layers, which the seed keeps in bf16.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "govern/findings.h"

namespace rsl::govern {

std::vector<RuleInfo> PrecisionRules();

struct PrecisionPlan {
  std::string default_dtype;
  std::vector<std::pair<std::string, std::string>> overrides;  //!< module, dtype
  //! The dtype the embedding and lm_head layers end up with.
  std::string embedding_dtype, lm_head_dtype;
};

//! Adds PREC001..PREC005 findings; returns what the policy resolves to. A YAML syntax error
//! is returned as an error (SPEC_PARSE_ERROR with file:line:col).
Result<PrecisionPlan> CheckPrecision(const std::string& yaml, const std::string& file,
                                     Report* report);

}  // namespace rsl::govern
