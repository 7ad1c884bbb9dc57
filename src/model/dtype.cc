#include "model/dtype.h"

#include <array>
#include <cmath>
#include <cstring>
#include <utility>

namespace rsl::model {
namespace {

constexpr std::array<std::pair<DType, const char*>, 16> kNames = {{
    {DType::kBool, "bool"},
    {DType::kInt8, "int8"},
    {DType::kInt16, "int16"},
    {DType::kInt32, "int32"},
    {DType::kInt64, "int64"},
    {DType::kUint8, "uint8"},
    {DType::kUint16, "uint16"},
    {DType::kUint32, "uint32"},
    {DType::kUint64, "uint64"},
    {DType::kFloat16, "float16"},
    {DType::kBfloat16, "bfloat16"},
    {DType::kFloat32, "float32"},
    {DType::kFloat64, "float64"},
    {DType::kFloat8E4M3, "float8_e4m3fn"},
    {DType::kFloat8E5M2, "float8_e5m2"},
    {DType::kString, "string"},
}};

// Loads `n` bytes into an unsigned integer, honouring the byte order.
uint64_t LoadUnsigned(const unsigned char* p, size_t n, bool big_endian) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t byte_idx = big_endian ? i : n - 1 - i;
    v = (v << 8) | p[byte_idx];
  }
  return v;
}

int64_t SignExtend(uint64_t v, size_t n) {
  if (n >= 8) return static_cast<int64_t>(v);
  uint64_t sign = uint64_t{1} << (n * 8 - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

}  // namespace

const char* DTypeName(DType dtype) {
  for (const auto& [d, name] : kNames) {
    if (d == dtype) return name;
  }
  return "unknown";
}

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& [d, n] : kNames) {
    if (name == n) return d;
  }
  return std::nullopt;
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUint8:
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
      return 1;
    case DType::kInt16:
    case DType::kUint16:
    case DType::kFloat16:
    case DType::kBfloat16:
      return 2;
    case DType::kInt32:
    case DType::kUint32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kUint64:
    case DType::kFloat64:
      return 8;
    case DType::kString:
      return 0;
  }
  return 0;
}

bool IsFloat(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBfloat16 || dtype == DType::kFloat32 ||
         dtype == DType::kFloat64 || dtype == DType::kFloat8E4M3 || dtype == DType::kFloat8E5M2;
}

bool IsNumeric(DType dtype) { return dtype != DType::kString; }

bool IsInteger(DType dtype) { return dtype >= DType::kInt8 && dtype <= DType::kUint64; }

std::optional<int64_t> ElementToInt64(DType dtype, const unsigned char* p, bool big_endian) {
  size_t n = DTypeSize(dtype);
  uint64_t raw = LoadUnsigned(p, n, big_endian);
  if (dtype >= DType::kInt8 && dtype <= DType::kInt64) return SignExtend(raw, n);
  if (raw > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(raw);
}

double HalfToDouble(uint16_t bits) {
  int sign = (bits >> 15) & 1;
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), -24);  // subnormal
  } else if (exponent == 0x1f) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else {
    value = std::ldexp(static_cast<double>(mantissa | 0x400), exponent - 25);
  }
  return sign ? -value : value;
}

double Bfloat16ToDouble(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

double Float8E4M3ToDouble(uint8_t bits) {
  int sign = (bits >> 7) & 1;
  int exponent = (bits >> 3) & 0xf;
  int mantissa = bits & 0x7;
  double value;
  if (exponent == 0xf && mantissa == 0x7) {
    value = NAN;  // the format's only non-finite value: no infinities
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), -9);  // subnormal: m/8 * 2^(1-7)
  } else {
    value = std::ldexp(static_cast<double>(mantissa | 0x8), exponent - 10);
  }
  return sign ? -value : value;
}

// E5M2 is the top byte of an IEEE half.
double Float8E5M2ToDouble(uint8_t bits) { return HalfToDouble(static_cast<uint16_t>(bits << 8)); }

double ElementToDouble(DType dtype, const unsigned char* p, bool big_endian) {
  size_t n = DTypeSize(dtype);
  uint64_t raw = LoadUnsigned(p, n, big_endian);
  switch (dtype) {
    case DType::kBool:
      return raw != 0 ? 1.0 : 0.0;
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return static_cast<double>(SignExtend(raw, n));
    case DType::kUint8:
    case DType::kUint16:
    case DType::kUint32:
    case DType::kUint64:
      return static_cast<double>(raw);
    case DType::kFloat16:
      return HalfToDouble(static_cast<uint16_t>(raw));
    case DType::kBfloat16:
      return Bfloat16ToDouble(static_cast<uint16_t>(raw));
    case DType::kFloat8E4M3:
      return Float8E4M3ToDouble(static_cast<uint8_t>(raw));
    case DType::kFloat8E5M2:
      return Float8E5M2ToDouble(static_cast<uint8_t>(raw));
    case DType::kFloat32: {
      uint32_t bits = static_cast<uint32_t>(raw);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case DType::kFloat64: {
      double d;
      std::memcpy(&d, &raw, sizeof d);
      return d;
    }
    case DType::kString:
      break;
  }
  return NAN;
}

}  // namespace rsl::model
