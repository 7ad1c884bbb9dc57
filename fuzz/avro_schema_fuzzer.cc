// Avro/compact schema parser: never crashes; a parsed schema's JSON parses again to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "schema/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto s = rsl::schema::ParseSchema(text);
  if (s.ok()) {
    std::string json = s->ToJson();
    auto again = rsl::schema::ParseAvroSchema(json);
    if (!again.ok() || again->ToJson() != json) std::abort();
    for (const auto& f : s->record().fields) (void)f.type->ToString();
  } else if (s.error().code.empty()) {
    std::abort();
  }
  return 0;
}
