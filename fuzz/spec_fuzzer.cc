// YAML + AIWorkload parser: any input must give a result or errors, never a crash; a valid
// result must survive the canonical round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "spec/canonical.h"
#include "spec/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  rsl::spec::ParseResult r = rsl::spec::ParseWorkload(text, "fuzz.yaml");
  for (const auto& e : r.errors) {
    if (e.code.empty() || e.message.empty()) std::abort();
  }
  if (r.ok()) {
    std::string json = rsl::spec::CanonicalJson(r.workload);
    auto back = rsl::spec::FromCanonicalJson(json);
    if (!back.ok() || rsl::spec::CanonicalJson(*back) != json) std::abort();
  }
  return 0;
}
