#include "spec/parse_fields.h"

#include "base/strings.h"
#include "spec/names.h"
#include "spec/quantity.h"

namespace rsl::spec {

std::string FieldParser::Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string FieldParser::OneOf(const std::string& value, const std::vector<std::string>& allowed) {
  std::string close = DidYouMean(value, allowed);
  if (!close.empty()) return "did you mean '" + close + "'?";
  return "one of: " + Join(allowed, ", ");
}

std::string FieldParser::Suggest(const std::string& name) {
  std::string out;
  for (char c : ToLower(name)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (ok)
      out.push_back(c);
    else if (!out.empty() && out.back() != '-')
      out.push_back('-');
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > kMaxLabelLength) out.resize(kMaxLabelLength);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "my-workload" : out;
}

std::optional<int64_t> FieldParser::Duration(const YAML::Node& n, const std::string& path,
                                             bool positive) {
  auto text = r_.String(n, path);
  if (!text) return std::nullopt;
  auto ms = ParseDurationMs(*text);
  if (!ms.ok()) {
    r_.Fail(n, path, ms.error().message, ms.error().hint);
    return std::nullopt;
  }
  if (positive && *ms <= 0) {
    r_.Fail(n, path, "duration must be greater than zero", "e.g. \"10m\"");
    return std::nullopt;
  }
  return *ms;
}

}  // namespace rsl::spec
