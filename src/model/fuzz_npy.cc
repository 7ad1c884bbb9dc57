// libFuzzer target: ParseNpy must never crash or read out of bounds, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto t = rsl::model::ParseNpy(bytes, "fuzz.npy", "fuzz");
  if (t.ok() && rsl::model::IsNumeric(t->dtype)) {
    int64_t n = t->ElementCount();
    for (int64_t i = 0; i < n && i < 64; ++i) (void)t->ValueAt(i);
    if (n > 0) (void)t->LogicalIndex(n - 1);
  }
  return 0;
}
