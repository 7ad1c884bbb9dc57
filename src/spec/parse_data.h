// The spec's data section (spec.data): the input (URI, format, Avro schema, quality
// thresholds) and the output (URI, schemaRef, features); relative local URIs as
// ParseOptions::relative_uris says.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "spec/parse_fields.h"
#include "spec/workload.h"

namespace rsl::spec {

//! Reads spec.data into the context's workload, recording errors in the context.
void ParseData(ParseContext* c, const YAML::Node& n);

}  // namespace rsl::spec
