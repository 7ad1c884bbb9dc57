#include "govern/findings.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <tuple>

namespace rsl::govern {

using nlohmann::json;

namespace {

constexpr char kSarifSchema[] = "https://json.schemastore.org/sarif-2.1.0.json";
constexpr char kSarifVersion[] = "2.1.0";
constexpr char kInfoUri[] = "https://github.com/rsl/rsl/blob/main/docs/govern.md";

// kubectl-style columns: padded to the widest cell, two spaces apart, no trailing spaces.
std::string Columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

json ObjectJson(const ObjectRef& o) {
  json j = {{"kind", o.kind}, {"namespace", o.namespace_}, {"name", o.name}};
  if (!o.file.empty()) j["file"] = o.file;
  if (o.line > 0) j["line"] = o.line;
  return j;
}

std::string ToLowerId(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kNote:
      return "note";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "warning";
}

std::string ObjectRef::ToString() const {
  std::string s = kind.empty() ? "" : kind + "/";
  if (!namespace_.empty()) s += namespace_ + "/";
  s += name;
  return s;
}

std::vector<std::string> Report::Ids() const {
  std::vector<std::string> ids;
  for (const auto& f : findings_) ids.push_back(f.id);
  return ids;
}

void Report::Sort() {
  std::stable_sort(findings_.begin(), findings_.end(), [](const Finding& a, const Finding& b) {
    return std::make_tuple(a.object.file, a.object.line, a.object.ToString(), a.id) <
           std::make_tuple(b.object.file, b.object.line, b.object.ToString(), b.id);
  });
}

std::string Report::RenderTable() const {
  std::vector<std::vector<std::string>> rows = {{"SEVERITY", "ID", "OBJECT", "MESSAGE", "FIX"}};
  int counts[3] = {0, 0, 0};
  for (const auto& f : findings_) {
    rows.push_back({SeverityName(f.severity), f.id, f.object.ToString(), f.message, f.fix});
    counts[static_cast<int>(f.severity)]++;
  }
  std::string out = findings_.empty() ? "" : Columns(rows);
  out += std::to_string(findings_.size()) + " finding(s): " + std::to_string(counts[2]) +
         " error, " + std::to_string(counts[1]) + " warning, " + std::to_string(counts[0]) +
         " note\n";
  return out;
}

std::string Report::RenderJson() const {
  json arr = json::array();
  int counts[3] = {0, 0, 0};
  for (const auto& f : findings_) {
    arr.push_back({{"id", f.id},
                   {"severity", SeverityName(f.severity)},
                   {"object", ObjectJson(f.object)},
                   {"message", f.message},
                   {"fix", f.fix}});
    counts[static_cast<int>(f.severity)]++;
  }
  json j = {{"tool", tool_},
            {"findings", arr},
            {"summary", {{"error", counts[2]}, {"warning", counts[1]}, {"note", counts[0]}}}};
  return j.dump(2) + "\n";
}

std::string Report::RenderSarif() const {
  json rules = json::array();
  for (const auto& r : rules_) {
    rules.push_back({{"id", r.id},
                     {"name", r.name},
                     {"shortDescription", {{"text", r.description}}},
                     {"helpUri", std::string(kInfoUri) + "#" + ToLowerId(r.id)},
                     {"defaultConfiguration", {{"level", SeverityName(r.default_severity)}}}});
  }
  json results = json::array();
  for (const auto& f : findings_) {
    json res = {
        {"ruleId", f.id}, {"level", SeverityName(f.severity)}, {"message", {{"text", f.message}}}};
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (rules_[i].id == f.id) res["ruleIndex"] = static_cast<int>(i);
    }
    json loc = json::object();
    if (!f.object.file.empty()) {
      json phys = {{"artifactLocation", {{"uri", f.object.file}}}};
      if (f.object.line > 0) phys["region"] = {{"startLine", f.object.line}};
      loc["physicalLocation"] = phys;
    }
    if (!f.object.name.empty() || !f.object.kind.empty()) {
      loc["logicalLocations"] =
          json::array({{{"name", f.object.name},
                        {"fullyQualifiedName", f.object.ToString()},
                        {"kind", f.object.kind.empty() ? "object" : ToLowerId(f.object.kind)}}});
    }
    if (!loc.empty()) res["locations"] = json::array({loc});
    if (!f.fix.empty()) res["properties"] = {{"fix", f.fix}};
    results.push_back(res);
  }
  json run = {{"tool",
               {{"driver",
                 {{"name", "seedctl " + tool_},
                  {"informationUri", kInfoUri},
                  {"version", "0.1.0"},
                  {"rules", rules}}}}},
              {"results", results}};
  json log = {{"$schema", kSarifSchema}, {"version", kSarifVersion}, {"runs", {run}}};
  return log.dump(2) + "\n";
}

int Report::ExitCode(bool strict) const {
  bool any_error = false, any_other = false;
  for (const auto& f : findings_) {
    if (f.severity == Severity::kError)
      any_error = true;
    else
      any_other = true;
  }
  if (any_error) return kExitErrors;
  if (any_other && strict) return kExitWarnings;
  return kExitClean;
}

}  // namespace rsl::govern
