// One way to turn YAML text into a node tree: yaml-cpp's exceptions become a SPEC_PARSE_ERROR
// at file:line:column (1-based), for every YAML file the platform reads (workloads aside, whose
// parser adds its own checks of the text: spec/parse_text.h).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "base/status.h"

namespace rsl::spec {

//! Parses `text` (the contents of `file`, named in the error), with merge keys applied and
//! duplicate keys refused (spec/yaml_merge.h). Never throws.
Result<YAML::Node> LoadYaml(const std::string& text, const std::string& file);

}  // namespace rsl::spec
