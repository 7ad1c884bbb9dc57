// The GPU capability catalog (SPEC.md "resources"): capability names that `gpu.capability`
// may request, each with a score per GPU model (tensor_core: A100=100, A10=80, ...). A model
// has a capability when it has a score > 0 for it. The built-in catalog can be extended by an
// operator's YAML or JSON file:
//
//   capabilities:
//     - name: tensor_core            # an existing name: these scores are merged in
//       scores: {MyGPU-X: 90}
//     - name: fast_interconnect      # a new name
//       description: 400G+ fabric between nodes
//       scores: {H100: 100}
//
// Placement (sched/) uses the scores only to break ties; it prefers the least-loaded node
// that satisfies every requested capability (seed 000 §5.3).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::spec {

struct Capability {
  std::string name;
  std::string description;
  std::map<std::string, int> scores;  //!< GPU model (e.g. "A100") -> 1..100
};

//! An immutable-after-build set of capabilities. Copyable; not synchronised (build it once,
//! then share it read-only between threads).
class CapabilityCatalog {
 public:
  //! The built-in catalog (A100, A800, H100, A10, L4, V100, T4).
  static const CapabilityCatalog& BuiltIn();
  //! Built-in plus the entries of `text` (YAML or JSON, format above). `file` names the source
  //! in errors. Errors: SPEC_INVALID with position.
  static Result<CapabilityCatalog> Parse(const std::string& text, const std::string& file);
  //! Parse() of a file's contents (a missing file is IO_ERROR).
  static Result<CapabilityCatalog> Load(const std::string& path);

  //! Adds a capability, or merges scores (and a non-empty description) into an existing one.
  void Add(const Capability& capability);
  const Capability* Find(const std::string& name) const;
  bool Has(const std::string& name) const { return Find(name) != nullptr; }
  //! Sorted capability names.
  std::vector<std::string> Names() const;
  //! Sorted GPU model names that appear in any score.
  std::vector<std::string> Models() const;
  //! Score of `model` for `capability` (0 when it lacks it or either is unknown). Model names
  //! compare case-insensitively ("a100" == "A100").
  int Score(const std::string& capability, const std::string& model) const;
  //! Every capability with a score > 0 for `model`, sorted.
  std::vector<std::string> CapabilitiesOf(const std::string& model) const;

 private:
  std::map<std::string, Capability> by_name_;
};

}  // namespace rsl::spec
