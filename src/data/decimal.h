// Decimals as Avro and Parquet store them: an unscaled big-endian two's complement integer
// (Avro bytes/fixed, Parquet FIXED_LEN_BYTE_ARRAY/BYTE_ARRAY) and a scale from the schema.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace rsl::data {

//! The unscaled integer of a big-endian two's complement byte string, as a double (precision
//! beyond a double's 15-17 digits is rounded). Empty is 0.
inline double BigEndianDecimal(std::string_view bytes) {
  if (bytes.empty()) return 0;
  const bool negative = static_cast<uint8_t>(bytes[0]) & 0x80;
  double v = 0;
  for (char ch : bytes) {
    uint8_t b = static_cast<uint8_t>(ch);
    v = v * 256 + (negative ? static_cast<uint8_t>(~b) : b);
  }
  return negative ? -(v + 1) : v;
}

//! unscaled / 10^scale.
inline double ScaleDecimal(double unscaled, int scale) {
  return scale == 0 ? unscaled : unscaled / std::pow(10.0, scale);
}

}  // namespace rsl::data
