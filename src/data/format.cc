#include "data/format.h"

#include <algorithm>

#include "base/codes.h"
#include "base/strings.h"
#include "data/compressed.h"

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
                            std::string_view data) {
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
  if (StartsWith(data, std::string_view("Obj\x01", 4))) return Format::kAvro;
  if (StartsWith(data, "PAR1")) return Format::kParquet;
  Compression compression = DetectCompression(name, data);
  std::string lower = ToLower(StripCompressionExtension(name));
  std::string head(data.substr(0, 4));
  if (compression != Compression::kNone) {
    // Only the first bytes matter: a corrupt stream is reported when the file is read.
    constexpr size_t kSniffBytes = 64;
    (void)DecompressHead(compression, data, name, kSniffBytes, &head);
  }
  if (EndsWith(lower, ".avro")) return Format::kAvro;
  if (EndsWith(lower, ".parquet") || EndsWith(lower, ".pq")) return Format::kParquet;
  if (EndsWith(lower, ".csv") || EndsWith(lower, ".tsv")) return Format::kCsv;
  if (EndsWith(lower, ".jsonl") || EndsWith(lower, ".json") || EndsWith(lower, ".ndjson")) {
    return Format::kJsonl;
  }
  if (StartsWith(head, "\xEF\xBB\xBF")) head.erase(0, 3);  // byte order mark
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

Error TextFormatError(const std::string& name, int64_t offset, bool decompressed,
                      const std::string& what) {
  if (!decompressed) return FormatError(name, offset, what);
  Error e(codes::kDataFormatError,
          name + ": byte " + std::to_string(offset) + " of the decompressed text: " + what);
  e.Value(name);
  return e;
}

size_t LastLineEnd(std::string_view text, bool quotes) {
  if (!quotes) {
    size_t nl = text.rfind('\n');
    return nl == std::string_view::npos ? 0 : nl + 1;
  }
  size_t end = 0;
  bool in_quotes = false;
  for (size_t i = 0; i < text.size(); i++) {
    char c = text[i];
    if (c == '"')
      in_quotes = !in_quotes;
    else if (c == '\n' && !in_quotes)
      end = i + 1;
  }
  return end;
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
  if (format == Format::kAvro || format == Format::kParquet) {
    Compression c = DetectCompression(name, blob->data());
    if (c != Compression::kNone) {
      return Error(codes::kDataFormatError, name + ": a " + CompressionName(c) + "-compressed " +
                                                FormatName(format) + " file cannot be read")
          .Value(name)
          .Hint(std::string("decompress it: ") + FormatName(format) +
                " compresses its blocks itself (write it with a codec instead)");
    }
  }
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
