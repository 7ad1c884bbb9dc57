#include <gtest/gtest.h>

#include "base/codes.h"
#include "data/format.h"

namespace rsl::data {
namespace {

TEST(Csv, SplitLinesRespectsQuotes) {
  std::string text = "a,b\n\"x\ny\",1\n\"p\",2\nq,3\n";
  auto starts = SplitLines(text, 4, 1, true);
  // chunk boundaries only after complete records
  ASSERT_GE(starts.size(), 3u);
  for (size_t i = 1; i + 1 < starts.size(); i++) EXPECT_EQ(text[starts[i] - 1], '\n');
  EXPECT_NE(starts[1], 7u);  // never inside "x\ny"
  EXPECT_EQ(starts.back(), text.size());
}

TEST(Csv, ParsesTimestamps) {
  int64_t us;
  ASSERT_TRUE(ParseTimestampMicros("2024-06-15T10:00:00Z", &us));
  EXPECT_EQ(us, 1718445600000000);
  ASSERT_TRUE(ParseTimestampMicros("2024-06-15 18:00:00.25+08:00", &us));
  EXPECT_EQ(us, 1718445600250000);
  ASSERT_TRUE(ParseTimestampMicros("1970-01-01", &us));
  EXPECT_EQ(us, 0);
  EXPECT_FALSE(ParseTimestampMicros("2024-13-01", &us));
  EXPECT_FALSE(ParseTimestampMicros("2024-02-30", &us));
  EXPECT_FALSE(ParseTimestampMicros("2023-02-29T00:00:00Z", &us));
  EXPECT_TRUE(ParseTimestampMicros("2024-02-29T00:00:00Z", &us));
  EXPECT_FALSE(ParseTimestampMicros("yesterday", &us));
}

TEST(Csv, HeaderErrors) {
  // An empty file (or a byte order mark alone) has no records; it is not corrupt.
  auto empty = OpenCsv(MakeBlob("\xEF\xBB\xBF"), "e.csv", {});
  ASSERT_TRUE(empty.ok()) << empty.error().ToString();
  EXPECT_TRUE((*empty)->writer_schema().record().fields.empty());
  auto dup = OpenCsv(MakeBlob("a,a\n1,2\n"), "d.csv", {});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("duplicate column \"a\""), std::string::npos);
}

TEST(Csv, DetectsFormats) {
  EXPECT_EQ(*DetectFormat("", "x.csv", "a,b"), Format::kCsv);
  EXPECT_EQ(*DetectFormat("", "x", "Obj\x01"), Format::kAvro);
  EXPECT_EQ(*DetectFormat("", "x.bin", "PAR1"), Format::kParquet);
  EXPECT_EQ(*DetectFormat("json", "x", ""), Format::kJsonl);
  EXPECT_FALSE(DetectFormat("xml", "x", "").ok());
  // Compressed text: the name without its compression extension, else the decompressed start.
  EXPECT_EQ(*DetectFormat("", "x.csv.gz", ""), Format::kCsv);
  EXPECT_EQ(*DetectFormat("", "x.JSONL.ZST", ""), Format::kJsonl);
  EXPECT_FALSE(DetectFormat("", "x.gz", "").ok());
}

TEST(Csv, LastLineEndSkipsQuotedLineBreaks) {
  EXPECT_EQ(LastLineEnd("a,b\n1,2\n3,", true), 8u);
  EXPECT_EQ(LastLineEnd("a,b\n\"x\ny\",1", true), 4u);
  EXPECT_EQ(LastLineEnd("\"x\ny\"", true), 0u);
  EXPECT_EQ(LastLineEnd("{}\n{\"a\":\"\n", false), 10u);
  EXPECT_EQ(LastLineEnd("{}", false), 0u);
}

}  // namespace
}  // namespace rsl::data
