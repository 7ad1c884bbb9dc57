#include "spec/source_map.h"

namespace rsl::spec {

namespace {

// Start offset of 1-based `line`, or npos.
size_t LineStart(const std::string& text, int line) {
  size_t at = 0;
  for (int l = 1; l < line; ++l) {
    at = text.find('\n', at);
    if (at == std::string::npos) return at;
    ++at;
  }
  return at;
}

}  // namespace

SourcePos MapInnerPos(const std::string& text, const SourcePos& value_pos, int inner_line,
                      int inner_column) {
  SourcePos out = value_pos;
  if (!value_pos.known() || inner_line < 1 || inner_column < 1) return out;
  size_t start = LineStart(text, value_pos.line);
  if (start == std::string::npos) return out;
  size_t at = start + static_cast<size_t>(value_pos.column - 1);
  char first = at < text.size() ? text[at] : '\0';
  if (first == '|' || first == '>') {
    // The block's indentation is set by its first line; deeper lines keep their extra
    // spaces in the value, so inner columns already count them.
    size_t content = LineStart(text, value_pos.line + 1);
    if (content == std::string::npos) return out;
    int indent = 0;
    while (content + indent < text.size() && text[content + indent] == ' ') ++indent;
    out.line = value_pos.line + inner_line;
    out.column = indent + inner_column;
    return out;
  }
  if (inner_line != 1) {
    out.line = value_pos.line + inner_line - 1;
    out.column = inner_column;
    return out;
  }
  out.column = value_pos.column + (first == '"' || first == '\'' ? 1 : 0) + inner_column - 1;
  return out;
}

}  // namespace rsl::spec
