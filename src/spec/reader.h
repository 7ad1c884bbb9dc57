// Typed access to yaml-cpp nodes that records positions and collects errors instead of
// throwing. parse.cc builds the Workload with it; the settings files (the controller's
// --config, seedctl's contexts) are read with it too, under their own error code.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "base/status.h"

namespace rsl::spec {

class Reader {
 public:
  //! `positions` and `errors` must outlive the reader.
  Reader(std::string file, std::map<std::string, SourcePos>* positions, Errors* errors)
      : file_(std::move(file)), positions_(positions), errors_(errors) {}

  const std::string& file() const { return file_; }
  //! The code of errors that name none (SPEC_INVALID until this is called).
  void UseCode(std::string code) { default_code_ = std::move(code); }
  //! 1-based position of a node (yaml-cpp marks are 0-based).
  SourcePos Pos(const YAML::Node& node) const;
  SourcePos Pos(const YAML::Mark& mark) const;
  //! Remembers where `path`'s value is.
  void Record(const std::string& path, const YAML::Node& node);

  //! Adds an error (code SPEC_INVALID unless given) at the node's position.
  Error& Fail(const YAML::Node& node, const std::string& path, const std::string& message,
              const std::string& hint = "", const std::string& code = "");
  Error& FailAt(SourcePos pos, const std::string& path, const std::string& message,
                const std::string& hint = "", const std::string& code = "");

  //! True if `node` is a map; otherwise reports "must be a mapping". Unknown keys are
  //! reported with a "did you mean" hint. Records the map's position under `path`.
  bool Map(const YAML::Node& node, const std::string& path,
           const std::vector<std::string>& allowed);
  //! True if a sequence (reports otherwise, with `example` as the hint).
  bool Seq(const YAML::Node& node, const std::string& path, const std::string& example);

  //! A child that is present and not null.
  static bool Has(const YAML::Node& map, const char* key);
  //! Has() for a mapping asked about many keys: its keys are read once.
  class Keys {
   public:
    explicit Keys(const YAML::Node& map);
    bool Has(const char* key) const;

   private:
    std::vector<const std::string*> present_;  // point into the document's nodes
  };
  //! Reports a missing required field at the map's position.
  void Missing(const YAML::Node& map, const std::string& path, const std::string& hint);

  //! Scalars. Quoted numbers ("1") are accepted wherever numbers are. Each records the path
  //! and reports (returning nullopt) a value of the wrong kind.
  std::optional<std::string> String(const YAML::Node& node, const std::string& path);
  std::optional<int64_t> Int(const YAML::Node& node, const std::string& path, int64_t min,
                             int64_t max);
  std::optional<double> Number(const YAML::Node& node, const std::string& path);
  std::optional<bool> Bool(const YAML::Node& node, const std::string& path);
  std::optional<std::vector<std::string>> StringList(const YAML::Node& node,
                                                     const std::string& path);
  std::optional<std::map<std::string, std::string>> StringMap(const YAML::Node& node,
                                                              const std::string& path);

  //! True once more than kMaxVisits values were read (YAML aliases can make a small file
  //! expand to a huge tree); loops over lists stop then, and one error says why.
  bool exhausted() const { return visits_ > kMaxVisits; }
  static constexpr size_t kMaxVisits = 4'000'000;

  //! The node's text for messages (scalars as written; collections as "mapping"/"list").
  static std::string Shown(const YAML::Node& node);

 private:
  std::string file_;
  std::map<std::string, SourcePos>* positions_;
  Errors* errors_;
  std::string default_code_;
  size_t visits_ = 0;
};

}  // namespace rsl::spec
