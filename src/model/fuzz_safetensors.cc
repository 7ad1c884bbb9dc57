// libFuzzer target: ParseSafetensors must never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto f = rsl::model::ParseSafetensors(bytes, "fuzz.safetensors");
  if (f.ok()) {
    for (const auto& t : f->tensors) {
      int64_t n = t.ElementCount();
      for (int64_t i = 0; i < n && i < 64; ++i) (void)t.ValueAt(i);
    }
  }
  return 0;
}
