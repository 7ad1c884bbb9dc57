#include "model/safetensors.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::model {
namespace {

constexpr size_t kLengthPrefix = 8;

struct StDtype {
  const char* name;
  DType dtype;
};
constexpr StDtype kDtypes[] = {
    {"BOOL", DType::kBool},   {"U8", DType::kUint8},           {"I8", DType::kInt8},
    {"U16", DType::kUint16},  {"I16", DType::kInt16},          {"U32", DType::kUint32},
    {"I32", DType::kInt32},   {"U64", DType::kUint64},         {"I64", DType::kInt64},
    {"F16", DType::kFloat16}, {"BF16", DType::kBfloat16},      {"F32", DType::kFloat32},
    {"F64", DType::kFloat64}, {"F8_E4M3", DType::kFloat8E4M3}, {"F8_E5M2", DType::kFloat8E5M2},
};

Error SafetensorsError(const std::string& file, const std::string& message) {
  Error e(codes::kDataFormatError, message);
  e.At(SourcePos{file, 0, 0});
  e.Hint("write it with safetensors' save_file, or check that the file is complete");
  return e;
}

}  // namespace

Result<SafetensorsFile> ParseSafetensors(std::string_view bytes, const std::string& file) {
  if (bytes.size() < kLengthPrefix) {
    return SafetensorsError(file, "not a .safetensors file: " + std::to_string(bytes.size()) +
                                      " bytes, shorter than the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (size_t i = 0; i < kLengthPrefix; ++i) {
    header_len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return SafetensorsError(file, "header length " + std::to_string(header_len) +
                                      " exceeds the limit of " +
                                      std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  if (header_len > bytes.size() - kLengthPrefix) {
    return SafetensorsError(file, "truncated: header length " + std::to_string(header_len) +
                                      " but only " + std::to_string(bytes.size() - kLengthPrefix) +
                                      " bytes follow");
  }
  std::string_view header = bytes.substr(kLengthPrefix, header_len);
  std::string_view data = bytes.substr(kLengthPrefix + header_len);
  auto json = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return SafetensorsError(file, "header is not a JSON object");
  }

  SafetensorsFile out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [key, entry] : json.items()) {
    if (key == "__metadata__") {
      if (!entry.is_object()) return SafetensorsError(file, "__metadata__ must be an object");
      for (const auto& [mk, mv] : entry.items()) {
        if (!mv.is_string()) {
          return SafetensorsError(file, "__metadata__." + mk + " must be a string");
        }
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    std::string where = "tensor " + Quote(key);
    if (!entry.is_object()) return SafetensorsError(file, where + ": entry must be an object");
    auto dtype_it = entry.find("dtype");
    auto shape_it = entry.find("shape");
    auto offsets_it = entry.find("data_offsets");
    if (dtype_it == entry.end() || shape_it == entry.end() || offsets_it == entry.end()) {
      return SafetensorsError(file, where + ": needs dtype, shape and data_offsets");
    }
    if (!dtype_it->is_string()) return SafetensorsError(file, where + ": dtype must be a string");
    std::string st_dtype = dtype_it->get<std::string>();
    const StDtype* known = nullptr;
    for (const auto& d : kDtypes) {
      if (st_dtype == d.name) known = &d;
    }
    Tensor t;
    t.name = key;
    t.dtype = known ? known->dtype : DType::kUint8;
    t.stored_type = st_dtype;
    t.item_size = DTypeSize(t.dtype);
    if (!shape_it->is_array()) return SafetensorsError(file, where + ": shape must be an array");
    for (const auto& dim : *shape_it) {
      if (!dim.is_number_unsigned() ||
          dim.get<uint64_t>() > static_cast<uint64_t>(kMaxTensorDataBytes)) {
        return SafetensorsError(file, where + ": shape entries must be non-negative integers");
      }
      t.shape.push_back(static_cast<int64_t>(dim.get<uint64_t>()));
    }
    if (!offsets_it->is_array() || offsets_it->size() != 2 ||
        !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned()) {
      return SafetensorsError(file, where + ": data_offsets must be [begin, end]");
    }
    uint64_t begin = (*offsets_it)[0].get<uint64_t>();
    uint64_t end = (*offsets_it)[1].get<uint64_t>();
    if (begin > end || end > data.size()) {
      return SafetensorsError(file, where + ": data_offsets [" + std::to_string(begin) + ", " +
                                        std::to_string(end) + "] outside the data region of " +
                                        std::to_string(data.size()) + " bytes");
    }
    ranges.emplace_back(begin, end);
    if (!known) {  // sub-byte and other formats: where they lie is checked, not their bytes
      out.unread.push_back({key, st_dtype, std::move(t.shape)});
      continue;
    }
    auto need = CheckedByteCount(t.shape, t.item_size, kMaxTensorDataBytes);
    if (!need || static_cast<uint64_t>(*need) != end - begin) {
      return SafetensorsError(file, where + ": shape " + ShapeToString(t.shape) + " of " +
                                        st_dtype + " does not match data_offsets [" +
                                        std::to_string(begin) + ", " + std::to_string(end) + "]");
    }
    t.data = data.substr(begin, end - begin);
    out.tensors.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      return SafetensorsError(
          file, "tensor data regions overlap at offset " + std::to_string(ranges[i].first));
    }
  }
  return out;
}

std::string WriteSafetensors(const std::vector<SafetensorsEntry>& entries,
                             const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& e : entries) {
    header[e.name] = {{"dtype", e.dtype},
                      {"shape", e.shape},
                      {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
    data += e.bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  // The reference writer pads the header with spaces to an 8-byte boundary.
  while ((kLengthPrefix + text.size()) % 8 != 0) text.push_back(' ');
  std::string out;
  uint64_t n = text.size();
  for (size_t i = 0; i < kLengthPrefix; ++i)
    out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + text + data;
}

}  // namespace rsl::model
