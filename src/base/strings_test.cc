#include "base/strings.h"

#include <gtest/gtest.h>

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

TEST(StringsTest, SplitTrimJoinQuote) {
  EXPECT_EQ(Split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(Trim("  x y \n"), "x y");
  EXPECT_EQ(Join({"a", "b"}, " -> "), "a -> b");
  EXPECT_EQ(Quote("a\"b\n"), "\"a\\\"b\\n\"");
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
  AppendJsonString(&out, "a\x80" "b\xE2\x82\xC0\xAF\xED\xA0\x80");
  EXPECT_EQ(out, "\"a\xEF\xBF\xBD" "b"
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST(Sha256Test, KnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace rsl
