// The files `rsl-controller detect` reads from other systems: a Hadoop *-site.xml and an AWS
// CLI INI file. Anything is parsed or refused with its place - never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cli/detect_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto site = rsl::cli::ParseHadoopSite(text, "core-site.xml");
  if (!site.ok() && (site.error().pos.line < 1 || site.error().pos.file.empty())) std::abort();
  auto ini = rsl::cli::ParseAwsIni(text, "credentials");
  if (!ini.ok() && ini.error().pos.line < 1) std::abort();
  return 0;
}
