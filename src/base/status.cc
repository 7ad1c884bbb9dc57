#include "base/status.h"

#include <algorithm>
#include <cstring>

namespace rsl {

std::string SourcePos::ToString() const {
  if (file.empty() && line == 0) return "";
  std::string s = file;
  if (line > 0) {
    s += ":" + std::to_string(line);
    if (column > 0) s += ":" + std::to_string(column);
  }
  return s;
}

std::string Error::ToString() const {
  std::string s;
  std::string where = pos.ToString();
  if (!where.empty()) s += where + ": ";
  s += code;
  if (!path.empty()) s += " " + path;
  s += ": " + message;
  if (!hint.empty()) s += " (" + hint + ")";
  return s;
}

const std::string& Status::code() const {
  static const std::string kOk = "OK";
  return ok() ? kOk : error_->code;
}

void SortByPosition(Errors* errors) {
  std::stable_sort(errors->begin(), errors->end(), [](const Error& a, const Error& b) {
    if (a.pos.file != b.pos.file) return a.pos.file < b.pos.file;
    if (a.pos.line != b.pos.line) return a.pos.line < b.pos.line;
    return a.pos.column < b.pos.column;
  });
}

Error OsError(const std::string& code, const std::string& context, const std::string& path,
              int errnum) {
  Error e(code, context + " " + path + ": " + std::strerror(errnum));
  e.value = path;
  return e;
}

}  // namespace rsl
