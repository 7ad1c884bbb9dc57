#include "data/parquet_decode.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace rsl::data::parquet_decode {
namespace {

// The hybrid's bit-packed run written as the format says (values LSB first, groups of 8),
// for values of `bw` bits.
std::vector<uint8_t> BitPacked(const std::vector<uint32_t>& values, int bw) {
  size_t groups = (values.size() + 7) / 8;
  std::vector<uint8_t> out;
  uint64_t header = (groups << 1) | 1;
  do {
    uint8_t b = header & 0x7f;
    header >>= 7;
    out.push_back(static_cast<uint8_t>(b | (header ? 0x80 : 0)));
  } while (header);
  std::vector<uint8_t> bits(groups * static_cast<size_t>(bw), 0);
  for (size_t i = 0; i < values.size(); i++) {
    for (int b = 0; b < bw; b++) {
      size_t bit = i * static_cast<size_t>(bw) + static_cast<size_t>(b);
      if ((values[i] >> b) & 1) bits[bit >> 3] |= static_cast<uint8_t>(1u << (bit & 7));
    }
  }
  out.insert(out.end(), bits.begin(), bits.end());
  return out;
}

TEST(ParquetHybrid, BitPackedRunsOfEveryWidthDecodeToTheirValues) {
  std::mt19937_64 rng(3);
  for (int bw = 0; bw <= 32; bw++) {
    for (size_t n : {1, 7, 8, 9, 64, 1000}) {
      std::vector<uint32_t> values(n);
      const uint64_t mask = (uint64_t{1} << bw) - 1;
      for (auto& v : values) v = static_cast<uint32_t>(rng() & mask);
      std::vector<uint8_t> bytes = BitPacked(values, bw);
      std::vector<uint32_t> got(n, 0xdeadbeef);
      Hybrid h(bytes.data(), bytes.data() + bytes.size(), bw);
      ASSERT_TRUE(h.Decode(n, got.data())) << "bw " << bw << " n " << n;
      EXPECT_EQ(got, values) << "bw " << bw << " n " << n;
      EXPECT_EQ(h.pos(), bytes.data() + bytes.size());
    }
  }
}

TEST(ParquetHybrid, RleRunsAndMixedRuns) {
  // RLE run of 5 x 3 (width 2: one byte of value), then a bit-packed group of 8 values.
  std::vector<uint8_t> bytes = {5 << 1, 3};
  std::vector<uint32_t> packed = {0, 1, 2, 3, 3, 2, 1, 0};
  std::vector<uint8_t> run = BitPacked(packed, 2);
  bytes.insert(bytes.end(), run.begin(), run.end());
  std::vector<uint32_t> got(13);
  Hybrid h(bytes.data(), bytes.data() + bytes.size(), 2);
  ASSERT_TRUE(h.Decode(13, got.data()));
  EXPECT_EQ(got, (std::vector<uint32_t>{3, 3, 3, 3, 3, 0, 1, 2, 3, 3, 2, 1, 0}));
}

TEST(ParquetHybrid, MalformedInputIsRefusedWithoutReadingPastTheEnd) {
  std::vector<uint32_t> got(100);
  // A header promising more groups than the bytes hold: what is there is taken, then the run
  // ends short of n values.
  std::vector<uint8_t> truncated = {(10 << 1) | 1, 0xff, 0xff};
  Hybrid a(truncated.data(), truncated.data() + truncated.size(), 7);
  EXPECT_FALSE(a.Decode(100, got.data()));
  std::vector<uint8_t> zero_run = {0};  // an RLE run of 0 values
  Hybrid b(zero_run.data(), zero_run.data() + 1, 1);
  EXPECT_FALSE(b.Decode(1, got.data()));
  std::vector<uint8_t> endless = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80};  // varint never ends
  Hybrid c(endless.data(), endless.data() + endless.size(), 1);
  EXPECT_FALSE(c.Decode(1, got.data()));
  Hybrid d(nullptr, nullptr, 3);
  EXPECT_FALSE(d.Decode(1, got.data()));
}

TEST(ParquetPlain, DecodesEachPhysicalTypeAndRefusesShortPages) {
  Column c;
  Values v;
  const uint8_t ints[] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  c.type = kInt32;
  ASSERT_TRUE(DecodePlain(c, ints, ints + 8, 2, &v));
  EXPECT_EQ(v.ints, (std::vector<int64_t>{1, -1}));
  EXPECT_FALSE(DecodePlain(c, ints, ints + 7, 2, &v));
  c.type = kBoolean;
  const uint8_t bools[] = {0b101};
  ASSERT_TRUE(DecodePlain(c, bools, bools + 1, 3, &v));
  EXPECT_EQ(v.ints, (std::vector<int64_t>{1, 0, 1}));
  c.type = kByteArray;
  const uint8_t strs[] = {2, 0, 0, 0, 'h', 'i', 0, 0, 0, 0, 3, 0, 0, 0, 'a'};
  EXPECT_FALSE(DecodePlain(c, strs, strs + sizeof strs, 3, &v));  // the third is cut short
  ASSERT_TRUE(DecodePlain(c, strs, strs + sizeof strs, 2, &v));
  EXPECT_EQ(v.strs, (std::vector<std::string_view>{"hi", ""}));
  c.type = kDouble;
  double d[2] = {1.5, -2};
  ASSERT_TRUE(DecodePlain(c, reinterpret_cast<const uint8_t*>(d),
                          reinterpret_cast<const uint8_t*>(d) + 16, 2, &v));
  EXPECT_EQ(v.dbls, (std::vector<double>{1.5, -2}));
  EXPECT_TRUE(v.ints.empty() && v.strs.empty());
}

}  // namespace
}  // namespace rsl::data::parquet_decode
