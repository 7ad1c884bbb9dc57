#include "govern/k8s_objects.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

json ScalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "null" || s == "~" || s.empty()) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  // Integers and floats as YAML 1.2's core schema reads them; anything else is a string.
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (end && *end == '\0' && errno == 0 &&
      (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+')) {
    return static_cast<int64_t>(i);
  }
  double d = std::strtod(s.c_str(), &end);
  bool numeric_start =
      std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+' || s[0] == '.';
  if (end && *end == '\0' && numeric_start && std::isfinite(d)) return d;
  return s;
}

json YamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ScalarToJson(n);
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& c : n) arr.push_back(YamlToJson(c));
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : n) obj[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return obj;
    }
  }
  return nullptr;
}

bool IsListKind(const json& o) {
  if (!o.is_object() || !o.contains("items") || !o["items"].is_array()) return false;
  std::string kind = o.value("kind", "");
  return kind.empty() || EndsWith(kind, "List");
}

void Append(const json& doc, const std::string& file, int line, std::vector<K8sObject>* out) {
  if (!doc.is_object()) return;
  if (IsListKind(doc)) {
    for (const auto& item : doc["items"]) Append(item, file, line, out);
    return;
  }
  out->push_back(K8sObject{doc, file, line});
}

}  // namespace

std::string K8sObject::kind() const {
  return obj.is_object() && obj.contains("kind") && obj["kind"].is_string()
             ? obj["kind"].get<std::string>()
             : "";
}
std::string K8sObject::api_version() const {
  return obj.is_object() && obj.contains("apiVersion") && obj["apiVersion"].is_string()
             ? obj["apiVersion"].get<std::string>()
             : "";
}
std::string K8sObject::name() const {
  const json* md = obj.contains("metadata") ? &obj["metadata"] : nullptr;
  if (!md || !md->is_object()) return "";
  if (md->contains("name") && (*md)["name"].is_string()) return (*md)["name"];
  if (md->contains("generateName") && (*md)["generateName"].is_string())
    return (*md)["generateName"];
  return "";
}
std::string K8sObject::namespace_() const {
  const json* md = obj.contains("metadata") ? &obj["metadata"] : nullptr;
  if (!md || !md->is_object() || !md->contains("namespace") || !(*md)["namespace"].is_string())
    return "";
  return (*md)["namespace"];
}
ObjectRef K8sObject::Ref() const { return ObjectRef{kind(), namespace_(), name(), file, line}; }

Result<std::vector<K8sObject>> ParseObjects(const std::string& text, const std::string& file) {
  std::vector<K8sObject> out;
  std::string_view trimmed = Trim(text);
  if (!trimmed.empty() && (trimmed[0] == '{' || trimmed[0] == '[')) {
    json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      // Fall through to YAML, which reports a position (JSON is YAML's subset in practice).
    } else {
      if (doc.is_array()) {
        for (const auto& d : doc) Append(d, file, 0, &out);
      } else {
        Append(doc, file, 0, &out);
      }
      return out;
    }
  }
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    for (const auto& d : docs) {
      if (!d.IsDefined() || d.IsNull()) continue;
      int line = d.Mark().line >= 0 ? d.Mark().line + 1 : 0;
      json j = YamlToJson(d);
      if (IsListKind(j) && d["items"].IsSequence()) {
        size_t i = 0;
        for (const auto& item : d["items"]) {
          Append(j["items"][i++], file, item.Mark().line + 1, &out);
        }
        continue;
      }
      Append(j, file, line, &out);
    }
  } catch (const YAML::Exception& e) {
    return Error(codes::kSpecParseError, e.msg)
        .At(SourcePos{file, e.mark.line + 1, e.mark.column + 1})
        .Hint("fix the YAML/JSON syntax");
  }
  return out;
}

Result<std::vector<K8sObject>> LoadObjects(const std::string& path) {
  std::vector<std::string> files;
  if (IsDirectory(path)) {
    std::error_code ec;
    namespace fs = std::filesystem;
    for (auto it = fs::recursive_directory_iterator(path, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::string leaf = it->path().filename().string();
      if (!leaf.empty() && leaf[0] == '.') {  // .git, .github, editor files
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      std::string p = it->path().string();
      if (it->is_regular_file() &&
          (EndsWith(p, ".yaml") || EndsWith(p, ".yml") || EndsWith(p, ".json"))) {
        files.push_back(p);
      }
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<K8sObject> all;
  for (const auto& f : files) {
    Result<std::string> text = ReadFile(f);
    if (!text.ok()) return text.error();
    Result<std::vector<K8sObject>> objs = ParseObjects(*text, f);
    if (!objs.ok()) return objs.error();
    for (auto& o : *objs) all.push_back(std::move(o));
  }
  return all;
}

Result<long double> ParseQuantity(const json& value) {
  if (value.is_number()) return static_cast<long double>(value.get<double>());
  if (value.is_string()) return ParseQuantity(value.get<std::string>());
  return Error(codes::kInvalidArgument, "quantity must be a number or a string")
      .Value(value.dump())
      .Hint("write e.g. 500m, 2, 1.5, 512Mi or 2Gi");
}

Result<long double> ParseQuantity(const std::string& raw) {
  std::string text(Trim(raw));
  auto bad = [&]() {
    return Error(codes::kInvalidArgument, "invalid quantity " + Quote(raw))
        .Value(raw)
        .Hint("write e.g. 500m, 2, 1.5, 1e3, 512Mi or 2Gi");
  };
  if (text.empty()) return bad();
  size_t i = 0;
  if (text[i] == '+' || text[i] == '-') ++i;
  size_t digits_start = i;
  bool seen_digit = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    seen_digit = seen_digit || text[i] != '.';
    ++i;
  }
  if (!seen_digit) return bad();
  std::string number = text.substr(0, i);
  if (std::count(number.begin() + digits_start, number.end(), '.') > 1) return bad();
  std::string suffix = text.substr(i);
  long double mult = 1;
  // "e3"/"E3" is a decimal exponent; "E" alone is exa.
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E') &&
      (std::isdigit(static_cast<unsigned char>(suffix[1])) || suffix[1] == '-' ||
       suffix[1] == '+')) {
    std::string exp = suffix.substr(1);
    char* end = nullptr;
    long e = std::strtol(exp.c_str(), &end, 10);
    if (!end || *end != '\0' || e > 30 || e < -30) return bad();
    mult = std::pow(10.0L, static_cast<long double>(e));
  } else if (!suffix.empty()) {
    static const std::pair<const char*, long double> kSuffixes[] = {{"Ki", 1024.0L},
                                                                    {"Mi", 1048576.0L},
                                                                    {"Gi", 1073741824.0L},
                                                                    {"Ti", 1099511627776.0L},
                                                                    {"Pi", 1125899906842624.0L},
                                                                    {"Ei", 1152921504606846976.0L},
                                                                    {"n", 1e-9L},
                                                                    {"u", 1e-6L},
                                                                    {"m", 1e-3L},
                                                                    {"k", 1e3L},
                                                                    {"M", 1e6L},
                                                                    {"G", 1e9L},
                                                                    {"T", 1e12L},
                                                                    {"P", 1e15L},
                                                                    {"E", 1e18L}};
    bool found = false;
    for (const auto& [s, m] : kSuffixes) {
      if (suffix == s) {
        mult = m;
        found = true;
        break;
      }
    }
    if (!found) return bad();
  }
  long double v = std::strtold(number.c_str(), nullptr);
  return v * mult;
}

bool QuantityEqual(long double a, long double b) {
  long double scale = std::max({std::fabs(a), std::fabs(b), 1e-12L});
  return std::fabs(a - b) <= 1e-9L * scale;
}

const json* PodSpecOf(const json& obj) {
  if (!obj.is_object()) return nullptr;
  std::string kind = obj.value("kind", "");
  auto at = [](const json& j, std::initializer_list<const char*> path) -> const json* {
    const json* cur = &j;
    for (const char* p : path) {
      if (!cur->is_object() || !cur->contains(p)) return nullptr;
      cur = &(*cur)[p];
    }
    return cur->is_object() ? cur : nullptr;
  };
  if (kind == "Pod") return at(obj, {"spec"});
  if (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" ||
      kind == "ReplicaSet" || kind == "ReplicationController" || kind == "Job" ||
      kind == "PodTemplate") {
    return kind == "PodTemplate" ? at(obj, {"template", "spec"})
                                 : at(obj, {"spec", "template", "spec"});
  }
  if (kind == "CronJob") return at(obj, {"spec", "jobTemplate", "spec", "template", "spec"});
  return nullptr;
}

std::string PodSpecPathOf(const json& obj) {
  std::string kind = obj.is_object() ? obj.value("kind", "") : "";
  if (kind == "Pod") return "spec";
  if (kind == "PodTemplate") return "template.spec";
  if (kind == "CronJob") return "spec.jobTemplate.spec.template.spec";
  return "spec.template.spec";
}

std::string FormatMemory(long double bytes) {
  static const char* kUnits[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  int u = 0;
  long double v = bytes;
  while (std::fabs(v) >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  if (std::fabs(v - std::round(v)) < 1e-9L) {
    std::snprintf(buf, sizeof buf, "%.0Lf%s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.2Lf%s", v, kUnits[u]);
  }
  return buf;
}

std::string FormatCpu(long double cores) {
  char buf[64];
  long double millis = cores * 1000;
  if (std::fabs(cores - std::round(cores)) < 1e-9L) {
    std::snprintf(buf, sizeof buf, "%.0Lf", cores);
  } else {
    std::snprintf(buf, sizeof buf, "%.0Lfm", millis);
  }
  return buf;
}

}  // namespace rsl::govern
