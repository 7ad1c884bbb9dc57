// The spec's model section (spec.model): framework, version, build fingerprint, pinned
// dependencies, and the signature's tensors (also a step's outputs).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "spec/parse_fields.h"
#include "spec/workload.h"

namespace rsl::spec {

//! Reads spec.model into the context's workload, recording errors in the context.
void ParseModel(ParseContext* c, const YAML::Node& n);
//! Reads a list of tensors (a signature's inputs or outputs, a step's outputs) at `path`,
//! appending those without errors to *out. Stops early once the Reader is exhausted.
void ParseTensors(ParseContext* c, const YAML::Node& n, const std::string& path,
                  std::vector<TensorSpec>* out);

}  // namespace rsl::spec
