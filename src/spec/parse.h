// YAML -> Workload with source positions, and every check SPEC.md describes.
#pragma once

#include <string>

#include "base/status.h"
#include "spec/capabilities.h"
#include "spec/workload.h"

namespace rsl::spec {

struct ParseOptions {
  //! Extra capability names (besides the built-in catalog) that validation accepts.
  std::vector<std::string> extra_capabilities;
  //! The catalog capability names are checked against; null = CapabilityCatalog::BuiltIn().
  //! Must outlive the call.
  const CapabilityCatalog* catalog = nullptr;
};

//! The parsed workload and every error found (all of them, sorted by position). The
//! workload is usable only when `errors` is empty.
struct ParseResult {
  Workload workload;
  Errors errors;
  //! Things that are accepted but probably not meant (e.g. autoscaling on a batch step).
  Errors warnings;
  bool ok() const { return errors.empty(); }
};

//! Parses YAML text. `file` names the source in positions and messages.
ParseResult ParseWorkload(const std::string& yaml, const std::string& file,
                          const ParseOptions& options = {});
//! Reads and parses a file (a missing file is one SPEC_PARSE_ERROR).
ParseResult ParseWorkloadFile(const std::string& path, const ParseOptions& options = {});

}  // namespace rsl::spec
