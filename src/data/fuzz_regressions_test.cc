// Every input a data reader's fuzzer once crashed on (fuzz/regressions/data_<format>_fuzzer/)
// must now give a clean result: opening and reading it ends in a status, whatever it says.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/file.h"
#include "data/fuzz_reader.h"

namespace rsl::data {
namespace {

namespace fs = std::filesystem;

TEST(DataFuzzRegressions, EveryKeptCrashReadsCleanly) {
  const std::string root = std::string(RSL_SOURCE_DIR) + "/fuzz/regressions/";
  const std::pair<const char*, Format> fuzzers[] = {{"data_parquet_fuzzer", Format::kParquet},
                                                    {"data_avro_fuzzer", Format::kAvro},
                                                    {"data_csv_fuzzer", Format::kCsv},
                                                    {"data_jsonl_fuzzer", Format::kJsonl}};
  int inputs = 0;
  for (const auto& [name, format] : fuzzers) {
    if (!fs::exists(root + name)) continue;
    for (const auto& e : fs::directory_iterator(root + name)) {
      auto bytes = ReadFile(e.path().string());
      ASSERT_TRUE(bytes.ok()) << e.path();
      SCOPED_TRACE(e.path().string());
      FuzzOne(format, reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
      inputs++;
    }
  }
  EXPECT_GE(inputs, 1);  // at least the Parquet file kept in session 33
}

}  // namespace
}  // namespace rsl::data
