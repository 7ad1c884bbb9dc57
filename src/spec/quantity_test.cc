#include "spec/quantity.h"

#include <gtest/gtest.h>

namespace rsl::spec {
namespace {

TEST(QuantityTest, CpuMillis) {
  EXPECT_EQ(*ParseCpuMillis("8"), 8000);
  EXPECT_EQ(*ParseCpuMillis("500m"), 500);
  EXPECT_EQ(*ParseCpuMillis("2.5"), 2500);
  EXPECT_EQ(*ParseCpuMillis(" 16 "), 16000);
  EXPECT_EQ(*ParseCpuMillis("0.001"), 1);
  for (const char* bad :
       {"", "m", "8 cores", "-1", "1.5m", "0.0005", "8Gi", "nan", "inf", "0x10"}) {
    auto r = ParseCpuMillis(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, "SPEC_INVALID");
    }
  }
}

TEST(QuantityTest, Bytes) {
  EXPECT_EQ(*ParseBytes("32Gi"), int64_t{32} << 30);
  EXPECT_EQ(*ParseBytes("512Mi"), int64_t{512} << 20);
  EXPECT_EQ(*ParseBytes("1G"), 1000000000);
  EXPECT_EQ(*ParseBytes("1k"), 1000);
  EXPECT_EQ(*ParseBytes("1Ki"), 1024);
  EXPECT_EQ(*ParseBytes("1e9"), 1000000000);
  EXPECT_EQ(*ParseBytes("1.5Gi"), int64_t{3} << 29);
  EXPECT_EQ(*ParseBytes("123"), 123);
  EXPECT_EQ(*ParseBytes("2Ti"), int64_t{2} << 40);
  for (const char* bad : {"", "64GB", "0.5", "Gi", "-1Gi", "1 Gi", "100Ei", "1e30"}) {
    EXPECT_FALSE(ParseBytes(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseBytes("64GB").error().hint,
            "units: Ki Mi Gi Ti Pi Ei (binary) or k M G T P E (decimal)");
}

TEST(QuantityTest, Durations) {
  EXPECT_EQ(*ParseDurationMs("30s"), 30000);
  EXPECT_EQ(*ParseDurationMs("5m"), 300000);
  EXPECT_EQ(*ParseDurationMs("2h"), 7200000);
  EXPECT_EQ(*ParseDurationMs("1h30m"), 5400000);
  EXPECT_EQ(*ParseDurationMs("500ms"), 500);
  EXPECT_EQ(*ParseDurationMs("1d"), 86400000);
  EXPECT_EQ(*ParseDurationMs("1.5s"), 1500);
  EXPECT_EQ(*ParseDurationMs("0s"), 0);
  for (const char* bad : {"", "30", "5 m", "10min", "h", "1h30", "-5s", "1.2.3s"}) {
    EXPECT_FALSE(ParseDurationMs(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseDurationMs("30").error().hint,
            "add a unit: \"30s\" for seconds, ms m h d also work");
}

TEST(QuantityTest, FormattingRoundTrips) {
  EXPECT_EQ(FormatCpu(8000), "8");
  EXPECT_EQ(FormatCpu(500), "500m");
  EXPECT_EQ(FormatBytes(int64_t{32} << 30), "32Gi");
  EXPECT_EQ(FormatBytes(1000000000), "1000000000");
  EXPECT_EQ(FormatBytes(1536), "1536");
  EXPECT_EQ(FormatBytesHuman(int64_t{3} << 29), "1.5Gi");
  EXPECT_EQ(FormatBytesHuman(245 << 20), "245Mi");
  EXPECT_EQ(FormatDuration(5400000), "1h30m");
  EXPECT_EQ(FormatDuration(1500), "1.5s");
  EXPECT_EQ(FormatDuration(500), "500ms");
  EXPECT_EQ(FormatDuration(0), "0s");
  for (int64_t ms : {1, 999, 1000, 61000, 3600000, 5401500, 86400000}) {
    EXPECT_EQ(*ParseDurationMs(FormatDuration(ms)), ms) << ms;
  }
  for (int64_t b : {int64_t{1}, int64_t{1023}, int64_t{1} << 40, int64_t{12345678}}) {
    EXPECT_EQ(*ParseBytes(FormatBytes(b)), b) << b;
  }
  for (int64_t m : {1, 500, 1000, 2500, 64000}) EXPECT_EQ(*ParseCpuMillis(FormatCpu(m)), m);
}

}  // namespace
}  // namespace rsl::spec
