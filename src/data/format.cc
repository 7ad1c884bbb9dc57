#include "data/format.h"

#include <algorithm>
#include <cstring>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::data {

const char* FormatName(Format f) {
  switch (f) {
    case Format::kAvro:
      return "avro";
    case Format::kCsv:
      return "csv";
    case Format::kJsonl:
      return "jsonl";
    case Format::kParquet:
      return "parquet";
  }
  return "?";
}

Result<Format> DetectFormat(const std::string& declared, const std::string& name,
                            std::string_view head) {
  std::string d = ToLower(declared);
  if (d == "avro") return Format::kAvro;
  if (d == "csv") return Format::kCsv;
  if (d == "jsonl" || d == "json" || d == "ndjson") return Format::kJsonl;
  if (d == "parquet") return Format::kParquet;
  if (!d.empty()) {
    return Error(codes::kDataFormatError, "unknown format " + Quote(declared))
        .Path("format")
        .Hint("one of avro, csv, jsonl, parquet");
  }
  if (head.size() >= 4 && std::memcmp(head.data(), "Obj\x01", 4) == 0) return Format::kAvro;
  if (head.size() >= 4 && std::memcmp(head.data(), "PAR1", 4) == 0) return Format::kParquet;
  std::string lower = ToLower(name);
  for (const char* gz : {".gz", ".zst"}) {
    if (EndsWith(lower, gz)) {
      return Error(codes::kDataFormatError, "compressed text files are not supported")
          .Value(name)
          .Hint("decompress it, or use Parquet or Avro, whose blocks are compressed");
    }
  }
  if (EndsWith(lower, ".avro")) return Format::kAvro;
  if (EndsWith(lower, ".parquet") || EndsWith(lower, ".pq")) return Format::kParquet;
  if (EndsWith(lower, ".csv") || EndsWith(lower, ".tsv")) return Format::kCsv;
  if (EndsWith(lower, ".jsonl") || EndsWith(lower, ".json") || EndsWith(lower, ".ndjson")) {
    return Format::kJsonl;
  }
  if (!head.empty() && head[0] == '{') return Format::kJsonl;
  return Error(codes::kDataFormatError, "cannot tell the format of " + name)
      .Value(name)
      .Hint("set input.format to avro, csv, jsonl or parquet");
}

schema::TypePtr PrimitiveType(schema::Kind kind, bool nullable) {
  auto t = std::make_shared<schema::Type>();
  t->kind = kind;
  if (!nullable) return t;
  auto null_type = std::make_shared<schema::Type>();
  null_type->kind = schema::Kind::kNull;
  auto u = std::make_shared<schema::Type>();
  u->kind = schema::Kind::kUnion;
  u->branches = {null_type, t};
  return u;
}

schema::Schema RecordSchema(const std::string& name, std::vector<schema::Field> fields) {
  auto root = std::make_shared<schema::Type>();
  root->kind = schema::Kind::kRecord;
  root->name = name;
  root->fields = std::move(fields);
  schema::Schema s;
  s.root = root;
  return s;
}

Error FormatError(const std::string& name, int64_t offset, const std::string& what) {
  Error e(codes::kDataFormatError, name + ": byte " + std::to_string(offset) + ": " + what);
  e.Value(name);
  return e;
}

std::vector<size_t> SplitLines(std::string_view text, size_t begin, size_t target, bool quotes) {
  std::vector<size_t> starts{begin};
  size_t pos = begin;
  bool in_quotes = false;
  target = std::max<size_t>(target, 1);
  while (true) {
    size_t next = pos + target;
    if (next >= text.size()) break;
    if (quotes) {
      in_quotes ^= (std::count(text.data() + pos, text.data() + next, '"') & 1) != 0;
    }
    size_t i = next;
    for (; i < text.size(); i++) {
      char c = text[i];
      if (quotes && c == '"')
        in_quotes = !in_quotes;
      else if (c == '\n' && !in_quotes)
        break;
    }
    if (i + 1 >= text.size()) break;
    pos = i + 1;
    starts.push_back(pos);
  }
  starts.push_back(text.size());
  return starts;
}

Result<Binding> SelfDescribedReader::Bind(const Plan* plan) {
  plan_ = plan;
  auto b = Resolve(schema_, *plan, name_);
  if (b.ok()) map_ = b->writer_to_reader;
  return b;
}

Result<std::unique_ptr<FileReader>> OpenReader(Format format, std::shared_ptr<const Blob> blob,
                                               const std::string& name,
                                               const ReadOptions& options) {
  switch (format) {
    case Format::kAvro:
      return OpenAvro(std::move(blob), name);
    case Format::kCsv:
      return OpenCsv(std::move(blob), name, options);
    case Format::kJsonl:
      return OpenJsonl(std::move(blob), name, options);
    case Format::kParquet:
      return OpenParquet(std::move(blob), name);
  }
  return Error(codes::kInternal, "unknown format");
}

}  // namespace rsl::data
