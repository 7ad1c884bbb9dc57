// libFuzzer target for the parquet reader (make fuzz).
#include "data/fuzz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rsl::data::FuzzOne(rsl::data::Format::kParquet, data, size);
  return 0;
}
