// The checks of the spec text around YAML parsing (parse_text.h).
#include "spec/parse_text.h"

#include <gtest/gtest.h>

#include "base/codes.h"

namespace rsl::spec {
namespace {

TEST(ParseTextTest, FirstInvalidUtf8) {
  EXPECT_EQ(FirstInvalidUtf8("plain ascii"), std::string::npos);
  EXPECT_EQ(FirstInvalidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string::npos);
  EXPECT_EQ(FirstInvalidUtf8("ab\xff"), 2u);            // never a lead byte
  EXPECT_EQ(FirstInvalidUtf8("a\xc3"), 1u);             // truncated
  EXPECT_EQ(FirstInvalidUtf8("a\xc3(b"), 1u);           // bad continuation
  EXPECT_EQ(FirstInvalidUtf8("\xc0\xaf"), 0u);          // overlong
  EXPECT_EQ(FirstInvalidUtf8("x\xed\xa0\x80"), 1u);     // surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
}

TEST(ParseTextTest, SecondDocumentLine) {
  EXPECT_EQ(SecondDocumentLine("a: 1\n"), 0);
  EXPECT_EQ(SecondDocumentLine("---\na: 1\n"), 0);  // a leading marker starts the first
  EXPECT_EQ(SecondDocumentLine("# c\n---\na: 1\n"), 0);
  EXPECT_EQ(SecondDocumentLine("a: 1\n---\nb: 2\n"), 2);
  EXPECT_EQ(SecondDocumentLine("a: 1\n--- b: 2\n"), 2);
  EXPECT_EQ(SecondDocumentLine("a: 1\n---\r\n"), 2);
}

TEST(ParseTextTest, SeedAtomicMistake) {
  const std::string text =
      "spec:\n"
      "  pipeline:\n"
      "    atomic: true\n"
      "    # the steps\n"
      "    - name: a\n";
  auto e = SeedAtomicMistake(text, "w.yaml");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, codes::kSpecParseError);
  EXPECT_EQ(e->path, "spec.pipeline");
  EXPECT_EQ(e->pos.file, "w.yaml");
  EXPECT_EQ(e->pos.line, 3);
  EXPECT_EQ(e->pos.column, 5);
  EXPECT_EQ(e->value, "atomic: true");
  EXPECT_FALSE(SeedAtomicMistake("pipeline:\n  atomic: true\n  steps:\n  - name: a\n", "w"));
  EXPECT_FALSE(SeedAtomicMistake("atomic: true\n  - name: a\n", "w"));  // not the same indent
}

}  // namespace
}  // namespace rsl::spec
