#include "k8s/names.h"

#include <algorithm>

#include "base/sha256.h"

namespace rsl::k8s {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// The first `n` hex digits of the SHA-256 of `text`: the suffix that keeps mapped names apart.
std::string ShortHash(std::string_view text, size_t n) { return Sha256Hex(text).substr(0, n); }

// Appends `-<hash>` to `base`, cutting `base` so the whole fits `max_len`, and keeps the
// result ending alphanumeric.
std::string WithHash(std::string base, std::string_view original, size_t max_len,
                     bool (*ok_end)(char)) {
  constexpr size_t kHash = 8;
  const size_t room = max_len - kHash - 1;
  if (base.size() > room) base.resize(room);
  while (!base.empty() && !ok_end(base.back())) base.pop_back();
  return (base.empty() ? std::string("x") : base) + "-" + ShortHash(original, kHash);
}

}  // namespace

bool IsDnsLabel(std::string_view text) {
  if (text.empty() || text.size() > kMaxLabelName) return false;
  if (!IsLowerAlnum(text.front()) || !IsLowerAlnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

bool IsLabelValue(std::string_view text) {
  if (text.empty()) return true;
  if (text.size() > kMaxLabelName) return false;
  if (!IsAlnum(text.front()) || !IsAlnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

namespace {

// `text` in DNS-label characters: lower case, every run of other characters one '-', no
// leading '-'.
std::string MapToLabelChars(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else if (IsLowerAlnum(c)) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';  // every run of other characters ('_', '.', '/', ...) becomes one '-'
    }
  }
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  return out;
}

}  // namespace

std::string DnsLabel(std::string_view text, size_t max_len) {
  max_len = std::clamp<size_t>(max_len, 12, kMaxLabelName);
  if (IsDnsLabel(text) && text.size() <= max_len) return std::string(text);
  return WithHash(MapToLabelChars(text), text, max_len, IsLowerAlnum);
}

std::string HashedDnsLabel(std::string_view readable, std::string_view key, size_t max_len) {
  max_len = std::clamp<size_t>(max_len, 12, kMaxLabelName);
  return WithHash(MapToLabelChars(readable), key, max_len, IsLowerAlnum);
}

std::string LabelValue(std::string_view text) {
  if (IsLabelValue(text)) return std::string(text);
  std::string out;
  for (char c : text) out += (IsAlnum(c) || c == '-' || c == '_' || c == '.') ? c : '-';
  while (!out.empty() && !IsAlnum(out.front())) out.erase(out.begin());
  return WithHash(std::move(out), text, kMaxLabelName, IsAlnum);
}

}  // namespace rsl::k8s
