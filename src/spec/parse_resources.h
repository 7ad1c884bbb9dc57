// The spec's resource requests (spec.resources, a step's resources): cpu, memory, gpu
// (count, capabilities from the catalog, memory) and autoscaling.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "spec/parse_fields.h"
#include "spec/workload.h"

namespace rsl::spec {

//! Reads a resources mapping at `path` into *out, recording errors in the context.
void ParseResources(ParseContext* c, const YAML::Node& n, const std::string& path, Resources* out);

}  // namespace rsl::spec
