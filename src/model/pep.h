// Python packaging rules the dependency check relies on:
//  - PEP 503 name normalisation: "Scikit_Learn" and "scikit-learn" are the same project;
//  - PEP 440 versions: parsing (epochs, pre/post/dev releases, local parts like +cu118),
//    the normalised spelling, and `==` matching as pip does it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rsl::model {

//! PEP 503: runs of '-', '_', '.' become one '-', and the name is lower-cased
//! (spec::NormalizePackageName, which validation uses to find conflicting pins).
std::string NormalizeName(std::string_view name);

//! A parsed PEP 440 version.
struct Pep440Version {
  int64_t epoch = 0;
  std::vector<int64_t> release;                        //!< 1.13.1 -> {1, 13, 1}
  std::optional<std::pair<std::string, int64_t>> pre;  //!< {"a"|"b"|"rc", n}
  std::optional<int64_t> post;
  std::optional<int64_t> dev;
  std::vector<std::string> local;  //!< "+cu118" -> {"cu118"}

  //! The normalised spelling: "1!2.0rc1.post2.dev3+ubuntu.1".
  std::string ToString() const;
  //! The version without its local part.
  std::string Public() const;
};

//! Parses a version (leading 'v', any case, alternate spellings: "1.0-alpha_1" == "1.0a1").
//! nullopt when the text is not a PEP 440 version (e.g. a legacy "2.0-foo-bar").
std::optional<Pep440Version> ParsePep440(std::string_view text);

//! PEP 440 `==declared` against an installed version: equal after normalisation (trailing
//! zeros in the release do not count, 1.0 == 1.0.0); when `declared` has no local part, the
//! installed local part is ignored (torch==2.1.2 accepts 2.1.2+cu118, the reverse does not
//! hold); `declared` may end in ".*" for a prefix match on the release. Versions that do not
//! parse are compared as case-insensitive strings.
bool VersionMatches(std::string_view declared, std::string_view installed);

}  // namespace rsl::model
