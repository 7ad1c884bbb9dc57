// The data admission check the engine runs before any step starts (engine/hooks.h):
// existence -> schema -> constraints -> quality on the workload's spec.data.input, with the
// exact SPEC.md codes and messages. On failure the report's event_reason is
// "DataValidationFailed"; report_json holds the full ValidationReport either way, and
// input_descriptors_json the input's DataDescriptor {uri, schema, version, checksum}.
//
// Non-file URIs are resolved through the datasource catalog of the state directory the check
// was built with. Thread-safe: each Check opens its own catalog connection.
#pragma once

#include <string>

#include "data/quality.h"
#include "engine/hooks.h"

namespace rsl::data {

inline constexpr char kDataValidationFailed[] = "DataValidationFailed";

class DataAdmissionCheck : public engine::AdmissionCheck {
 public:
  explicit DataAdmissionCheck(std::string state_dir, ValidateOptions options = {})
      : state_dir_(std::move(state_dir)), options_(options) {}
  std::string name() const override { return "data"; }
  Status Check(const engine::RunInfo& run, engine::AdmissionReport* report) override;

 private:
  std::string state_dir_;
  ValidateOptions options_;
};

}  // namespace rsl::data
