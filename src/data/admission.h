// The data admission check run before any step starts: existence -> schema -> constraints ->
// quality on the workload's spec.data.input, with the exact SPEC.md codes and messages.
// runtime/data_hooks.h turns it into the engine's admission hook.
//
// Non-file URIs are resolved through the datasource catalog of `state_dir`. Thread-safe:
// each call opens its own catalog connection.
#pragma once

#include <string>
#include <vector>

#include "data/quality.h"
#include "spec/workload.h"

namespace rsl::data {

inline constexpr char kDataValidationFailed[] = "DataValidationFailed";

//! What the check reports besides pass/fail.
struct InputAdmission {
  std::string event_reason;   //!< on failure: kDataValidationFailed
  std::string event_message;  //!< "CODE path: message", or on success the rows and checks
  std::string report_json;    //!< the full ValidationReport (empty without an input)
  std::vector<std::string> input_descriptors_json;  //!< the input's DataDescriptor {uri, ...}
};

//! Validates `workload.data.input` (Ok at once when there is none). On failure the returned
//! error carries the input's source position when the check did not set one.
Status AdmitInput(const spec::Workload& workload, const std::string& state_dir,
                  const ValidateOptions& options, InputAdmission* report);

}  // namespace rsl::data
