#include "base/strings.h"

#include <gtest/gtest.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/sha256.h"

namespace rsl {

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(EditDistance("train", "trian"), 2);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_GT(EditDistance("a", "abcdefgh", 2), 2);
}

TEST(StringsTest, ClosestMatchSuggestsLikelyTypos) {
  std::vector<std::string> fields = {"dependsOn", "retryPolicy", "keepOnFailure"};
  EXPECT_EQ(ClosestMatch("dependOn", fields), "dependsOn");
  EXPECT_EQ(ClosestMatch("retrypolicy", fields), "retryPolicy");
  EXPECT_EQ(ClosestMatch("zzz", fields), "");
}

TEST(StringsTest, FormatUtc) {
  EXPECT_EQ(FormatUtc(1'718'409'600, "%Y-%m-%dT%H:%M:%SZ"), "2024-06-15T00:00:00Z");
  EXPECT_EQ(FormatUtc(0, "%Y%m%d"), "19700101");
}

TEST(StringsTest, ClosestHintNamesTheCandidateOrFallsBack) {
  std::vector<std::string> known = {"local", "slurm"};
  EXPECT_EQ(ClosestHint("slurn", known, "use local or slurm"), "did you mean \"slurm\"?");
  EXPECT_EQ(ClosestHint("kubernetes", known, "use local or slurm"), "use local or slurm");
}

TEST(StringsTest, SplitTrimJoinQuote) {
  EXPECT_EQ(Split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(Trim("  x y \n"), "x y");
  EXPECT_EQ(Join({"a", "b"}, " -> "), "a -> b");
  EXPECT_EQ(Quote("a\"b\n"), "\"a\\\"b\\n\"");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(StringsTest, AppendJsonStringIsStrictJson) {
  std::string out;
  AppendJsonString(&out, std::string("a\"b\\c\n\x01\t", 9));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\\t\\u0000\"");  // NUL included
  out.clear();
  AppendJsonString(&out, "gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x98\x80");  // valid: kept as is
  EXPECT_EQ(out, "\"gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  out.clear();
  // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate: U+FFFD each.
  AppendJsonString(&out,
                   "a\x80"
                   "b\xE2\x82\xC0\xAF\xED\xA0\x80");
  EXPECT_EQ(
      out,
      "\"a\xEF\xBF\xBD"
      "b"
      "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

// The eight-bytes-at-a-time scan must stop at every byte that needs escaping, wherever it
// sits: every ASCII byte (and one non-ASCII lead) at every position of a 20-byte string.
TEST(StringsTest, AppendJsonStringFindsEveryEscapeAtEveryPosition) {
  auto escaped = [](unsigned char c) -> std::string {
    switch (c) {
      case '"':
        return "\\\"";
      case '\\':
        return "\\\\";
      case '\n':
        return "\\n";
      case '\t':
        return "\\t";
      case '\r':
        return "\\r";
      default:
        break;
    }
    if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      return buf;
    }
    if (c >= 0x80) return "\xEF\xBF\xBD";  // a lone byte >= 0x80 is invalid UTF-8
    return std::string(1, char(c));
  };
  for (int c = 0; c < 0x81; ++c) {
    for (size_t pos = 0; pos < 20; ++pos) {
      std::string in(20, 'x');
      in[pos] = char(c);
      std::string out;
      AppendJsonString(&out, in);
      std::string want = "\"" + std::string(pos, 'x') + escaped(static_cast<unsigned char>(c)) +
                         std::string(19 - pos, 'x') + "\"";
      ASSERT_EQ(out, want) << "byte " << c << " at " << pos;
    }
  }
}

TEST(StringsTest, JsonObjectWriterWritesFieldsInOrder) {
  std::string out;
  JsonObjectWriter w(&out);
  w.Str("a", "x\"y");
  w.Int("n", -3);
  w.StrList("l", {"p", "q"});
  w.StrList("e", {});
  JsonObjectWriter inner(&w.Key("o"));
  inner.Str("k", "v");
  inner.End();
  w.End();
  EXPECT_EQ(out, R"({"a":"x\"y","n":-3,"l":["p","q"],"e":[],"o":{"k":"v"}})");
  EXPECT_EQ(nlohmann::json::parse(out)["o"]["k"], "v");
}

TEST(Sha256Test, KnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace rsl
