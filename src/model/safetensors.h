// .safetensors reader: an 8-byte little-endian header length N, N bytes of JSON
// {"<tensor>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {string: string}}, then the data region (offsets are relative to it).
// https://github.com/huggingface/safetensors#format
//
// Bounds-checked: the header must fit the file, offsets must lie in the data region, match
// the shape and dtype exactly and not overlap. Every violation is DATA_FORMAT_ERROR naming
// the file and the tensor.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/tensor.h"

namespace rsl::model {

//! Refused beyond this (the reference implementation's limit is 100 MB as well).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

//! A tensor of a dtype RSL does not read (F8_E8M0, F4, C64, ...): its header entry and data
//! offsets were checked, its bytes are not interpreted.
struct UnreadTensor {
  std::string name;
  std::string stored_type;  //!< "F8_E8M0"
  std::vector<int64_t> shape;
};

struct SafetensorsFile {
  std::vector<Tensor> tensors;       //!< sorted by name; data views the parsed buffer
  std::vector<UnreadTensor> unread;  //!< sorted by name
  std::map<std::string, std::string> metadata;
};

//! Parses a whole file held in `bytes` (which the tensors view and must outlive them).
//! Read dtypes: BOOL U8 I8 U16 I16 U32 I32 U64 I64 F16 BF16 F32 F64 F8_E4M3 F8_E5M2; a
//! tensor of another dtype is listed in `unread` (a file is not refused for a tensor nobody
//! checks: signature.h decides).
Result<SafetensorsFile> ParseSafetensors(std::string_view bytes, const std::string& file);

//! Serialises tensors as a .safetensors file (used by tests and tools to write real files).
//! Each entry: name, safetensors dtype ("F32"), shape, raw little-endian bytes.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
std::string WriteSafetensors(const std::vector<SafetensorsEntry>& entries,
                             const std::map<std::string, std::string>& metadata = {});

}  // namespace rsl::model
