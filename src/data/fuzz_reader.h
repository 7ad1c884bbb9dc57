// Shared body of the reader fuzzers (fuzz_avro, fuzz_csv, fuzz_jsonl, fuzz_parquet): open the
// bytes as one format, bind to the file's own schema (or a fixed declared one) and decode every
// chunk. Any outcome is fine except a crash, a sanitizer report or a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/format.h"
#include "schema/schema.h"

namespace rsl::data {

inline void FuzzOne(Format format, const uint8_t* data, size_t size) {
  auto blob = MakeBlob(std::string(reinterpret_cast<const char*>(data), size));
  ReadOptions opt;
  opt.text_chunk_bytes = 64;
  auto reader = OpenReader(format, blob, "fuzz", opt);
  if (!reader.ok()) return;
  static const auto kDeclared = schema::ParseSchema(
      R"({"type":"record","name":"r","fields":[{"name":"a","type":["null","long"]},)"
      R"({"name":"b","type":["null","double"],"constraints":{"min":0}},)"
      R"({"name":"c","type":["null","string"],"constraints":{"enum":["x","y"]}},)"
      R"({"name":"t","type":["null","long"],"logicalType":"timestamp-micros"},)"
      // nested paths (Parquet): a.b, items[], m{}
      R"({"name":"n","type":["null",{"type":"record","name":"n","fields":[)"
      R"({"name":"b","type":["null","long"],"constraints":{"min":0}}]}],"default":null},)"
      R"({"name":"l","type":["null",{"type":"array","items":["null","long"]}],"default":null,)"
      R"("constraints":{"max":9}},)"
      R"({"name":"m","type":["null",{"type":"map","values":["null","string"]}],"default":null,)"
      R"("constraints":{"enum":["x"]}}]})");
  for (int pass = 0; pass < 2; pass++) {
    const schema::Schema& s = pass == 0 ? (*reader)->writer_schema() : *kDeclared;
    if (pass == 1 && !kDeclared.ok()) return;
    Plan plan;
    BuildPlan(s, s.record().fields.empty() ? "" : s.record().fields[0].name, &plan);
    if (!(*reader)->Bind(&plan).ok()) continue;
    DistinctCounter keys(plan.key_field >= 0 &&
                         plan.fields[plan.key_field].kind == ValueKind::kString);
    KeyCollector* collector = keys.NewCollector();
    for (size_t c = 0; c < (*reader)->chunks(); c++) {
      ChunkSink sink(&plan, collector);
      if (!(*reader)->ReadChunk(c, &sink).ok()) break;
    }
    (void)keys.Count(1);
    if (pass == 0) {
      // Re-open: Bind may only be called once per reader.
      reader = OpenReader(format, blob, "fuzz", opt);
      if (!reader.ok()) return;
    }
  }
}

}  // namespace rsl::data
