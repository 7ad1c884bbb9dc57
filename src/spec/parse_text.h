// Checks of the spec text before and around YAML parsing: invalid UTF-8, a second document,
// the seed's `atomic:` list mistake, and yaml-cpp's exceptions as errors with positions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "base/status.h"

namespace rsl::spec {

//! The seed writes `atomic: true` and then the steps as list items at the same indentation,
//! which YAML cannot parse (a mapping cannot also be a list). Returns that line's error if the
//! text has this shape.
std::optional<Error> SeedAtomicMistake(const std::string& text, const std::string& file);
//! YAML text must be Unicode; yaml-cpp passes invalid UTF-8 through, and it could not be
//! rendered as JSON later. Returns the byte offset of the first invalid sequence, or npos.
size_t FirstInvalidUtf8(const std::string& s);
//! The 1-based line of a `---` that starts a second document (one after content), or 0.
int SecondDocumentLine(const std::string& text);
//! A yaml-cpp exception as a SPEC_PARSE_ERROR at its mark, with a hint; a tab in the
//! indentation there is named as the cause (TabIndentError).
Error SyntaxError(const YAML::Exception& ex, const std::string& file, const std::string& text);
//! yaml-cpp reports a tab in indentation as "illegal tab" or "illegal block entry" or worse.
//! If the 1-based `line` of `text` (or the line before it) is indented with a tab, the error
//! to report instead: SPEC_PARSE_ERROR at the tab, saying so.
std::optional<Error> TabIndentError(const std::string& text, int line, const std::string& file);

}  // namespace rsl::spec
