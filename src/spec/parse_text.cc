#include "spec/parse_text.h"

#include <string_view>
#include <vector>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::spec {

std::optional<Error> SeedAtomicMistake(const std::string& text, const std::string& file) {
  std::vector<std::string> lines = Split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || line.compare(indent, 7, "atomic:") != 0) continue;
    for (size_t j = i + 1; j < lines.size(); ++j) {
      size_t ind = lines[j].find_first_not_of(' ');
      if (ind == std::string::npos || lines[j][ind] == '#') continue;
      if (ind == indent && lines[j].compare(ind, 2, "- ") == 0) {
        Error e(codes::kSpecParseError,
                "`atomic:` is followed by list items at the same indentation; a YAML mapping "
                "cannot also be a list");
        e.path = "spec.pipeline";
        e.pos.file = file;
        e.pos.line = static_cast<int>(i) + 1;
        e.pos.column = static_cast<int>(indent) + 1;
        e.value = std::string(Trim(line));
        e.hint =
            "put the list under `steps:` (pipeline: {atomic: true, steps: [...]}), or drop "
            "`atomic:` (a plain list is atomic)";
        return e;
      }
      break;
    }
  }
  return std::nullopt;
}

size_t FirstInvalidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return i;
    }
    // Overlong forms, surrogates and code points past U+10FFFF.
    unsigned char c1 = len > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
    if ((len == 2 && c < 0xC2) || (len == 3 && c == 0xE0 && c1 < 0xA0) ||
        (len == 3 && c == 0xED && c1 >= 0xA0) || (len == 4 && c == 0xF0 && c1 < 0x90) ||
        (len == 4 && (c > 0xF4 || (c == 0xF4 && c1 >= 0x90)))) {
      return i;
    }
    i += len;
  }
  return std::string::npos;
}

int SecondDocumentLine(const std::string& text) {
  bool content = false;
  int line = 0;
  for (const auto& l : Split(text, '\n')) {
    ++line;
    bool marker = l == "---" || l == "---\r" || StartsWith(l, "--- ");
    if (marker && content) return line;
    std::string_view t = Trim(l);
    if (!marker && !t.empty() && t.front() != '#' && t.front() != '%') content = true;
  }
  return 0;
}

std::optional<Error> TabIndentError(const std::string& text, int line, const std::string& file) {
  std::vector<std::string> lines = Split(text, '\n');
  for (int l : {line, line - 1}) {
    if (l < 1 || l > static_cast<int>(lines.size())) continue;
    const std::string& s = lines[size_t(l - 1)];
    size_t indent = s.find_first_not_of(" \t");
    size_t tab = s.find('\t');
    if (tab == std::string::npos || (indent != std::string::npos && tab > indent)) continue;
    Error e(codes::kSpecParseError,
            "YAML syntax error: a tab in the indentation (YAML indents with spaces only)");
    e.pos = SourcePos{file, l, static_cast<int>(tab) + 1};
    e.hint = "replace the tab with spaces";
    return e;
  }
  return std::nullopt;
}

Error SyntaxError(const YAML::Exception& ex, const std::string& file, const std::string& text) {
  if (ex.mark.line >= 0) {
    if (auto tab = TabIndentError(text, ex.mark.line + 1, file)) return *tab;
  }
  Error e(codes::kSpecParseError, "YAML syntax error: " + ex.msg);
  e.pos.file = file;
  if (ex.mark.line >= 0) {
    e.pos.line = ex.mark.line + 1;
    e.pos.column = ex.mark.column + 1;
  }
  e.hint = "check indentation, colons and quotes around this place";
  return e;
}

}  // namespace rsl::spec
