// Small string helpers shared by every layer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rsl {

std::vector<std::string> Split(std::string_view s, char sep);
std::string_view Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
std::string ToLower(std::string_view s);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);

//! Levenshtein distance, capped at max_distance+1 to stay cheap on long strings.
int EditDistance(std::string_view a, std::string_view b, int max_distance = 1 << 20);

//! The candidate closest to `word` if it is close enough to be a likely typo
//! (distance <= max(1, len/3)); empty otherwise.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);
//! The hint for an unknown `word`: `did you mean "close"?` for ClosestMatch's candidate, or
//! `otherwise` when none is close.
std::string ClosestHint(std::string_view word, const std::vector<std::string>& candidates,
                        const std::string& otherwise);

//! A time (seconds since the epoch) in UTC, formatted by strftime's `format`
//! ("%Y-%m-%dT%H:%M:%SZ"); at most 63 characters.
std::string FormatUtc(int64_t unix_seconds, const char* format);

//! Lower-case hex of bytes.
std::string HexEncode(std::string_view bytes);

//! `"text"` with JSON escapes, for messages that quote a user's value.
std::string Quote(std::string_view s);
//! `'text'` as one word for a POSIX shell (bash scripts, completions): embedded single quotes
//! as '\''.
std::string ShellQuote(std::string_view s);

//! Appends `s` as a JSON string literal (quotes included) that any strict JSON parser
//! accepts: control characters escaped, invalid UTF-8 bytes replaced by U+FFFD. For
//! hand-written JSON on hot paths (nlohmann's builder allocates a node per value).
void AppendJsonString(std::string* out, std::string_view s);

//! Appends one JSON object to a string field by field, strings through AppendJsonString:
//!   JsonObjectWriter w(&out); w.Str("id", id); w.Int("n", 3); w.End();
//! For any other value, Key(k) writes the key and returns the string to append it to.
class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(std::string* out) : out_(out) { out_->push_back('{'); }
  std::string& Key(std::string_view k);
  void Str(std::string_view k, std::string_view v) { AppendJsonString(&Key(k), v); }
  void Int(std::string_view k, int64_t v) { Key(k) += std::to_string(v); }
  void StrList(std::string_view k, const std::vector<std::string>& v);
  void End() { out_->push_back('}'); }

 private:
  std::string* out_;
  bool first_ = true;
};

}  // namespace rsl
