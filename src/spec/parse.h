// YAML -> Workload with source positions, and every check SPEC.md describes.
#pragma once

#include <functional>
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
  //! Relative local data URIs (data.input.uri, data.output.uri written as a bare path or a
  //! file:// path without a leading '/') would name another place for every process that
  //! reads or commits them (a recovering `seedctl run` in another directory, the
  //! controller). kKeep leaves them as written (validation); kResolve makes them absolute
  //! against `base_dir`, so the stored canonical spec names one place (ParseWorkloadFile with
  //! an empty base_dir: the file's directory); kRefuse reports SPEC_INVALID (a spec that came
  //! without a directory, e.g. through the API).
  enum class RelativeUris { kKeep, kResolve, kRefuse };
  RelativeUris relative_uris = RelativeUris::kKeep;
  std::string base_dir;  //!< absolute; for kResolve
  //! Called once the text is read as YAML (merge keys applied), before the spec is checked,
  //! with the document's metadata.namespace as written ("" when absent or not a string).
  //! An error it returns is then the parse's only error and nothing else is checked (the
  //! API refuses a namespace the caller may not write to before it reports anything about
  //! the spec). Not called when the text is not one readable YAML document (too big, not
  //! UTF-8, a syntax error, empty, two documents).
  std::function<Status(const std::string& yaml_namespace)> on_namespace;
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
