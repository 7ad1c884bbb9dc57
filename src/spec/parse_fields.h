// The shared part of the spec's section parsers (parse.cc and parse_*.cc): one parse's
// context, and the field readers that several sections use. Internal to the spec layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "spec/parse.h"
#include "spec/reader.h"
#include "spec/workload.h"

namespace rsl::spec {

//! Percentages (quality thresholds, autoscaling targets) and the backoff factor stop here.
constexpr int64_t kMaxPercent = 100;

//! One parse's state, shared by the section parsers: the YAML text (positions inside scalars,
//! e.g. an Avro schema), the workload being filled, the Reader that records positions and
//! errors into it, and the options. Everything referenced must outlive the context.
struct ParseContext {
  ParseContext(const std::string& yaml, Workload* workload, Errors* errors,
               const ParseOptions& parse_options)
      : text(yaml),
        w(workload),
        r(workload->source_file, &workload->positions, errors),
        options(parse_options) {}

  const std::string& text;
  Workload* w;
  Reader r;
  const ParseOptions& options;
};

//! Base of the section parsers: the context under the names their checks use, and the
//! readers of fields that several sections have. Errors go to the context's Reader.
class FieldParser {
 public:
  explicit FieldParser(ParseContext* c)
      : c_(c), text_(c->text), w_(c->w), r_(c->r), options_(c->options) {}

 protected:
  //! "path[i]".
  static std::string Index(const std::string& path, size_t i);
  //! The hint for a value that is not one of `allowed`: "did you mean 'x'?", else the list.
  static std::string OneOf(const std::string& value, const std::vector<std::string>& allowed);
  //! A DNS-1123 spelling of a bad name, for hints.
  static std::string Suggest(const std::string& name);
  //! A duration field ("10m", "1h30m"); `positive`: zero is refused too. nullopt after an
  //! error.
  std::optional<int64_t> Duration(const YAML::Node& n, const std::string& path, bool positive);

  ParseContext* c_;
  const std::string& text_;
  Workload* w_;
  Reader& r_;
  const ParseOptions& options_;
};

}  // namespace rsl::spec
