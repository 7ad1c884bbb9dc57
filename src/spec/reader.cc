#include "spec/reader.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "base/codes.h"
#include "base/strings.h"
#include "spec/names.h"

namespace rsl::spec {

namespace {
// Long values are cut in messages so one error stays one line.
constexpr size_t kMaxShownChars = 60;
}  // namespace

SourcePos Reader::Pos(const YAML::Mark& mark) const {
  SourcePos p;
  p.file = file_;
  if (mark.line >= 0) {
    p.line = mark.line + 1;
    p.column = mark.column + 1;
  }
  return p;
}

SourcePos Reader::Pos(const YAML::Node& node) const { return Pos(node.Mark()); }

void Reader::Record(const std::string& path, const YAML::Node& node) {
  if (++visits_ == kMaxVisits + 1) {
    FailAt(
        Pos(node), path,
        "the spec expands to more than " + std::to_string(kMaxVisits) + " values (YAML aliases?)",
        "write the workload without alias expansion");
  }
  if (exhausted()) return;
  (*positions_)[path] = Pos(node);
}

Error& Reader::FailAt(SourcePos pos, const std::string& path, const std::string& message,
                      const std::string& hint, const std::string& code) {
  Error e(!code.empty()            ? code
          : !default_code_.empty() ? default_code_
                                   : codes::kSpecInvalid,
          message);
  e.pos = std::move(pos);
  e.path = path;
  e.hint = hint;
  errors_->push_back(std::move(e));
  return errors_->back();
}

Error& Reader::Fail(const YAML::Node& node, const std::string& path, const std::string& message,
                    const std::string& hint, const std::string& code) {
  Error& e = FailAt(Pos(node), path, message, hint, code);
  if (node.IsScalar()) e.value = node.Scalar();
  return e;
}

std::string Reader::Shown(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  std::string s = node.Scalar();
  if (s.size() > kMaxShownChars) s = s.substr(0, kMaxShownChars) + "...";
  return Quote(s);
}

bool Reader::Map(const YAML::Node& node, const std::string& path,
                 const std::vector<std::string>& allowed) {
  Record(path, node);
  if (!node.IsMap()) {
    Fail(node, path, "must be a mapping, got " + Shown(node),
         "write `key: value` lines indented under it");
    return false;
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    bool known = false;
    for (const auto& a : allowed) known = known || a == key;
    if (known) continue;
    std::string child = path.empty() ? key : path + "." + key;
    std::string close = DidYouMean(key, allowed);
    Fail(kv.first, child, "unknown field " + Quote(key),
         close.empty() ? "allowed here: " + Join(allowed, ", ") : "did you mean '" + close + "'?");
  }
  return true;
}

bool Reader::Seq(const YAML::Node& node, const std::string& path, const std::string& example) {
  Record(path, node);
  if (node.IsSequence()) return true;
  Fail(node, path, "must be a list, got " + Shown(node), example);
  return false;
}

// Both scan the map by hand: yaml-cpp's map[key] converts every key it passes through a
// stringstream, which was a quarter of parsing a 10,000-step workload (callgrind).
bool Reader::Has(const YAML::Node& map, const char* key) {
  if (!map.IsMap()) return false;
  for (const auto& kv : map) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) return !kv.second.IsNull();
  }
  return false;
}

Reader::Keys::Keys(const YAML::Node& map) {
  if (!map.IsMap()) return;
  for (const auto& kv : map) {
    if (kv.first.IsScalar() && !kv.second.IsNull()) present_.push_back(&kv.first.Scalar());
  }
}

bool Reader::Keys::Has(const char* key) const {
  for (const std::string* k : present_) {
    if (*k == key) return true;
  }
  return false;
}

void Reader::Missing(const YAML::Node& map, const std::string& path, const std::string& hint) {
  size_t dot = path.rfind('.');
  std::string field = dot == std::string::npos ? path : path.substr(dot + 1);
  // A misspelled key (`metdata:`) is reported as an unknown field with "did you mean";
  // saying the real one is missing as well would only repeat it.
  if (map.IsMap()) {
    for (const auto& kv : map) {
      if (kv.first.IsScalar() && DidYouMean(kv.first.Scalar(), {field}) == field &&
          kv.first.Scalar() != field)
        return;
    }
  }
  FailAt(Pos(map), path, "missing required field " + Quote(field), hint);
}

std::optional<std::string> Reader::String(const YAML::Node& node, const std::string& path) {
  Record(path, node);
  if (!node.IsScalar()) {
    Fail(node, path, "must be a string, got " + Shown(node), "quote the value");
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<int64_t> Reader::Int(const YAML::Node& node, const std::string& path, int64_t min,
                                   int64_t max) {
  Record(path, node);
  std::string range = std::to_string(min) + ".." + std::to_string(max);
  if (!node.IsScalar()) {
    Fail(node, path, "must be an integer, got " + Shown(node), "write a number in " + range);
    return std::nullopt;
  }
  const std::string text(Trim(node.Scalar()));
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
    Fail(node, path, "must be an integer, got " + Shown(node), "write a number in " + range);
    return std::nullopt;
  }
  if (v < min || v > max) {
    Fail(node, path, "must be in " + range + ", got " + text,
         "use a whole number from " + std::to_string(min) + " to " + std::to_string(max));
    return std::nullopt;
  }
  return v;
}

std::optional<double> Reader::Number(const YAML::Node& node, const std::string& path) {
  Record(path, node);
  if (node.IsScalar()) {
    const std::string text(Trim(node.Scalar()));
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    bool plain = !text.empty() && text.find_first_of("xXnN") == std::string::npos;
    if (plain && end == text.c_str() + text.size() && std::isfinite(v)) return v;
  }
  Fail(node, path, "must be a number, got " + Shown(node), "e.g. 99.9");
  return std::nullopt;
}

std::optional<bool> Reader::Bool(const YAML::Node& node, const std::string& path) {
  Record(path, node);
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  Fail(node, path, "must be true or false, got " + Shown(node), "write true or false, unquoted");
  return std::nullopt;
}

std::optional<std::vector<std::string>> Reader::StringList(const YAML::Node& node,
                                                           const std::string& path) {
  if (!Seq(node, path, "write a list: [\"a\", \"b\"]")) return std::nullopt;
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < node.size() && !exhausted(); ++i) {
    auto s = String(node[i], path + "[" + std::to_string(i) + "]");
    if (s)
      out.push_back(*s);
    else
      ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::map<std::string, std::string>> Reader::StringMap(const YAML::Node& node,
                                                                    const std::string& path) {
  Record(path, node);
  if (!node.IsMap()) {
    Fail(node, path, "must be a mapping of strings, got " + Shown(node), "e.g. {team: risk}");
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  bool ok = true;
  for (const auto& kv : node) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    auto v = String(kv.second, path + "." + key);
    if (v)
      out[key] = *v;
    else
      ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace rsl::spec
