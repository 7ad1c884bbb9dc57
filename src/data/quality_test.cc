// The quality engine end to end on CSV data it writes itself: each kind of violation produces
// its exact code and message (SPEC.md "data").
#include "data/quality.h"
#include "base/fake_env.h"

#include <gtest/gtest.h>

#include <functional>

#include "base/codes.h"
#include "data/test_util.h"

namespace rsl::data {
namespace {

using testing::ClockAt;
using testing::Input;
using testing::TempDir;

constexpr char kSchema[] = R"({"type":"record","name":"tx","fields":[
  {"name":"tx_id","type":"string"},
  {"name":"amount","type":["null","double"],"constraints":{"min":0,"max":1000}},
  {"name":"action","type":"string","constraints":{"enum":["click","cart","buy"]}},
  {"name":"ts","type":"long","logicalType":"timestamp-micros"}]})";

// 2024-06-15T10:00:00Z in microseconds.
constexpr int64_t kBase = 1718445600000000;
constexpr int kRows = 10000;

// Rows i = 0..n-1; `edit(i, &cols)` may change a row's four columns.
std::string Csv(int n, const std::function<void(int, std::vector<std::string>*)>& edit = {}) {
  std::string out = "tx_id,amount,action,ts\n";
  const char* actions[] = {"click", "cart", "buy"};
  for (int i = 0; i < n; i++) {
    std::vector<std::string> c = {"t" + std::to_string(i), std::to_string(i % 100) + ".5",
                                  actions[i % 3], std::to_string(kBase + i)};
    if (edit) edit(i, &c);
    out += c[0] + "," + c[1] + "," + c[2] + "," + c[3] + "\n";
  }
  return out;
}

ValidateOptions Opts(int64_t now_ms = kBase / 1000 + 600000) {
  ValidateOptions o;
  o.threads = 2;
  o.env = ClockAt(now_ms);
  o.read.text_chunk_bytes = 16 << 10;  // several chunks per file
  return o;
}

spec::DataInput Full(const std::string& uri) {
  auto in = Input(uri, kSchema);
  in.quality.completeness = 99.95;
  in.quality.uniqueness = 99.99;
  in.quality.unique_key = "tx_id";
  in.quality.freshness_ms = 3600000;
  return in;
}

TEST(Quality, CleanDataPasses) {
  TempDir dir;
  dir.Write("d/year=2024/part-0.csv", Csv(kRows));
  dir.Write("d/year=2024/_SUCCESS", "");
  auto r = Validate(Full(dir.path() + "/d"), nullptr, Opts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString() << "\n" << r.ToText();
  EXPECT_EQ(r.rows, kRows);
  EXPECT_EQ(r.files, 1);
  EXPECT_EQ(*r.distinct_keys, kRows);
  EXPECT_EQ(r.format, "csv");
  EXPECT_EQ(r.checks.size(), 6u);
  for (const auto& c : r.checks) EXPECT_EQ(c.state, "ok") << c.name;
  EXPECT_EQ(r.ToText().substr(r.ToText().rfind('\n', r.ToText().size() - 2) + 1), "OK\n");
  EXPECT_EQ(r.descriptor.checksum.substr(0, 7), "sha256:");
  EXPECT_EQ(r.descriptor.version.size(), 16u);
  EXPECT_EQ(r.fields[1].min.value(), 0.5);
  EXPECT_EQ(r.fields[1].max.value(), 99.5);
}

TEST(Quality, NullsBelowCompleteness) {
  TempDir dir;
  dir.Write("a.csv", Csv(kRows, [](int i, auto* c) {
              if (i % 1000 == 7 && i < 9000) (*c)[1] = "";
            }));
  auto r = Validate(Full(dir.path() + "/a.csv"), nullptr, Opts());
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), codes::kDataCompleteness);
  EXPECT_EQ(r.status.error().path, "amount");
  EXPECT_EQ(r.status.error().message, "non-null 99.91% < 99.95% (9 of 10000 null)");
  EXPECT_EQ(r.fields[1].nulls, 9);
}

TEST(Quality, DuplicatesBelowUniqueness) {
  TempDir dir;
  dir.Write("a.csv", Csv(kRows, [](int i, auto* c) {
              if (i == 500 || i == 9000) (*c)[0] = "t3";
            }));
  auto r = Validate(Full(dir.path() + "/a.csv"), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataUniqueness);
  EXPECT_EQ(r.status.error().path, "tx_id");
  EXPECT_EQ(r.status.error().message, "distinct 99.98% < 99.99% (9998 of 10000 distinct)");
}

TEST(Quality, OutOfRangeNamesFirstRow) {
  TempDir dir;
  dir.Write("a.csv", Csv(kRows, [](int i, auto* c) {
              if (i == 16) (*c)[1] = "-5";
              if (i == 8000) (*c)[1] = "1000.5";
            }));
  auto r = Validate(Full(dir.path() + "/a.csv"), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataConstraintViolation);
  EXPECT_EQ(r.status.error().path, "amount");
  EXPECT_EQ(r.status.error().message,
            "2 of 10000 values outside [0, 1000] (first \"-5\" at a.csv row 17)");
}

TEST(Quality, UnknownEnumSymbol) {
  TempDir dir;
  dir.Write("a.csv", Csv(kRows, [](int i, auto* c) {
              if (i == 9999) (*c)[2] = "refund";
            }));
  auto r = Validate(Full(dir.path() + "/a.csv"), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataConstraintViolation);
  EXPECT_EQ(
      r.status.error().message,
      "1 of 10000 values not in enum [click, cart, buy] (first \"refund\" at a.csv row 10000)");
}

TEST(Quality, StaleData) {
  TempDir dir;
  dir.Write("a.csv", Csv(kRows));
  // Newest record: kBase + 9999 us; now: 3 hours after kBase.
  auto r = Validate(Full(dir.path() + "/a.csv"), nullptr, Opts(kBase / 1000 + 3 * 3600000));
  EXPECT_EQ(r.status.code(), codes::kDataFreshness);
  EXPECT_EQ(r.status.error().path, "ts");
  EXPECT_EQ(r.status.error().message,
            "newest record 2024-06-15T10:00:00.009999Z is 2h59m59s old > 1h");
}

TEST(Quality, WrongTypeIsSchemaMismatch) {
  TempDir dir;
  dir.Write("a.csv", Csv(kRows, [](int i, auto* c) {
              if (i == 41) (*c)[1] = "abc";
            }));
  auto r = Validate(Full(dir.path() + "/a.csv"), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().path, "amount");
  EXPECT_EQ(r.status.error().message,
            "\"abc\" at a.csv row 42 is not a number (declared union[null,double])");
}

TEST(Quality, MissingFieldIsSchemaMismatch) {
  TempDir dir;
  dir.Write("a.csv", "tx_id,amount,ts\nt1,1.5,1\n");
  auto r = Validate(Full(dir.path() + "/a.csv"), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSchemaMismatch);
  EXPECT_EQ(r.status.error().path, "action");
  EXPECT_EQ(r.checks[1].state, "failed");
  EXPECT_EQ(r.checks[2].state, "skipped");
}

TEST(Quality, ExtraFieldIsIgnoredAndNoted) {
  TempDir dir;
  std::string csv = "tx_id,amount,action,ts,extra\n";
  for (int i = 0; i < 10; i++)
    csv += "t" + std::to_string(i) + ",1,buy," + std::to_string(kBase) + ",x\n";
  dir.Write("a.csv", csv);
  auto in = Full(dir.path() + "/a.csv");
  in.quality.uniqueness.reset();
  auto r = Validate(in, nullptr, Opts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "fields in the data but not declared (ignored): extra");
}

TEST(Quality, MissingInputIsNotFound) {
  TempDir dir;
  auto r = Validate(Full(dir.path() + "/nope"), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataSourceNotFound);
  EXPECT_EQ(r.checks[0].state, "failed");
}

TEST(Quality, UnclosedQuoteIsFormatErrorWithOffset) {
  TempDir dir;
  dir.Write("a.csv", "tx_id,amount,action,ts\nt1,\"1.5,buy,1\n");
  auto r = Validate(Full(dir.path() + "/a.csv"), nullptr, Opts());
  EXPECT_EQ(r.status.code(), codes::kDataFormatError);
  EXPECT_NE(r.status.error().message.find("a.csv: byte 26: quoted field never closed"),
            std::string::npos)
      << r.status.error().message;
}

TEST(Quality, RowsAcrossFilesAndQuotedNewlines) {
  TempDir dir;
  dir.Write("d/day=01/a.csv", Csv(3000));
  std::string b = "tx_id,amount,action,ts\n";
  for (int i = 0; i < 3000; i++) {
    b += "\"u" + std::to_string(i) + "\nline2\",\"2\",buy," + std::to_string(kBase) + "\r\n";
  }
  dir.Write("d/day=02/b.csv", b);
  auto r = Validate(Full(dir.path() + "/d"), nullptr, Opts());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.rows, 6000);
  EXPECT_EQ(r.files, 2);
  EXPECT_EQ(*r.distinct_keys, 6000);
}

TEST(Quality, FormatPercentShowsTheDifference) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(FormatPercents(99.91, 99.95), P("99.91", "99.95"));
  EXPECT_EQ(FormatPercents(99.9949, 99.995), P("99.994", "99.995"));
  EXPECT_EQ(FormatPercents(99.98999, 99.99), P("99.98", "99.99"));
  EXPECT_EQ(FormatPercents(100, 99.9), P("100.00", "99.90"));
  EXPECT_EQ(FormatDurationMs(3600000), "1h");
  EXPECT_EQ(FormatDurationMs(3725000), "1h2m5s");
  EXPECT_EQ(FormatTimestampMicros(kBase), "2024-06-15T10:00:00Z");
}

}  // namespace
}  // namespace rsl::data
