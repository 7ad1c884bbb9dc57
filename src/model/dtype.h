// Tensor element types: SPEC.md's dtype names, their sizes, and how a stored element becomes a
// double for value checks. Shared by the .npy and .safetensors readers and the signature check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rsl::model {

enum class DType {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
  kFloat16,
  kBfloat16,
  kFloat32,
  kFloat64,
  kFloat8E4M3,  //!< float8_e4m3fn: 4 exponent bits, 3 mantissa bits, no infinities (max 448)
  kFloat8E5M2,  //!< float8_e5m2: IEEE-like with infinities (max 57344)
  kString,      //!< fixed-width text or bytes (.npy <U / |S); elements are not numbers
};

//! SPEC.md's name: "float32", "bfloat16", "string", ...
const char* DTypeName(DType dtype);
//! The inverse of DTypeName; nullopt for a name SPEC.md does not list.
std::optional<DType> DTypeFromName(std::string_view name);
//! Size of one element in bytes (0 for kString, whose width is per tensor).
size_t DTypeSize(DType dtype);
bool IsFloat(DType dtype);
bool IsNumeric(DType dtype);  //!< everything but kString

//! IEEE 754 half, bfloat16 and the two FP8 formats' bit patterns to double (exact).
double HalfToDouble(uint16_t bits);
double Bfloat16ToDouble(uint16_t bits);
double Float8E4M3ToDouble(uint8_t bits);
double Float8E5M2ToDouble(uint8_t bits);

//! Reads one element of a numeric dtype from `p` (little-endian unless `big_endian`) as a
//! double. 64-bit integers beyond 2^53 lose precision, which range checks tolerate.
//! REQUIRES: IsNumeric(dtype) and p points at DTypeSize(dtype) readable bytes.
double ElementToDouble(DType dtype, const unsigned char* p, bool big_endian);

bool IsInteger(DType dtype);  //!< the signed and unsigned integer dtypes (not kBool)

//! Reads one element of an integer dtype exactly. nullopt only for a uint64 value above
//! INT64_MAX (above every int64 bound). REQUIRES: IsInteger(dtype), as ElementToDouble.
std::optional<int64_t> ElementToInt64(DType dtype, const unsigned char* p, bool big_endian);

}  // namespace rsl::model
