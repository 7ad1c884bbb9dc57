// The spec's data section (spec.data): the input (URI, format, Avro schema, quality
// thresholds) and the output (URI, schemaRef, features); relative local URIs as
// ParseOptions::relative_uris says.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "base/status.h"
#include "spec/parse_fields.h"
#include "spec/workload.h"

namespace rsl::spec {

//! Reads spec.data into the context's workload, recording errors in the context.
void ParseData(ParseContext* c, const YAML::Node& n);

//! Reads one data input block `n` found at `path` of the YAML text `yaml` from `file`: the
//! bare `input:` block that `seedctl data validate` accepts. The same checks, codes and
//! positions as spec.data.input of a workload (the same parser), with `path` ("input",
//! "data.input") naming the fields. Relative URIs are kept as written. Returns the first
//! error by position; never throws.
Result<DataInput> ParseDataInputBlock(const std::string& yaml, const std::string& file,
                                      const YAML::Node& n, const std::string& path);

}  // namespace rsl::spec
