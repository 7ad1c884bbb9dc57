#include "base/strings.h"

#include <cstdint>
#include <cstring>

#include <algorithm>
#include <cctype>
#include <ctime>

namespace rsl {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t i = s.find(sep, start);
    if (i == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, i - start));
    start = i + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }
bool EndsWith(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

int EditDistance(std::string_view a, std::string_view b, int max_distance) {
  const size_t n = a.size(), m = b.size();
  if (static_cast<int>(n > m ? n - m : m - n) > max_distance) return max_distance + 1;
  std::vector<int> prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<int>(i);
    int row_min = cur[0];
    for (size_t j = 1; j <= m; ++j) {
      int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      row_min = std::min(row_min, cur[j]);
    }
    if (row_min > max_distance) return max_distance + 1;
    std::swap(prev, cur);
  }
  return prev[m];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  int limit = std::max<int>(1, static_cast<int>(word.size()) / 3);
  std::string best;
  int best_d = limit + 1;
  for (const auto& c : candidates) {
    int d = EditDistance(ToLower(word), ToLower(c), limit);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string ClosestHint(std::string_view word, const std::vector<std::string>& candidates,
                        const std::string& otherwise) {
  std::string close = ClosestMatch(word, candidates);
  return close.empty() ? otherwise : "did you mean " + Quote(close) + "?";
}

std::string FormatUtc(int64_t unix_seconds, const char* format) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, format, &tm);
  return std::string(buf, n);
}

std::string HexEncode(std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

namespace {

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// at most U+10FFFF), or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = at(i);
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (c > 0xF4 || n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((at(i + k) & 0xC0) != 0x80) return 0;
  }
  unsigned char c1 = at(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 > 0x9F) return 0;  // surrogate
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
  return n;
}

// Appends the JSON escape of '"', '\\' or a control character (below 0x20).
void AppendEscape(std::string* out, unsigned char c) {
  switch (c) {
    case '"':
      out->append("\\\"");
      break;
    case '\\':
      out->append("\\\\");
      break;
    case '\n':
      out->append("\\n");
      break;
    case '\t':
      out->append("\\t");
      break;
    case '\r':
      out->append("\\r");
      break;
    default: {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    }
  }
}

// True when one of the eight bytes of x is below 0x20, '"', '\\' or not ASCII: the
// "has a byte less than n" and "has a zero byte" tests of Bit Twiddling Hacks (exact as
// to whether such a byte exists, which is all the caller asks).
inline bool AnyByteNeedsJsonEscape(uint64_t x) {
  constexpr uint64_t k01 = 0x0101010101010101ULL, k80 = 0x8080808080808080ULL;
  uint64_t quote = x ^ (k01 * uint64_t('"')), backslash = x ^ (k01 * uint64_t('\\'));
  uint64_t control = (x - k01 * 0x20) & ~x;
  uint64_t is_quote = (quote - k01) & ~quote;
  uint64_t is_backslash = (backslash - k01) & ~backslash;
  return ((control | is_quote | is_backslash | x) & k80) != 0;
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    // Copy the longest run that needs no escaping in one append.
    size_t j = i;
    // Eight bytes at a time (the launch records of every attempt go through here), then
    // byte by byte to find the one that stopped it.
    while (j + 8 <= s.size()) {
      uint64_t x;
      memcpy(&x, s.data() + j, 8);
      if (AnyByteNeedsJsonEscape(x)) break;
      j += 8;
    }
    while (j < s.size()) {
      auto c = static_cast<unsigned char>(s[j]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++j;
    }
    out->append(s.data() + i, j - i);
    if (j == s.size()) break;
    auto c = static_cast<unsigned char>(s[j]);
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(s, j);
      if (n == 0) {
        out->append("\xEF\xBF\xBD");  // U+FFFD
        n = 1;
      } else {
        out->append(s.data() + j, n);
      }
      i = j + n;
      continue;
    }
    AppendEscape(out, c);
    i = j + 1;
  }
  out->push_back('"');
}

std::string& JsonObjectWriter::Key(std::string_view k) {
  if (!first_) out_->push_back(',');
  first_ = false;
  AppendJsonString(out_, k);
  out_->push_back(':');
  return *out_;
}

void JsonObjectWriter::StrList(std::string_view k, const std::vector<std::string>& v) {
  std::string& out = Key(k);
  out.push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(',');
    AppendJsonString(&out, v[i]);
  }
  out.push_back(']');
}

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || c == '"' || c == '\\') {
      AppendEscape(&out, u);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

}  // namespace rsl
