// Parquet's page-level encodings, apart from the reader (parquet.cc) so that they can be
// tested alone: the physical types, the PLAIN values of a page, the RLE/bit-packed hybrid of
// levels, dictionary indices and booleans, and DELTA_BINARY_PACKED integers. Every decoder
// takes untrusted bytes and returns false, never reads past `end`, on malformed input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rsl::data::parquet_decode {

// Values of one page or dictionary: fixed/byte arrays as views, numbers as 64-bit.
struct Values {
  std::vector<int64_t> ints;
  std::vector<double> dbls;
  std::vector<std::string_view> strs;
};

enum PType {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixed = 7
};
enum Encoding {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9
};

enum PageType { kDataPage = 0, kDictionaryPage = 2, kDataPageV2 = 3 };

constexpr int64_t kJulianEpochDay = 2440588;  // INT96 timestamps: Julian day of 1970-01-01

struct Column {
  std::string name;
  PType type = kInt32;
  int32_t type_length = 0;
  bool optional = false;
  int64_t ts_divisor = 0;    // INT64 timestamps: 0 none
  bool is_unsigned = false;  // UINT_8..UINT_64 / INTEGER(isSigned=false)
  int decimal_scale = -1;    // DECIMAL: the scale (value = unscaled / 10^scale); -1 none
  // Nested columns (Dremel): the highest definition and repetition levels, the definition
  // level at which the innermost repeated ancestor has an instance (0: none), and the path as
  // the contract addresses it ("a.b", "items[]", "m{}", "items[].x").
  int max_def = 0;
  int max_rep = 0;
  int slot_def = 0;
  bool nested = false;
  std::string path;
};

//! Bits needed for levels up to max_level.
int BitWidth(int max_level);

// Bit-level reader for the RLE/bit-packed hybrid (Parquet "Encodings").
class Hybrid {
 public:
  Hybrid(const uint8_t* p, const uint8_t* end, int bit_width) : p_(p), end_(end), bw_(bit_width) {}

  //! Decodes `n` values into out; false on malformed input.
  bool Decode(size_t n, uint32_t* out);
  const uint8_t* pos() const { return p_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  int bw_;
};

//! DELTA_BINARY_PACKED integers at *pp (advanced past them): at most `n` kept when n > 0.
bool DecodeDelta(const uint8_t** pp, const uint8_t* end, size_t n, std::vector<int64_t>* out);

//! Decodes `n` PLAIN values of column `c` into `v` (fixed/byte arrays as views of the page,
//! numbers as 64-bit); false when the page holds fewer.
bool DecodePlain(const Column& c, const uint8_t* p, const uint8_t* end, size_t n, Values* v);

}  // namespace rsl::data::parquet_decode
