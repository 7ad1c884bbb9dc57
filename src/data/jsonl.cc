// JSON Lines: one JSON object per line, parsed with simdjson's On-Demand API over chunks of
// whole lines. A key the declared schema does not name is ignored; a declared field missing
// from a line is null, but a declared field without a default must occur in some record of
// the file (as a CSV column must be in the header). Values must fit the declared type (a JSON
// integer fits a double, a string fits a timestamp field when it is an ISO 8601 timestamp,
// arrays and maps item by item). A UTF-8 byte order mark is skipped. A gzip- or
// zstd-compressed file is read as one chunk, streaming: windows of decompressed text cut at
// the last complete line.
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/codes.h"
#include "base/strings.h"
#include "data/compressed.h"
#include "data/format.h"
#include "data/json_value.h"

namespace rsl::data {
namespace {

using schema::Kind;

// Lines sampled to infer the writer schema.
constexpr int kInferLines = 200;

class JsonlReader : public FileReader {
 public:
  JsonlReader(std::shared_ptr<const Blob> blob, std::string name, ReadOptions opt)
      : blob_(std::move(blob)), name_(std::move(name)), opt_(opt) {}

  Status Infer() {
    compression_ = DetectCompression(name_, blob_->data());
    std::string_view text = blob_->data();
    if (compression_ != Compression::kNone) {
      auto d = NewDecompressor(compression_, text, name_);
      while (!d->done() && (head_.size() < kHeadBytes || LastLineEnd(head_, false) == 0)) {
        RSL_RETURN_IF_ERROR(d->Read(kTextWindowBytes, &head_));
      }
      text = head_;
      if (!d->done()) text = text.substr(0, LastLineEnd(text, false));  // whole lines only
    }
    if (StartsWith(text, "\xEF\xBB\xBF")) body_ = 3;  // BOM
    simdjson::dom::parser parser;
    struct Seen {
      Kind kind = Kind::kNull;
      bool nullable = false;
      int lines = 0;
    };
    std::vector<std::string> order;
    std::map<std::string, Seen> seen;
    size_t pos = body_;
    int lines = 0;
    while (pos < text.size() && lines < kInferLines) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string_view::npos) nl = text.size();
      std::string_view line = Trim(text.substr(pos, nl - pos));
      size_t at = pos;
      pos = nl + 1;
      if (line.empty()) continue;
      lines++;
      simdjson::dom::element doc;
      auto err = parser.parse(line.data(), line.size()).get(doc);
      if (err) return Bad(at, std::string("invalid JSON: ") + simdjson::error_message(err));
      simdjson::dom::object obj;
      if (doc.get_object().get(obj)) return Bad(at, "line is not a JSON object");
      for (auto [key, value] : obj) {
        std::string k(key);
        if (!seen.count(k)) order.push_back(k);
        Seen& s = seen[k];
        s.lines++;
        Kind kind = Kind::kNull;
        switch (value.type()) {
          case simdjson::dom::element_type::INT64:
          case simdjson::dom::element_type::UINT64:
            kind = Kind::kLong;
            break;
          case simdjson::dom::element_type::DOUBLE:
            kind = Kind::kDouble;
            break;
          case simdjson::dom::element_type::STRING:
            kind = Kind::kString;
            break;
          case simdjson::dom::element_type::BOOL:
            kind = Kind::kBoolean;
            break;
          case simdjson::dom::element_type::ARRAY:
            kind = Kind::kArray;
            break;
          case simdjson::dom::element_type::OBJECT:
            kind = Kind::kMap;
            break;
          case simdjson::dom::element_type::NULL_VALUE:
            kind = Kind::kNull;
            break;
        }
        if (kind == Kind::kNull) {
          s.nullable = true;
        } else if (s.kind == Kind::kNull) {
          s.kind = kind;
        } else if (s.kind != kind) {
          bool numeric = (s.kind == Kind::kLong || s.kind == Kind::kDouble) &&
                         (kind == Kind::kLong || kind == Kind::kDouble);
          s.kind = numeric ? Kind::kDouble : Kind::kString;
        }
      }
    }
    std::vector<schema::Field> fields;
    for (const auto& k : order) {
      Seen& s = seen[k];
      Kind kind = s.kind == Kind::kNull ? Kind::kString : s.kind;
      schema::TypePtr t;
      if (kind == Kind::kArray || kind == Kind::kMap) {
        auto c = std::make_shared<schema::Type>();
        c->kind = kind;
        c->items = PrimitiveType(Kind::kString);
        t = c;
        if (s.nullable || s.lines < lines) {
          auto u = std::make_shared<schema::Type>(*PrimitiveType(Kind::kNull, true));
          u->branches[1] = c;
          t = u;
        }
      } else {
        t = PrimitiveType(kind, s.nullable || s.lines < lines);
      }
      fields.push_back(schema::Field{k, t, std::nullopt, {}, {}});
    }
    schema_ = RecordSchema("jsonl", std::move(fields));
    return Status::Ok();
  }

  const schema::Schema& writer_schema() const override { return schema_; }

  Result<Binding> Bind(const Plan* plan) override {
    plan_ = plan;
    // Names only: a declared field absent from every sampled line still reads as null.
    Binding b;
    for (const auto& f : schema_.record().fields) {
      int idx = plan->FieldIndex(f.name);
      b.writer_to_reader.push_back(idx);
      if (idx < 0) b.ignored.push_back(f.name);
    }
    for (size_t i = 0; i < plan->top_level; i++) index_[plan->fields[i].name] = static_cast<int>(i);
    if (compression_ != Compression::kNone) {
      starts_ = {body_, body_};  // one chunk, read streaming
    } else {
      starts_ = SplitLines(blob_->data(), body_, opt_.text_chunk_bytes, false);
    }
    present_.assign(chunks(), std::vector<char>(plan->fields.size(), 0));
    chunk_rows_.assign(chunks(), 0);
    return b;
  }

  Status Finish() override {
    int64_t rows = 0;
    for (int64_t r : chunk_rows_) rows += r;
    if (rows == 0) return Status::Ok();
    for (size_t f = 0; f < plan_->top_level; f++) {
      const FieldPlan& p = plan_->fields[f];
      if (p.default_json) continue;
      bool present = false;
      for (const auto& chunk : present_) present = present || chunk[f];
      if (present) continue;
      return MissingFieldError(p.name, schema_.record().fields, "missing from every record", name_);
    }
    return Status::Ok();
  }

  size_t chunks() const override { return starts_.size() - 1; }

  Status ReadChunk(size_t chunk, ChunkSink* sink) override {
    Lines lines(plan_->fields.size(), chunk);
    if (compression_ != Compression::kNone) {
      RSL_RETURN_IF_ERROR(ReadStream(sink, &lines));
    } else {
      std::string_view text = blob_->data();
      size_t begin = starts_[chunk], end = starts_[chunk + 1];
      RSL_RETURN_IF_ERROR(ReadLines(text.substr(begin, end - begin), begin, sink, &lines));
    }
    sink->rows = lines.row;
    chunk_rows_[chunk] = lines.row;
    return Status::Ok();
  }

 private:
  // The state of one chunk's decoding, carried from one run of lines to the next.
  struct Lines {
    Lines(size_t nfields, size_t chunk) : seen_row(nfields, -1), chunk(chunk) {}
    simdjson::dom::parser parser;
    std::vector<int64_t> seen_row;  //!< per declared field: the last row that had its key
    size_t chunk;
    int64_t row = 0;
  };

  // The lines of a compressed file, in runs of whole lines after the byte order mark.
  Status ReadStream(ChunkSink* sink, Lines* lines) {
    auto d = NewDecompressor(compression_, blob_->data(), name_);
    return StreamLines(
        d.get(), body_, /*quotes=*/false, [sink] { return sink->failed(); },
        [&](std::string_view text, int64_t offset) {
          return ReadLines(text, offset, sink, lines);
        });
  }

  // Decodes the lines of `text`, which lies at byte `offset` of the (decompressed) file.
  Status ReadLines(std::string_view text, int64_t offset, ChunkSink* sink, Lines* lines) {
    // The padded copy keeps SIMDJSON_PADDING readable bytes after every line, so lines are
    // parsed in place (the DOM parser picks the best SIMD kernel at run time).
    simdjson::padded_string buf(text.data(), text.size());
    const size_t nfields = plan_->top_level;
    std::vector<int64_t>& seen_row = lines->seen_row;
    int64_t row = lines->row;
    size_t pos = 0;
    std::string_view all(buf.data(), text.size());
    while (pos < all.size()) {
      size_t nl = all.find('\n', pos);
      if (nl == std::string_view::npos) nl = all.size();
      int64_t line_at = offset + static_cast<int64_t>(pos);
      std::string_view line = all.substr(pos, nl - pos);
      pos = nl + 1;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      simdjson::dom::element doc;
      auto err = lines->parser.parse(line.data(), line.size(), false).get(doc);
      if (err) {
        lines->row = row;
        return Bad(line_at, std::string("invalid JSON line: ") + simdjson::error_message(err));
      }
      simdjson::dom::object obj;
      if (doc.get_object().get(obj)) {
        lines->row = row;
        return Bad(line_at, "line is not a JSON object");
      }
      for (auto [key, value] : obj) {
        auto it = index_.find(key);
        if (it == index_.end()) continue;  // not declared: ignored
        int r = it->second;
        if (seen_row[r] == row) continue;  // duplicate key: first wins
        seen_row[r] = row;
        present_[lines->chunk][r] = 1;
        Deliver(sink, r, row, value);
      }
      for (size_t r = 0; r < nfields; r++) {
        if (seen_row[r] != row) sink->Null(static_cast<int>(r));
      }
      row++;
      if (sink->failed()) break;
    }
    lines->row = row;
    return Status::Ok();
  }

  Error Bad(int64_t at, const std::string& what) const {
    return TextFormatError(name_, at, compression_ != Compression::kNone, what);
  }

  void Deliver(ChunkSink* sink, int r, int64_t row, simdjson::dom::element v) {
    using T = simdjson::dom::element_type;
    const FieldPlan& f = plan_->fields[r];
    T type = v.type();
    if (type == T::NULL_VALUE) {
      sink->Null(r);
      return;
    }
    switch (f.kind) {
      case ValueKind::kInt:
        if (type == T::INT64) {
          int64_t x = v.get_int64().value_unsafe();
          if (f.base->kind == Kind::kInt && !FitsInt32(x)) {
            sink->TypeError(r, row, simdjson::to_string(v), kOutsideInt);
          } else {
            sink->Int(r, row, x);
          }
        } else if (type == T::UINT64) {
          sink->TypeError(r, row, simdjson::to_string(v),
                          f.base->kind == Kind::kInt ? kOutsideInt : kOutsideLong);
        } else if (type == T::STRING && f.ts_scale != 0) {
          std::string_view s = v.get_string().value_unsafe();
          int64_t micros;
          if (ParseTimestampMicros(s, &micros)) {
            sink->Int(r, row, f.ts_scale > 0 ? micros / f.ts_scale : micros * -f.ts_scale);
          } else {
            sink->TypeError(r, row, s, "a timestamp");
          }
        } else {
          sink->TypeError(r, row, simdjson::to_string(v), "an integer");
        }
        return;
      case ValueKind::kDouble:
        if (type == T::DOUBLE)
          sink->Double(r, row, v.get_double().value_unsafe());
        else if (type == T::INT64)
          sink->Double(r, row, static_cast<double>(v.get_int64().value_unsafe()));
        else if (type == T::UINT64)
          sink->Double(r, row, static_cast<double>(v.get_uint64().value_unsafe()));
        else
          sink->TypeError(r, row, simdjson::to_string(v), "a number");
        return;
      case ValueKind::kString:
        if (type == T::STRING)
          sink->String(r, row, v.get_string().value_unsafe());
        else
          sink->TypeError(r, row, simdjson::to_string(v), "a string");
        return;
      case ValueKind::kBool:
        if (type == T::BOOL)
          sink->Bool(r, v.get_bool().value_unsafe());
        else
          sink->TypeError(r, row, simdjson::to_string(v), "a boolean");
        return;
      case ValueKind::kOther:
        if (!JsonFits(*f.base, v)) {
          sink->TypeError(r, row, simdjson::to_string(v), NestedExpectation(*f.base));
        } else if (type == T::ARRAY) {
          sink->Other(r, row, static_cast<int64_t>(v.get_array().value_unsafe().size()));
        } else {
          sink->Other(r, row);
        }
        return;
    }
  }

  std::shared_ptr<const Blob> blob_;
  std::string name_;
  ReadOptions opt_;
  Compression compression_ = Compression::kNone;
  std::string head_;  //!< a compressed file's first decompressed bytes (the sampled lines)
  schema::Schema schema_;
  const Plan* plan_ = nullptr;
  std::unordered_map<std::string_view, int> index_;
  std::vector<size_t> starts_;
  size_t body_ = 0;                         //!< past the byte order mark
  std::vector<std::vector<char>> present_;  //!< per chunk, per declared field: key seen
  std::vector<int64_t> chunk_rows_;
};

}  // namespace

Result<std::unique_ptr<FileReader>> OpenJsonl(std::shared_ptr<const Blob> blob,
                                              const std::string& name, const ReadOptions& options) {
  auto r = std::make_unique<JsonlReader>(blob, name, options);
  RSL_RETURN_IF_ERROR(
      StreamErrorOr(DetectCompression(name, blob->data()), blob->data(), name, r->Infer()));
  return std::unique_ptr<FileReader>(std::move(r));
}

}  // namespace rsl::data
