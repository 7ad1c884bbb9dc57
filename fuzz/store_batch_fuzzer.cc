// A transition log record's payload (store/batch_codec.h): decode anything, never a crash or
// an out-of-bounds read; what decodes encodes to bytes that decode to the same rows.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "store/batch_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  rsl::store::Batch b;
  if (!rsl::store::DecodeBatchRows(in, &b).ok()) return 0;
  std::string again;
  rsl::store::EncodeBatchRows(b, &again);
  rsl::store::Batch b2;
  if (!rsl::store::DecodeBatchRows(again, &b2).ok()) abort();
  std::string third;
  rsl::store::EncodeBatchRows(b2, &third);
  if (third != again) abort();
  return 0;
}
