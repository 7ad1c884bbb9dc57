// A tensor read from a file: its element type, shape, memory order and a view of its bytes.
// The bytes belong to the buffer the tensor was read from (npy.h, safetensors.h): a Tensor
// must not outlive it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.h"

namespace rsl::model {

struct Tensor {
  std::string name;  //!< the .npy file's stem or the safetensors key
  DType dtype = DType::kFloat32;
  std::string stored_type;  //!< as written in the file: "<f4", "|S8", "BF16", ...
  size_t item_size = 0;     //!< bytes per element (the fixed width for kString)
  std::vector<int64_t> shape;
  bool fortran_order = false;  //!< column-major storage (.npy only)
  bool big_endian = false;     //!< .npy '>' byte order
  std::string_view data;       //!< item_size * ElementCount() bytes

  //! Product of the shape (1 for a scalar).
  int64_t ElementCount() const;
  //! The logical (C-order) index of the element stored at position `storage_pos`; differs
  //! from the row-major unravelling for Fortran-ordered tensors.
  std::vector<int64_t> LogicalIndex(int64_t storage_pos) const;
  //! The element at storage position `storage_pos` as a double. REQUIRES: IsNumeric(dtype).
  double ValueAt(int64_t storage_pos) const;
  //! The element at `storage_pos` exactly, for integer dtypes (see ElementToInt64).
  std::optional<int64_t> IntValueAt(int64_t storage_pos) const;
};

//! "[1, 128]" (also for index lists).
std::string ShapeToString(const std::vector<int64_t>& shape);

//! The most data bytes a tensor file (.npy, safetensors) may declare: half of int64's range,
//! so that offsets and sizes computed from it cannot overflow.
inline constexpr int64_t kMaxTensorDataBytes = std::numeric_limits<int64_t>::max() / 2;

//! Product of dims, or nullopt if a dim is negative or the product (times `item_size`)
//! overflows `limit`. Used by both readers to bounds-check headers before touching data.
std::optional<int64_t> CheckedByteCount(const std::vector<int64_t>& shape, size_t item_size,
                                        int64_t limit);

}  // namespace rsl::model
