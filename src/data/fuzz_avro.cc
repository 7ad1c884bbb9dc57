// libFuzzer target for the avro reader (make fuzz).
#include "data/fuzz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rsl::data::FuzzOne(rsl::data::Format::kAvro, data, size);
  return 0;
}
