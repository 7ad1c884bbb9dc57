// CSV (RFC 4180): a header row names the fields; fields are separated by a configurable
// delimiter; quoted fields may hold delimiters, doubled quotes and line breaks; records end
// with LF or CRLF. An empty unquoted field is null; a quoted empty field is the empty string.
// Values are parsed by the declared type of their column (so "abc" in a double column is a
// DATA_SCHEMA_MISMATCH naming the row), which is also why CSV needs no writer types. Arrays
// and maps are cells holding JSON text ("[1.5, 2]"). An empty file has no records. A gzip- or
// zstd-compressed file is read as one chunk, streaming: windows of decompressed text cut at
// the last complete record.
#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/codes.h"
#include "base/strings.h"
#include "data/compressed.h"
#include "data/format.h"
#include "data/json_value.h"

namespace rsl::data {
namespace {

using schema::Kind;

// Where a run of text lies in the file (or in a compressed file's decompressed text): the
// byte offset of `base` there, for messages.
struct Span {
  const char* base;
  int64_t offset;
  int64_t At(const char* p) const { return offset + (p - base); }
};

class CsvReader : public FileReader {
 public:
  CsvReader(std::shared_ptr<const Blob> blob, std::string name, ReadOptions opt)
      : blob_(std::move(blob)), name_(std::move(name)), opt_(opt) {}

  Status ParseHeader() {
    compression_ = DetectCompression(name_, blob_->data());
    std::string_view text = blob_->data();
    bool whole = true;  // `text` holds the whole (decompressed) file
    if (compression_ != Compression::kNone) {
      RSL_RETURN_IF_ERROR(LoadHead(&whole));
      text = head_;
    }
    const Span at{text.data(), 0};
    if (text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0) body_ = 3;  // BOM
    auto root = std::make_shared<schema::Type>();
    root->kind = Kind::kRecord;
    root->name = "csv";
    auto string_type = std::make_shared<schema::Type>();
    string_type->kind = Kind::kString;
    const char* p = text.data() + body_;
    const char* end = text.data() + text.size();
    if (p == end) {  // no header and no records: an empty file, not a corrupt one
      empty_ = true;
      schema_.root = root;
      return Status::Ok();
    }
    std::string scratch;
    while (true) {
      std::string_view value;
      bool quoted = false;
      RSL_RETURN_IF_ERROR(Field(&p, end, &value, &quoted, &scratch, at));
      std::string n = std::string(Trim(value));
      if (n.empty()) return Bad(at, p, "empty column name in the header");
      for (const auto& f : root->fields) {
        if (f.name == n) return Bad(at, p, "duplicate column " + Quote(n));
      }
      root->fields.push_back(schema::Field{n, string_type, std::nullopt, {}, {}});
      if (PastSeparator(&p, end)) continue;
      break;
    }
    body_ = p - text.data();
    // From a partial head, only its complete records are sampled.
    const char* sample_end = whole ? end : text.data() + std::max(LastLineEnd(text, true), body_);
    InferTypes(p, sample_end, root.get(), at);
    schema_.root = root;
    return Status::Ok();
  }

  // Types of the first kSampleRows records: long, double, boolean, timestamp (ISO 8601,
  // as timestamp-micros), else string; nullable when a sampled value is empty. Only for
  // reporting (scan, profile): validation parses by the declared types.
  void InferTypes(const char* p, const char* end, schema::Type* root, const Span& at) {
    constexpr int kSampleRows = 200;
    const size_t n = root->fields.size();
    std::vector<bool> is_long(n, true), is_double(n, true), is_bool(n, true), is_ts(n, true),
        nullable(n, false), any(n, false);
    std::string scratch;
    for (int rows = 0; rows < kSampleRows && p < end; rows++) {
      size_t col = 0;
      while (true) {
        std::string_view v;
        bool quoted = false;
        if (!Field(&p, end, &v, &quoted, &scratch, at).ok()) return;
        if (col < n) {
          if (v.empty()) {
            nullable[col] = true;
          } else {
            any[col] = true;
            int64_t i;
            double d;
            bool b;
            auto ri = std::from_chars(v.data(), v.data() + v.size(), i);
            auto rd = std::from_chars(v.data(), v.data() + v.size(), d);
            if (!(ri.ec == std::errc() && ri.ptr == v.data() + v.size())) is_long[col] = false;
            if (!(rd.ec == std::errc() && rd.ptr == v.data() + v.size())) is_double[col] = false;
            if (!ParseBool(v, &b) || v == "0" || v == "1") is_bool[col] = false;
            if (!ParseTimestampMicros(v, &i)) is_ts[col] = false;
          }
        }
        col++;
        if (PastSeparator(&p, end)) continue;
        break;
      }
    }
    for (size_t c = 0; c < n; c++) {
      Kind k = Kind::kString;
      std::string logical;
      if (any[c]) {
        if (is_long[c])
          k = Kind::kLong;
        else if (is_double[c])
          k = Kind::kDouble;
        else if (is_bool[c])
          k = Kind::kBoolean;
        else if (is_ts[c]) {
          k = Kind::kLong;
          logical = "timestamp-micros";
        }
      }
      auto t = std::const_pointer_cast<schema::Type>(PrimitiveType(k, nullable[c]));
      if (!logical.empty()) {
        auto base = std::make_shared<schema::Type>(t->NonNull());
        base->logical_type = logical;
        if (t->kind == Kind::kUnion)
          t->branches[1] = base;
        else
          t = base;
      }
      root->fields[c].type = t;
    }
  }

  const schema::Schema& writer_schema() const override { return schema_; }

  Result<Binding> Bind(const Plan* plan) override {
    plan_ = plan;
    if (empty_) {
      starts_ = {body_};  // no chunks
      return Binding{};
    }
    auto b = Resolve(schema_, *plan, name_, /*check_types=*/false);
    if (!b.ok()) return b;
    map_ = b->writer_to_reader;
    if (compression_ != Compression::kNone) {
      starts_ = {body_, body_};  // one chunk, read streaming
    } else {
      starts_ = SplitLines(blob_->data(), body_, opt_.text_chunk_bytes, true);
    }
    return b;
  }

  size_t chunks() const override { return starts_.size() - 1; }

  Status ReadChunk(size_t chunk, ChunkSink* sink) override {
    int64_t row = 0;
    if (compression_ != Compression::kNone) {
      RSL_RETURN_IF_ERROR(ReadStream(sink, &row));
    } else {
      const char* base = blob_->data().data();
      RSL_RETURN_IF_ERROR(
          ReadRecords(base + starts_[chunk], base + starts_[chunk + 1], Span{base, 0}, sink, &row));
    }
    sink->rows = row;
    return Status::Ok();
  }

 private:
  // Decompresses the first kHeadBytes (more when the first record is longer) into head_;
  // *whole tells whether that is the whole text.
  Status LoadHead(bool* whole) {
    auto d = NewDecompressor(compression_, blob_->data(), name_);
    while (!d->done() && (head_.size() < kHeadBytes || LastLineEnd(head_, true) == 0)) {
      RSL_RETURN_IF_ERROR(d->Read(kTextWindowBytes, &head_));
    }
    *whole = d->done();
    return Status::Ok();
  }

  // The records of a compressed file, in runs of whole records after the header.
  Status ReadStream(ChunkSink* sink, int64_t* row) {
    auto d = NewDecompressor(compression_, blob_->data(), name_);
    return StreamLines(
        d.get(), body_, /*quotes=*/true, [sink] { return sink->failed(); },
        [&](std::string_view text, int64_t offset) {
          return ReadRecords(text.data(), text.data() + text.size(), Span{text.data(), offset},
                             sink, row);
        });
  }

  // Decodes the records in [p, end), which starts and ends at record boundaries; *row counts
  // them on from its value.
  Status ReadRecords(const char* p, const char* end, const Span& at, ChunkSink* sink,
                     int64_t* rows) {
    const size_t ncols = map_.size();
    std::string scratch;
    int64_t row = *rows;
    while (p < end) {
      if (ncols > 1 && (*p == '\n' || *p == '\r')) {  // blank line
        if (*p == '\r') p++;
        if (p < end && *p == '\n') p++;
        continue;
      }
      const char* row_start = p;
      size_t col = 0;
      while (true) {
        std::string_view value;
        bool quoted = false;
        RSL_RETURN_IF_ERROR(Field(&p, end, &value, &quoted, &scratch, at));
        if (col < ncols) {
          int r = map_[col];
          if (r >= 0) Deliver(sink, r, row, value, quoted);
        }
        col++;
        if (PastSeparator(&p, end)) continue;
        break;
      }
      if (col != ncols) {
        *rows = row;
        return Bad(at, row_start,
                   "record has " + std::to_string(col) + " fields, the header has " +
                       std::to_string(ncols));
      }
      row++;
      if (sink->failed()) break;
    }
    *rows = row;
    return Status::Ok();
  }

  Error Bad(const Span& at, const char* p, const std::string& what) const {
    return TextFormatError(name_, at.At(p), compression_ != Compression::kNone, what);
  }

  // Moves *p past what follows a field: the delimiter (true: the record goes on) or the line
  // end, \n or \r\n (false: the record ended).
  bool PastSeparator(const char** p, const char* end) const {
    if (*p < end && **p == opt_.csv_delimiter) {
      ++*p;
      return true;
    }
    if (*p < end && **p == '\r') ++*p;
    if (*p < end && **p == '\n') ++*p;
    return false;
  }

  // Reads one field at *p, leaving *p at the delimiter, line end or end.
  Status Field(const char** pp, const char* end, std::string_view* value, bool* quoted,
               std::string* scratch, const Span& at) {
    const char* p = *pp;
    const char d = opt_.csv_delimiter;
    if (p < end && *p == '"') {
      *quoted = true;
      const char* start = ++p;
      bool escaped = false;
      while (true) {
        const char* q = static_cast<const char*>(std::memchr(p, '"', end - p));
        if (q == nullptr) {
          return Bad(at, start - 1, "quoted field never closed (truncated file?)");
        }
        if (q + 1 < end && q[1] == '"') {
          escaped = true;
          p = q + 2;
          continue;
        }
        p = q + 1;
        if (!escaped) {
          *value = std::string_view(start, q - start);
        } else {
          scratch->clear();
          for (const char* c = start; c < q; c++) {
            scratch->push_back(*c);
            if (*c == '"') c++;
          }
          *value = *scratch;
        }
        break;
      }
      if (p < end && *p != d && *p != '\n' && *p != '\r') {
        return Bad(at, p, "unexpected character after a closing quote");
      }
      *pp = p;
      return Status::Ok();
    }
    *quoted = false;
    const char* start = p;
    while (p < end && *p != d && *p != '\n' && *p != '\r') p++;
    *value = std::string_view(start, p - start);
    *pp = p;
    return Status::Ok();
  }

  void Deliver(ChunkSink* sink, int r, int64_t row, std::string_view v, bool quoted) {
    const FieldPlan& f = plan_->fields[r];
    if (v.empty() && (!quoted || f.kind != ValueKind::kString)) {
      sink->Null(r);
      return;
    }
    switch (f.kind) {
      case ValueKind::kString:
        sink->String(r, row, v);
        return;
      case ValueKind::kInt: {
        int64_t x;
        auto res = std::from_chars(v.data(), v.data() + v.size(), x);
        bool whole = res.ptr == v.data() + v.size();
        if (res.ec == std::errc() && whole) {
          if (f.base->kind == Kind::kInt && !FitsInt32(x)) {
            sink->TypeError(r, row, v, kOutsideInt);
          } else {
            sink->Int(r, row, x);
          }
          return;
        }
        if (res.ec == std::errc::result_out_of_range && whole) {
          sink->TypeError(r, row, v, f.base->kind == Kind::kInt ? kOutsideInt : kOutsideLong);
          return;
        }
        int64_t micros;
        if (f.ts_scale != 0 && ParseTimestampMicros(v, &micros)) {
          sink->Int(r, row, f.ts_scale > 0 ? micros / f.ts_scale : micros * -f.ts_scale);
          return;
        }
        sink->TypeError(r, row, v, f.ts_scale != 0 ? "a timestamp" : "an integer");
        return;
      }
      case ValueKind::kDouble: {
        double x;
        auto res = std::from_chars(v.data(), v.data() + v.size(), x);
        if (res.ec == std::errc() && res.ptr == v.data() + v.size()) {
          sink->Double(r, row, x);
          return;
        }
        sink->TypeError(r, row, v, "a number");
        return;
      }
      case ValueKind::kBool: {
        bool b;
        if (ParseBool(v, &b))
          sink->Bool(r, b);
        else
          sink->TypeError(r, row, v, "a boolean");
        return;
      }
      case ValueKind::kOther: {  // arrays and maps as JSON text: [1.5, 2], {"k": 1}
        int64_t items;
        if (JsonTextFits(*f.base, v, &items))
          sink->Other(r, row, items);
        else
          sink->TypeError(r, row, v, NestedExpectation(*f.base));
        return;
      }
    }
  }

  std::shared_ptr<const Blob> blob_;
  std::string name_;
  ReadOptions opt_;
  Compression compression_ = Compression::kNone;
  std::string head_;  //!< a compressed file's first decompressed bytes (header, sampled rows)
  schema::Schema schema_;
  size_t body_ = 0;     //!< where the records start (in the decompressed text when compressed)
  bool empty_ = false;  //!< a 0-byte file (or a BOM alone): no columns, no records
  const Plan* plan_ = nullptr;
  std::vector<int> map_;
  std::vector<size_t> starts_;
};

int Digits(std::string_view s, size_t pos, size_t n, bool* ok) {
  int v = 0;
  if (pos + n > s.size()) {
    *ok = false;
    return 0;
  }
  for (size_t i = pos; i < pos + n; i++) {
    if (s[i] < '0' || s[i] > '9') *ok = false;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

int DaysInMonth(int year, int month) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

}  // namespace

bool ParseTimestampMicros(std::string_view s, int64_t* micros) {
  bool ok = true;
  if (s.size() < 10 || s[4] != '-' || s[7] != '-') return false;
  int y = Digits(s, 0, 4, &ok), mo = Digits(s, 5, 2, &ok), d = Digits(s, 8, 2, &ok);
  if (!ok || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo)) return false;
  int64_t secs = DaysFromCivil(y, mo, d) * 86400;
  int64_t frac = 0;
  size_t i = 10;
  if (i < s.size() && (s[i] == 'T' || s[i] == ' ')) {
    int h = Digits(s, i + 1, 2, &ok);
    if (i + 3 >= s.size() || s[i + 3] != ':') return false;
    int mi = Digits(s, i + 4, 2, &ok);
    int se = 0;
    i += 6;
    if (i < s.size() && s[i] == ':') {
      se = Digits(s, i + 1, 2, &ok);
      i += 3;
    }
    if (!ok || h > 23 || mi > 59 || se > 60) return false;
    secs += h * 3600 + mi * 60 + se;
    if (i < s.size() && s[i] == '.') {
      i++;
      int64_t scale = 100000;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        frac += (s[i] - '0') * scale;
        scale /= 10;
        i++;
      }
    }
  }
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    i++;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int sign = s[i] == '-' ? -1 : 1;
    int oh = Digits(s, i + 1, 2, &ok);
    size_t j = i + 3;
    if (j < s.size() && s[j] == ':') j++;
    int om = Digits(s, j, 2, &ok);
    if (!ok) return false;
    secs -= sign * (oh * 3600 + om * 60);
    i = j + 2;
  }
  if (i != s.size()) return false;
  *micros = secs * 1000000 + frac;
  return true;
}

bool ParseBool(std::string_view v, bool* out) {
  auto is = [&](std::string_view word) {  // case-insensitive, without allocating
    if (v.size() != word.size()) return false;
    for (size_t i = 0; i < v.size(); i++) {
      if ((v[i] | 0x20) != word[i]) return false;
    }
    return true;
  };
  if (v == "1" || is("true") || is("t"))
    *out = true;
  else if (v == "0" || is("false") || is("f"))
    *out = false;
  else
    return false;
  return true;
}

Result<std::unique_ptr<FileReader>> OpenCsv(std::shared_ptr<const Blob> blob,
                                            const std::string& name, const ReadOptions& options) {
  auto r = std::make_unique<CsvReader>(blob, name, options);
  RSL_RETURN_IF_ERROR(
      StreamErrorOr(DetectCompression(name, blob->data()), blob->data(), name, r->ParseHeader()));
  return std::unique_ptr<FileReader>(std::move(r));
}

}  // namespace rsl::data
