#include "spec/quantity.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::spec {

namespace {

constexpr int64_t kMsPerSecond = 1000;
constexpr int64_t kMsPerMinute = 60 * kMsPerSecond;
constexpr int64_t kMsPerHour = 60 * kMsPerMinute;
constexpr int64_t kMsPerDay = 24 * kMsPerHour;
// Anything past int64 is an error, not a wrap-around; doubles are exact to 2^53.
constexpr double kMaxExact = 9.0e18;

struct Suffix {
  const char* text;
  double factor;
};
// Longest first so "Mi" wins over "M".
constexpr Suffix kByteSuffixes[] = {
    {"Ki", 1024.0},
    {"Mi", 1048576.0},
    {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0},
    {"Pi", 1125899906842624.0},
    {"Ei", 1152921504606846976.0},
    {"k", 1e3},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
};

// A plain decimal number (digits, optional fraction, optional exponent); no sign, no hex,
// no inf/nan (strtod would accept those).
bool ParseDecimal(std::string_view s, double* out) {
  if (s.empty()) return false;
  size_t i = 0;
  bool digits = false;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    ++i;
    digits = true;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      digits = true;
    }
  }
  if (!digits) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    bool exp_digits = false;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      exp_digits = true;
    }
    if (!exp_digits) return false;
  }
  if (i != s.size()) return false;
  *out = std::strtod(std::string(s).c_str(), nullptr);
  return std::isfinite(*out);
}

Error Bad(const std::string& what, const std::string& text, const std::string& hint) {
  Error e(codes::kSpecInvalid, "invalid " + what + " " + Quote(text));
  e.value = text;
  e.hint = hint;
  return e;
}

}  // namespace

Result<int64_t> ParseCpuMillis(const std::string& raw) {
  std::string text(Trim(raw));
  const std::string hint = "write cores (8, \"2.5\") or millicores (\"500m\")";
  double value = 0;
  if (EndsWith(text, "m")) {
    if (!ParseDecimal(std::string_view(text).substr(0, text.size() - 1), &value) ||
        value != std::floor(value)) {
      return Bad("cpu", raw, hint);
    }
  } else {
    if (!ParseDecimal(text, &value)) return Bad("cpu", raw, hint);
    value *= 1000;
  }
  if (value > kMaxExact) return Bad("cpu", raw, "the value is too large");
  if (value != std::floor(value)) {
    return Bad("cpu", raw, "cpu is counted in millicores: at most 3 decimals");
  }
  return static_cast<int64_t>(value);
}

Result<int64_t> ParseBytes(const std::string& raw) {
  std::string text(Trim(raw));
  const std::string hint = "write bytes or a quantity such as \"512Mi\", \"32Gi\", \"1G\"";
  double factor = 1;
  std::string_view number = text;
  for (const auto& s : kByteSuffixes) {
    if (EndsWith(text, s.text)) {
      factor = s.factor;
      number = std::string_view(text).substr(0, text.size() - std::string_view(s.text).size());
      break;
    }
  }
  double value = 0;
  if (!ParseDecimal(number, &value)) {
    if (!text.empty() && std::isalpha(static_cast<unsigned char>(text.back()))) {
      return Bad("memory", raw, "units: Ki Mi Gi Ti Pi Ei (binary) or k M G T P E (decimal)");
    }
    return Bad("memory", raw, hint);
  }
  double bytes = value * factor;
  if (bytes > kMaxExact) return Bad("memory", raw, "the value is too large");
  if (bytes != std::floor(bytes)) {
    return Bad("memory", raw, "the quantity must be a whole number of bytes");
  }
  return static_cast<int64_t>(bytes);
}

Result<int64_t> ParseDurationMs(const std::string& raw) {
  std::string text(Trim(raw));
  const std::string hint = "write a duration such as \"30s\", \"5m\", \"2h\", \"1h30m\", \"500ms\"";
  if (text.empty()) return Bad("duration", raw, hint);
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    double value = 0;
    if (!ParseDecimal(std::string_view(text).substr(start, i - start), &value)) {
      return Bad("duration", raw, hint);
    }
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(unit_start, i - unit_start);
    double factor;
    if (unit == "ms")
      factor = 1;
    else if (unit == "s")
      factor = kMsPerSecond;
    else if (unit == "m")
      factor = kMsPerMinute;
    else if (unit == "h")
      factor = kMsPerHour;
    else if (unit == "d")
      factor = kMsPerDay;
    else if (unit.empty()) {
      return Bad("duration", raw, "add a unit: \"" + text + "s\" for seconds, ms m h d also work");
    } else {
      return Bad("duration", raw, "unknown unit " + Quote(unit) + "; units: ms s m h d");
    }
    total += value * factor;
    if (total > kMaxExact) return Bad("duration", raw, "the duration is too long");
    any = true;
  }
  if (!any) return Bad("duration", raw, hint);
  return static_cast<int64_t>(std::llround(total));
}

std::string FormatCpu(int64_t millis) {
  if (millis % 1000 == 0) return std::to_string(millis / 1000);
  return std::to_string(millis) + "m";
}

std::string FormatBytes(int64_t bytes) {
  static const char* kUnits[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (bytes == 0) return "0";
  int unit = -1;
  int64_t v = bytes;
  while (unit < 5 && v % 1024 == 0) {
    v /= 1024;
    ++unit;
  }
  if (unit < 0) return std::to_string(bytes);
  return std::to_string(v) + kUnits[unit];
}

std::string FormatBytesHuman(int64_t bytes) {
  static const char* kUnits[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (unit < 6 && std::fabs(v) >= 1024) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0 || v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f%s", v, kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f%s", v, kUnits[unit]);
  }
  return buf;
}

std::string FormatDuration(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  if (ms < kMsPerSecond) return out + std::to_string(ms) + "ms";
  int64_t h = ms / kMsPerHour;
  int64_t m = (ms % kMsPerHour) / kMsPerMinute;
  int64_t rest = ms % kMsPerMinute;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (rest) {
    if (rest % kMsPerSecond == 0) {
      out += std::to_string(rest / kMsPerSecond) + "s";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", static_cast<double>(rest) / kMsPerSecond);
      out += std::string(buf) + "s";
    }
  }
  return out;
}

}  // namespace rsl::spec
