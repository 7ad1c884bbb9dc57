#include "model/tensor.h"

namespace rsl::model {

int64_t Tensor::ElementCount() const {
  for (int64_t d : shape) {
    if (d == 0) return 0;  // checked first: the other dims' product may not fit
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> Tensor::LogicalIndex(int64_t storage_pos) const {
  std::vector<int64_t> index(shape.size(), 0);
  if (fortran_order) {
    // Column-major: the first dimension varies fastest.
    for (size_t dim_idx = 0; dim_idx < shape.size(); ++dim_idx) {
      int64_t dim = shape[dim_idx] > 0 ? shape[dim_idx] : 1;
      index[dim_idx] = storage_pos % dim;
      storage_pos /= dim;
    }
  } else {
    for (size_t k = shape.size(); k-- > 0;) {
      int64_t dim = shape[k] > 0 ? shape[k] : 1;
      index[k] = storage_pos % dim;
      storage_pos /= dim;
    }
  }
  return index;
}

double Tensor::ValueAt(int64_t storage_pos) const {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data()) +
                  static_cast<size_t>(storage_pos) * item_size;
  return ElementToDouble(dtype, p, big_endian);
}

std::optional<int64_t> Tensor::IntValueAt(int64_t storage_pos) const {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data()) +
                  static_cast<size_t>(storage_pos) * item_size;
  return ElementToInt64(dtype, p, big_endian);
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::optional<int64_t> CheckedByteCount(const std::vector<int64_t>& shape, size_t item_size,
                                        int64_t limit) {
  int64_t bytes = static_cast<int64_t>(item_size);
  if (bytes < 0 || bytes > limit) return std::nullopt;
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      elements = 0;
      continue;
    }
    if (elements > limit / d) return std::nullopt;
    elements *= d;
  }
  if (elements != 0 && bytes > limit / elements) return std::nullopt;
  return elements * bytes;
}

}  // namespace rsl::model
