#include "model/pep.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "base/strings.h"
#include "spec/names.h"

namespace rsl::model {
namespace {

// packaging.version.VERSION_PATTERN, with numbered groups:
// 1 epoch, 2 release, 3 pre label, 4 pre n, 5 post n (implicit "-N"), 6 post label, 7 post n,
// 8 dev label, 9 dev n, 10 local.
const std::regex& VersionRegex() {
  static const std::regex re(R"(^\s*v?(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*))"
                             R"((?:[-_.]?(alpha|beta|preview|pre|rc|a|b|c)[-_.]?([0-9]+)?)?)"
                             R"((?:(?:-([0-9]+))|(?:[-_.]?(post|rev|r)[-_.]?([0-9]+)?))?)"
                             R"((?:[-_.]?(dev)[-_.]?([0-9]+)?)?)"
                             R"((?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$)",
                             std::regex::icase | std::regex::optimize);
  return re;
}

// Version numbers beyond 18 digits are not realistic; they saturate instead of overflowing.
constexpr size_t kMaxDigits = 18;

int64_t ToNumber(const std::string& digits) {
  if (digits.empty()) return 0;
  std::string_view d = digits;
  while (d.size() > 1 && d.front() == '0') d.remove_prefix(1);
  if (d.size() > kMaxDigits) return INT64_MAX;
  return std::stoll(std::string(d));
}

bool AllDigits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<int64_t> StripTrailingZeros(std::vector<int64_t> release) {
  while (release.size() > 1 && release.back() == 0) release.pop_back();
  return release;
}

bool LocalEqual(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AllDigits(a[i]) && AllDigits(b[i])) {
      if (ToNumber(a[i]) != ToNumber(b[i])) return false;
    } else if (a[i] != b[i]) {
      return false;
    }
  }
  return true;
}

bool PublicEqual(const Pep440Version& a, const Pep440Version& b) {
  return a.epoch == b.epoch && StripTrailingZeros(a.release) == StripTrailingZeros(b.release) &&
         a.pre == b.pre && a.post == b.post && a.dev == b.dev;
}

}  // namespace

std::string NormalizeName(std::string_view name) { return spec::NormalizePackageName(name); }

std::optional<Pep440Version> ParsePep440(std::string_view text) {
  std::smatch m;
  std::string s(text);
  if (!std::regex_match(s, m, VersionRegex())) return std::nullopt;
  Pep440Version v;
  v.epoch = ToNumber(m[1].str());
  for (const auto& part : Split(m[2].str(), '.')) v.release.push_back(ToNumber(part));
  if (m[3].matched) {
    std::string label = ToLower(m[3].str());
    if (label == "alpha") label = "a";
    if (label == "beta") label = "b";
    if (label == "c" || label == "pre" || label == "preview") label = "rc";
    v.pre = std::make_pair(label, ToNumber(m[4].str()));
  }
  if (m[5].matched) {
    v.post = ToNumber(m[5].str());
  } else if (m[6].matched) {
    v.post = ToNumber(m[7].str());
  }
  if (m[8].matched) v.dev = ToNumber(m[9].str());
  if (m[10].matched) {
    std::string local = ToLower(m[10].str());
    std::replace(local.begin(), local.end(), '-', '.');
    std::replace(local.begin(), local.end(), '_', '.');
    v.local = Split(local, '.');
  }
  return v;
}

std::string Pep440Version::Public() const {
  std::string out;
  if (epoch != 0) out += std::to_string(epoch) + "!";
  for (size_t i = 0; i < release.size(); ++i) {
    if (i > 0) out += ".";
    out += std::to_string(release[i]);
  }
  if (pre) out += pre->first + std::to_string(pre->second);
  if (post) out += ".post" + std::to_string(*post);
  if (dev) out += ".dev" + std::to_string(*dev);
  return out;
}

std::string Pep440Version::ToString() const {
  std::string out = Public();
  if (!local.empty()) {
    out += "+";
    for (size_t i = 0; i < local.size(); ++i) {
      if (i > 0) out += ".";
      out += AllDigits(local[i]) ? std::to_string(ToNumber(local[i])) : local[i];
    }
  }
  return out;
}

bool VersionMatches(std::string_view declared, std::string_view installed) {
  std::string_view decl = Trim(declared);
  auto inst = ParsePep440(installed);
  if (EndsWith(decl, ".*")) {
    auto prefix = ParsePep440(decl.substr(0, decl.size() - 2));
    if (!prefix || !inst || prefix->epoch != inst->epoch) return false;
    std::vector<int64_t> release = inst->release;
    if (release.size() < prefix->release.size()) release.resize(prefix->release.size(), 0);
    return std::equal(prefix->release.begin(), prefix->release.end(), release.begin());
  }
  auto want = ParsePep440(decl);
  if (!want || !inst) return ToLower(decl) == ToLower(Trim(installed));
  if (!PublicEqual(*want, *inst)) return false;
  return want->local.empty() || LocalEqual(want->local, inst->local);
}

}  // namespace rsl::model
