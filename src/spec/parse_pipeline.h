// The spec's pipeline (spec.pipeline): a list of steps, or {atomic, steps, timeout}; each
// step's fields, retry policy and envFrom references.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "spec/parse_fields.h"
#include "spec/workload.h"

namespace rsl::spec {

//! Reads spec.pipeline (`spec` is the enclosing mapping, for the timeout set in both places)
//! into the context's workload, recording errors in the context.
void ParsePipeline(ParseContext* c, const YAML::Node& n, const YAML::Node& spec);

}  // namespace rsl::spec
