// NumPy .npy reader (format versions 1.0, 2.0 and 3.0; C and Fortran order; little- and
// big-endian; every numeric dtype of SPEC.md but bfloat16, which numpy cannot store natively
// (use .safetensors BF16); fixed-width strings <U and |S as dtype "string").
// The format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//
// Every malformed input yields DATA_FORMAT_ERROR naming the file and what is wrong; nothing
// is read past the buffer (the header is parsed before the data is touched).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "model/tensor.h"

namespace rsl::model {

//! Headers larger than this are refused (numpy itself refuses > 10 000 bytes by default).
inline constexpr size_t kMaxNpyHeaderBytes = 1 << 20;

//! Parses a whole .npy file held in `bytes`. The tensor's data views `bytes`, which must
//! outlive it. `file` names the source in messages; the tensor is named `name`.
Result<Tensor> ParseNpy(std::string_view bytes, const std::string& file, const std::string& name);

}  // namespace rsl::model
