// How a validation reads to its users: percentages, durations and timestamps as messages
// state them, and the report as JSON (`seedctl data validate -o json`, the API) and as text.
#include "data/quality.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>

#include "base/strings.h"

namespace rsl::data {

std::pair<std::string, std::string> FormatPercents(double measured, double threshold) {
  auto fmt = [](double v, int d) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", d, v);
    return std::string(buf);
  };
  // Truncate (never round) the measured value, so a failing value never prints as the
  // threshold; use as many decimals as the threshold needs, and more until they differ.
  auto trunc = [](double v, int d) {
    double scale = std::pow(10.0, d);
    return std::floor(v * scale + 1e-7) / scale;
  };
  int d = 2;
  while (d < 6 && std::fabs(trunc(threshold, d) - threshold) > 1e-9) d++;
  while (d < 8 && measured != threshold && fmt(trunc(measured, d), d) == fmt(threshold, d)) d++;
  return {fmt(trunc(measured, d), d), fmt(threshold, d)};
}

std::string FormatDurationMs(int64_t ms) {
  if (ms < 0) return "-" + FormatDurationMs(-ms);
  if (ms < 60000) {
    char buf[32];
    if (ms % 1000 == 0)
      std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(ms / 1000));
    else
      std::snprintf(buf, sizeof buf, "%.3gs", ms / 1000.0);
    return buf;
  }
  int64_t s = ms / 1000;
  int64_t d = s / 86400, h = (s % 86400) / 3600, m = (s % 3600) / 60, sec = s % 60;
  std::string out;
  if (d) out += std::to_string(d) + "d";
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (sec) out += std::to_string(sec) + "s";
  return out;
}

std::string FormatTimestampMicros(int64_t micros) {
  int64_t secs = micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
  int64_t frac = micros - secs * 1000000;
  std::string out = FormatUtc(secs, "%Y-%m-%dT%H:%M:%S");
  if (frac != 0) {
    char f[16];
    std::snprintf(f, sizeof f, ".%06lld", static_cast<long long>(frac));
    out += f;
    while (out.back() == '0') out.pop_back();
  }
  return out + "Z";
}

nlohmann::json DataDescriptor::ToJson() const {
  return {{"uri", uri},
          {"schema", schema},
          {"version", version},
          {"checksum", checksum},
          {"schemaFingerprint", schema_fingerprint},
          {"format", format},
          {"files", files},
          {"rows", rows},
          {"bytes", bytes}};
}

nlohmann::json ValidationReport::ToJson() const {
  nlohmann::json j;
  j["uri"] = uri;
  j["format"] = format;
  j["files"] = files;
  j["rows"] = rows;
  j["bytes"] = bytes;
  j["seconds"] = seconds;
  j["ok"] = status.ok();
  if (!status.ok()) {
    j["error"] = {{"code", status.error().code},
                  {"field", status.error().path},
                  {"message", status.error().message}};
  }
  j["checks"] = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json cj = {{"name", c.name}, {"state", c.state}, {"message", c.message}};
    if (!c.code.empty()) cj["code"] = c.code;
    j["checks"].push_back(cj);
  }
  j["fields"] = nlohmann::json::array();
  for (const auto& f : fields) {
    nlohmann::json fj = {
        {"name", f.name}, {"type", f.type}, {"nulls", f.nulls}, {"values", f.values}};
    if (f.min) fj["min"] = f.min_int ? nlohmann::json(*f.min_int) : nlohmann::json(*f.min);
    if (f.max) fj["max"] = f.max_int ? nlohmann::json(*f.max_int) : nlohmann::json(*f.max);
    if (f.min_len) fj["minLength"] = *f.min_len;
    if (f.max_len) fj["maxLength"] = *f.max_len;
    if (f.violations) {
      fj["violations"] = f.violations;
      fj["firstViolation"] = f.first_violation;
    }
    j["fields"].push_back(fj);
  }
  if (!unique_key.empty()) j["uniqueKey"] = unique_key;
  if (distinct_keys) j["distinctKeys"] = *distinct_keys;
  if (newest_micros) {
    j["newest"] = FormatTimestampMicros(*newest_micros);
    j["newestFrom"] = freshness_from;
  }
  if (!notes.empty()) j["notes"] = notes;
  if (!descriptor.uri.empty()) j["descriptor"] = descriptor.ToJson();
  return j;
}

std::string ValidationReport::ToText() const {
  std::string out;
  for (const auto& c : checks) {
    out += c.name + ": " + c.state;
    if (!c.message.empty()) out += ": " + c.message;
    out += "\n";
  }
  out += status.ok() ? "OK" : status.error().code;
  out += "\n";
  return out;
}

}  // namespace rsl::data
