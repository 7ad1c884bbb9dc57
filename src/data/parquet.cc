// Parquet (flat schemas): the footer (Thrift compact FileMetaData) gives the writer schema and
// the row groups; each row group is one chunk, decoded column by column. Columns the declared
// schema does not name are never decompressed. Supported: data pages v1 and v2, dictionary
// pages, encodings PLAIN, PLAIN_DICTIONARY/RLE_DICTIONARY, RLE (booleans and levels),
// DELTA_BINARY_PACKED (ints), BYTE_STREAM_SPLIT (floats); codecs none, snappy, gzip, zstd,
// LZ4_RAW, LZ4 (Hadoop framing or raw), Brotli.
// Nested columns (groups, repeated fields) are reported as unsupported.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/codes.h"
#include "base/strings.h"
#include "data/codec.h"
#include "data/decimal.h"
#include "data/format.h"
#include "data/thrift.h"

namespace rsl::data {
namespace {

using schema::Kind;
using thrift::Node;

enum PType {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixed = 7
};
enum Encoding {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9
};
enum PageType { kDataPage = 0, kDictionaryPage = 2, kDataPageV2 = 3 };

constexpr int64_t kJulianEpochDay = 2440588;  // INT96 timestamps: Julian day of 1970-01-01

struct Column {
  std::string name;
  PType type = kInt32;
  int32_t type_length = 0;
  bool optional = false;
  int64_t ts_divisor = 0;    // INT64 timestamps: 0 none
  bool is_unsigned = false;  // UINT_8..UINT_64 / INTEGER(isSigned=false)
  int decimal_scale = -1;    // DECIMAL: the scale (value = unscaled / 10^scale); -1 none
};

struct ChunkMeta {
  int column = 0;
  Codec codec = Codec::kNone;
  int64_t num_values = 0;
  int64_t start = 0;  // dictionary page if any, else first data page
  int64_t size = 0;   // total compressed size
};

struct RowGroup {
  int64_t rows = 0;
  std::vector<ChunkMeta> chunks;
};

// Bit-level reader for the RLE/bit-packed hybrid (Parquet "Encodings").
class Hybrid {
 public:
  Hybrid(const uint8_t* p, const uint8_t* end, int bit_width) : p_(p), end_(end), bw_(bit_width) {}

  // Decodes `n` values into out; false on malformed input.
  bool Decode(size_t n, uint32_t* out) {
    size_t got = 0;
    while (got < n) {
      uint64_t h = 0;
      for (int shift = 0;; shift += 7) {
        if (p_ >= end_ || shift > 35) return false;
        uint8_t b = *p_++;
        h |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
      }
      if (h & 1) {  // bit-packed groups of 8
        uint64_t count = (h >> 1) * 8;
        uint64_t bytes = (h >> 1) * static_cast<uint64_t>(bw_);
        if (bytes > static_cast<uint64_t>(end_ - p_)) {
          // Writers may end the last run short of the buffer: take what is there.
          bytes = end_ - p_;
          count = bw_ == 0 ? count : bytes * 8 / bw_;
        }
        uint64_t bitpos = 0;
        for (uint64_t k = 0; k < count && got < n; k++, got++) {
          uint32_t v = 0;
          for (int b = 0; b < bw_; b++, bitpos++) {
            v |= static_cast<uint32_t>((p_[bitpos >> 3] >> (bitpos & 7)) & 1) << b;
          }
          out[got] = v;
        }
        p_ += bytes;
        if (count == 0 && got < n) return false;
      } else {
        uint64_t count = h >> 1;
        int nbytes = (bw_ + 7) / 8;
        if (end_ - p_ < nbytes) return false;
        uint32_t v = 0;
        for (int b = 0; b < nbytes; b++) v |= static_cast<uint32_t>(p_[b]) << (8 * b);
        p_ += nbytes;
        if (count == 0) return false;
        for (uint64_t k = 0; k < count && got < n; k++) out[got++] = v;
      }
    }
    return true;
  }
  const uint8_t* pos() const { return p_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  int bw_;
};

// DELTA_BINARY_PACKED integers.
bool DecodeDelta(const uint8_t** pp, const uint8_t* end, size_t n, std::vector<int64_t>* out) {
  const uint8_t* p = *pp;
  auto uvar = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) return false;
      uint8_t b = *p++;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  uint64_t block, minis, total, first;
  if (!uvar(&block) || !uvar(&minis) || !uvar(&total) || !uvar(&first)) return false;
  if (minis == 0 || block == 0 || block % minis != 0 || block > (1u << 16)) return false;
  uint64_t per_mini = block / minis;
  int64_t value = static_cast<int64_t>((first >> 1) ^ -(first & 1));
  out->clear();
  if (total == 0) {
    *pp = p;
    return true;
  }
  out->push_back(value);
  while (out->size() < total) {
    uint64_t zz;
    if (!uvar(&zz)) return false;
    int64_t min_delta = static_cast<int64_t>((zz >> 1) ^ -(zz & 1));
    if (static_cast<uint64_t>(end - p) < minis) return false;
    const uint8_t* widths = p;
    p += minis;
    for (uint64_t m = 0; m < minis && out->size() < total; m++) {
      int bw = widths[m];
      if (bw > 64) return false;
      uint64_t bytes = per_mini * bw / 8;
      if (static_cast<uint64_t>(end - p) < bytes) return false;
      uint64_t bitpos = 0;
      for (uint64_t k = 0; k < per_mini && out->size() < total; k++) {
        uint64_t d = 0;
        for (int b = 0; b < bw; b++, bitpos++)
          d |= static_cast<uint64_t>((p[bitpos >> 3] >> (bitpos & 7)) & 1) << b;
        value = static_cast<int64_t>(static_cast<uint64_t>(value) +
                                     static_cast<uint64_t>(min_delta) + d);
        out->push_back(value);
      }
      p += bytes;
    }
  }
  if (out->size() > n + 0 && n > 0) out->resize(n);
  *pp = p;
  return true;
}

class ParquetReader : public SelfDescribedReader {
 public:
  ParquetReader(std::shared_ptr<const Blob> blob, std::string name)
      : SelfDescribedReader(std::move(blob), std::move(name)) {}

  Status Open() {
    std::string_view d = blob_->data();
    if (d.size() < 12 || std::memcmp(d.data(), "PAR1", 4) != 0) {
      return FormatError(name_, 0, "not a Parquet file (no PAR1 magic)");
    }
    if (std::memcmp(d.data() + d.size() - 4, "PAR1", 4) != 0) {
      return FormatError(name_, d.size() - 4, "no PAR1 magic at the end (truncated file?)");
    }
    uint32_t len;
    std::memcpy(&len, d.data() + d.size() - 8, 4);
    if (len > d.size() - 12)
      return FormatError(name_, d.size() - 8, "footer length exceeds the file");
    size_t footer_at = d.size() - 8 - len;
    Node meta;
    size_t used;
    std::string err = thrift::ReadStruct(d.substr(footer_at, len), &meta, &used);
    if (!err.empty()) return FormatError(name_, footer_at, "corrupt footer: " + err);
    const Node* schema = meta.Field(2);
    if (!schema || schema->items.empty())
      return FormatError(name_, footer_at, "footer has no schema");
    // Flat schemas: the root group, then leaf columns only.
    std::vector<schema::Field> fields;
    for (size_t i = 1; i < schema->items.size(); i++) {
      const Node& el = schema->items[i];
      Column c;
      c.name = std::string(el.Str(4));
      if (el.Int(5, 0) > 0 || !el.Field(1)) {
        return FormatError(name_, footer_at,
                           "column " + Quote(c.name) + " is nested (flat Parquet schemas only)");
      }
      int64_t rep = el.Int(3, 0);
      if (rep == 2) {
        return FormatError(name_, footer_at,
                           "column " + Quote(c.name) + " is repeated (flat Parquet schemas only)");
      }
      c.optional = rep == 1;
      c.type = static_cast<PType>(el.Int(1));
      c.type_length = static_cast<int32_t>(el.Int(2, 0));
      if (c.type < kBoolean || c.type > kFixed) {
        return FormatError(name_, footer_at, "column " + Quote(c.name) + " has an unknown type");
      }
      if (c.type == kFixed && (c.type_length <= 0 || c.type_length > (1 << 20))) {
        return FormatError(name_, footer_at, "column " + Quote(c.name) + " has a bad type_length");
      }
      fields.push_back(schema::Field{c.name, WriterType(el, &c), std::nullopt, {}, {}});
      columns_.push_back(c);
    }
    schema_ = RecordSchema(std::string(schema->items[0].Str(4)), std::move(fields));
    const Node* groups = meta.Field(4);
    if (groups) {
      for (const Node& g : groups->items) {
        RowGroup rg;
        rg.rows = g.Int(3);
        const Node* cols = g.Field(1);
        if (rg.rows < 0 || !cols || cols->items.size() != columns_.size()) {
          return FormatError(name_, footer_at, "row group does not match the schema");
        }
        for (size_t c = 0; c < cols->items.size(); c++) {
          const Node* md = cols->items[c].Field(3);
          if (!md) return FormatError(name_, footer_at, "column chunk without metadata");
          ChunkMeta cm;
          cm.column = static_cast<int>(c);
          switch (md->Int(4)) {
            case 0:
              cm.codec = Codec::kNone;
              break;
            case 1:
              cm.codec = Codec::kSnappy;
              break;
            case 2:
              cm.codec = Codec::kGzip;
              break;
            case 4:
              cm.codec = Codec::kBrotli;
              break;
            case 5:  // LZ4, deprecated: Hadoop's framing or a raw block, by writer
              cm.codec = Codec::kLz4Hadoop;
              break;
            case 6:
              cm.codec = Codec::kZstd;
              break;
            case 7:
              cm.codec = Codec::kLz4Raw;
              break;
            default:
              return FormatError(name_, footer_at,
                                 "column " + Quote(columns_[c].name) + ": unsupported codec " +
                                     std::to_string(md->Int(4)));
          }
          cm.num_values = md->Int(5);
          int64_t dict = md->Int(11, 0), data = md->Int(9, 0);
          cm.start = dict > 0 && dict < data ? dict : data;
          cm.size = md->Int(7);
          // The chunk of an empty row group is never read: some writers leave its data page
          // offset 0 (e.g. beside column key-value metadata), which is no place in the file.
          const bool located = (cm.num_values == 0 && rg.rows == 0) ||
                               (cm.start >= 4 && cm.size >= 0 &&
                                cm.start + cm.size <= static_cast<int64_t>(footer_at));
          if (!located || cm.num_values < 0) {
            return FormatError(
                name_, footer_at,
                "column chunk " + Quote(columns_[c].name) + " lies outside the file");
          }
          rg.chunks.push_back(cm);
        }
        groups_.push_back(std::move(rg));
      }
    }
    return Status::Ok();
  }

  size_t chunks() const override { return groups_.size(); }

  Status ReadChunk(size_t chunk, ChunkSink* sink) override {
    const RowGroup& rg = groups_[chunk];
    for (const ChunkMeta& cm : rg.chunks) {
      int r = map_[cm.column];
      if (r < 0) continue;
      RSL_RETURN_IF_ERROR(ReadColumn(cm, rg.rows, r, sink));
    }
    sink->rows = rg.rows;
    return Status::Ok();
  }

 private:
  schema::TypePtr WriterType(const Node& el, Column* c) {
    auto t = std::make_shared<schema::Type>();
    int64_t converted = el.Int(6, -1);
    const Node* logical = el.Field(10);
    // ConvertedType UINT_8..UINT_64 (11..14), or LogicalType INTEGER (5) with isSigned false.
    c->is_unsigned = (converted >= 11 && converted <= 14) ||
                     (logical && logical->Field(10) && logical->Field(10)->Field(2) &&
                      logical->Field(10)->Int(2, 1) == 0);
    // ConvertedType DECIMAL (5) with SchemaElement.scale (7), or LogicalType DECIMAL (5).
    if (converted == 5 || (logical && logical->Field(5))) {
      c->decimal_scale = static_cast<int>(
          logical && logical->Field(5) ? logical->Field(5)->Int(1, 0) : el.Int(7, 0));
      int64_t precision =
          logical && logical->Field(5) ? logical->Field(5)->Int(2, 0) : el.Int(8, 0);
      if (c->decimal_scale < 0 || c->decimal_scale > 38) c->decimal_scale = 0;
      // The decimal's value, declared as double (or float), or as a decimal of the same scale.
      t->kind = Kind::kDouble;
      t->logical_type = "decimal";
      t->scale = c->decimal_scale;
      t->precision = static_cast<int>(std::clamp<int64_t>(precision, c->decimal_scale, 1000));
      return Nullable(t, *c);
    }
    switch (c->type) {
      case kBoolean:
        t->kind = Kind::kBoolean;
        break;
      case kInt32:
        // UINT_32 does not fit an int
        t->kind = c->is_unsigned && UnsignedBits(el) >= 32 ? Kind::kLong : Kind::kInt;
        if (converted == 6 || (logical && logical->Field(6))) t->logical_type = "date";
        break;
      case kInt64:
      case kInt96:
        t->kind = Kind::kLong;
        if (c->type == kInt96) {
          t->logical_type = "timestamp-micros";
        } else if (converted == 9) {
          t->logical_type = "timestamp-millis";
        } else if (converted == 10) {
          t->logical_type = "timestamp-micros";
        } else if (logical && logical->Field(8)) {
          const Node* unit = logical->Field(8)->Field(2);
          if (unit && unit->Field(1))
            t->logical_type = "timestamp-millis";
          else if (unit && unit->Field(3))
            t->logical_type = "timestamp-nanos";
          else
            t->logical_type = "timestamp-micros";
        }
        break;
      case kFloat:
        t->kind = Kind::kFloat;
        break;
      case kDouble:
        t->kind = Kind::kDouble;
        break;
      case kByteArray: {
        bool text = converted == 0 || converted == 4 || converted == 19 ||
                    (logical && (logical->Field(1) || logical->Field(4) || logical->Field(12)));
        t->kind = text ? Kind::kString : Kind::kBytes;
        break;
      }
      case kFixed:
        t->kind = Kind::kFixed;
        t->name = c->name;
        t->size = c->type_length;
        break;
    }
    return Nullable(t, *c);
  }

  // The width of an unsigned integer column: UINT_8 (11), UINT_16 (12), else its
  // LogicalType INTEGER bitWidth, else 32/64.
  static int64_t UnsignedBits(const Node& el) {
    int64_t converted = el.Int(6, -1);
    if (converted == 11) return 8;
    if (converted == 12) return 16;
    const Node* logical = el.Field(10);
    if (logical && logical->Field(10)) return logical->Field(10)->Int(1, 32);
    return converted == 14 ? 64 : 32;
  }

  static schema::TypePtr Nullable(std::shared_ptr<schema::Type> t, const Column& c) {
    if (!c.optional) return t;
    auto n = std::make_shared<schema::Type>();
    n->kind = Kind::kNull;
    auto u = std::make_shared<schema::Type>();
    u->kind = Kind::kUnion;
    u->branches = {n, t};
    return u;
  }

  Error Corrupt(int64_t at, const Column& c, const std::string& what) const {
    return FormatError(name_, at, "column " + Quote(c.name) + ": " + what);
  }

  // Decodes `n` PLAIN values into `vals` (as views of fixed/byte arrays, or 64-bit numbers).
  struct Values {
    std::vector<int64_t> ints;
    std::vector<double> dbls;
    std::vector<std::string_view> strs;
  };

  bool DecodePlain(const Column& c, const uint8_t* p, const uint8_t* end, size_t n, Values* v) {
    v->ints.clear();
    v->dbls.clear();
    v->strs.clear();
    switch (c.type) {
      case kBoolean:
        if (static_cast<size_t>(end - p) * 8 < n) return false;
        for (size_t i = 0; i < n; i++) v->ints.push_back((p[i >> 3] >> (i & 7)) & 1);
        return true;
      case kInt32:
        if (static_cast<size_t>(end - p) < n * 4) return false;
        for (size_t i = 0; i < n; i++) {
          int32_t x;
          std::memcpy(&x, p + 4 * i, 4);
          v->ints.push_back(x);
        }
        return true;
      case kInt64:
        if (static_cast<size_t>(end - p) < n * 8) return false;
        v->ints.resize(n);
        if (n > 0) std::memcpy(v->ints.data(), p, n * 8);
        return true;
      case kInt96:
        if (static_cast<size_t>(end - p) < n * 12) return false;
        for (size_t i = 0; i < n; i++) {
          int64_t nanos;
          int32_t day;
          std::memcpy(&nanos, p + 12 * i, 8);
          std::memcpy(&day, p + 12 * i + 8, 4);
          v->ints.push_back((static_cast<int64_t>(day) - kJulianEpochDay) * 86400000000ll +
                            nanos / 1000);
        }
        return true;
      case kFloat:
        if (static_cast<size_t>(end - p) < n * 4) return false;
        for (size_t i = 0; i < n; i++) {
          float x;
          std::memcpy(&x, p + 4 * i, 4);
          v->dbls.push_back(x);
        }
        return true;
      case kDouble:
        if (static_cast<size_t>(end - p) < n * 8) return false;
        v->dbls.resize(n);
        if (n > 0) std::memcpy(v->dbls.data(), p, n * 8);
        return true;
      case kByteArray:
        v->strs.reserve(n);
        for (size_t i = 0; i < n; i++) {
          if (end - p < 4) return false;
          uint32_t len;
          std::memcpy(&len, p, 4);
          p += 4;
          if (static_cast<size_t>(end - p) < len) return false;
          v->strs.emplace_back(reinterpret_cast<const char*>(p), len);
          p += len;
        }
        return true;
      case kFixed:
        if (static_cast<size_t>(end - p) < n * static_cast<size_t>(c.type_length)) return false;
        for (size_t i = 0; i < n; i++) {
          v->strs.emplace_back(reinterpret_cast<const char*>(p + i * c.type_length), c.type_length);
        }
        return true;
    }
    return false;
  }

  // Delivers value `i` of `v` for row `row` to reader field r.
  void Deliver(const Column& c, const Values& v, size_t i, int r, int64_t row, ChunkSink* sink) {
    ValueKind k = plan_->fields[r].kind;
    if (c.decimal_scale >= 0) {
      double unscaled = !v.strs.empty() || c.type == kByteArray || c.type == kFixed
                            ? BigEndianDecimal(v.strs[i])
                            : static_cast<double>(v.ints[i]);
      if (k == ValueKind::kDouble)
        sink->Double(r, row, ScaleDecimal(unscaled, c.decimal_scale));
      else
        sink->Other(r, row);
      return;
    }
    if (!v.strs.empty() || c.type == kByteArray || c.type == kFixed) {
      if (k == ValueKind::kString)
        sink->String(r, row, v.strs[i]);
      else
        sink->Other(r, row);
    } else if (!v.dbls.empty() || c.type == kFloat || c.type == kDouble) {
      if (k == ValueKind::kDouble)
        sink->Double(r, row, v.dbls[i]);
      else
        sink->Other(r, row);
    } else {
      int64_t x = v.ints[i];
      if (c.is_unsigned && c.type == kInt32) {
        x = static_cast<uint32_t>(x);
      } else if (c.is_unsigned && x < 0) {  // a UINT_64 above the long range
        sink->TypeError(r, row, std::to_string(static_cast<uint64_t>(x)), kOutsideLong);
        return;
      }
      if (k == ValueKind::kInt)
        sink->Int(r, row, x);
      else if (k == ValueKind::kDouble)
        sink->Double(r, row, static_cast<double>(x));
      else if (k == ValueKind::kBool)
        sink->Bool(r, x != 0);
      else
        sink->Other(r, row);
    }
  }

  Status ReadColumn(const ChunkMeta& cm, int64_t rows, int r, ChunkSink* sink) {
    const Column& c = columns_[cm.column];
    const uint8_t* base = reinterpret_cast<const uint8_t*>(blob_->data().data());
    int64_t pos = cm.start;
    const int64_t end = cm.start + cm.size;
    Values dict;
    bool have_dict = false;
    Values vals;
    std::string page_buf, dict_buf_, owned;
    std::vector<uint32_t> levels, idx;
    std::vector<int64_t> delta;
    std::vector<uint8_t> dict_enum;  // per dictionary entry: in the declared enum
    int64_t row = 0;
    while (row < rows) {
      if (pos >= end)
        return Corrupt(pos, c,
                       "column chunk ends after " + std::to_string(row) + " of " +
                           std::to_string(rows) + " rows");
      Node ph;
      size_t hlen;
      std::string err = thrift::ReadStruct(
          std::string_view(reinterpret_cast<const char*>(base + pos), end - pos), &ph, &hlen);
      if (!err.empty()) return Corrupt(pos, c, "corrupt page header: " + err);
      int64_t page_at = pos;
      int64_t type = ph.Int(1, -1);
      int64_t usize = ph.Int(2, -1), csize = ph.Int(3, -1);
      pos += hlen;
      if (csize < 0 || usize < 0 || csize > end - pos)
        return Corrupt(page_at, c, "page size outside the column chunk");
      const uint8_t* body = base + pos;
      pos += csize;
      if (type == kDictionaryPage) {
        const Node* dh = ph.Field(7);
        int64_t n = dh ? dh->Int(1, -1) : -1;
        if (n < 0 || n > usize + 1) return Corrupt(page_at, c, "bad dictionary page header");
        std::string e =
            Decompress(cm.codec, std::string_view(reinterpret_cast<const char*>(body), csize),
                       usize, &dict_buf_);
        if (!e.empty()) return Corrupt(page_at, c, e);
        const uint8_t* d = reinterpret_cast<const uint8_t*>(dict_buf_.data());
        if (!DecodePlain(c, d, d + dict_buf_.size(), n, &dict))
          return Corrupt(page_at, c, "corrupt dictionary");
        have_dict = true;
        dict_enum.clear();
        continue;
      }
      if (type != kDataPage && type != kDataPageV2) continue;  // index pages: skip
      const uint8_t* p;
      const uint8_t* pend;
      int64_t n;
      int64_t encoding;
      size_t nonnull = 0;
      if (type == kDataPage) {
        const Node* dh = ph.Field(5);
        if (!dh) return Corrupt(page_at, c, "data page without header");
        n = dh->Int(1, -1);
        encoding = dh->Int(2, -1);
        std::string e =
            Decompress(cm.codec, std::string_view(reinterpret_cast<const char*>(body), csize),
                       usize, &page_buf);
        if (!e.empty()) return Corrupt(page_at, c, e);
        p = reinterpret_cast<const uint8_t*>(page_buf.data());
        pend = p + page_buf.size();
        if (n < 0 || n > rows - row)
          return Corrupt(page_at, c, "page has more values than the row group rows");
        levels.assign(n, 1);
        if (c.optional) {
          if (pend - p < 4) return Corrupt(page_at, c, "truncated definition levels");
          uint32_t len;
          std::memcpy(&len, p, 4);
          p += 4;
          if (len > static_cast<size_t>(pend - p))
            return Corrupt(page_at, c, "definition levels exceed the page");
          Hybrid h(p, p + len, 1);
          if (!h.Decode(n, levels.data())) return Corrupt(page_at, c, "corrupt definition levels");
          p += len;
        }
      } else {
        const Node* dh = ph.Field(8);
        if (!dh) return Corrupt(page_at, c, "data page v2 without header");
        n = dh->Int(1, -1);
        encoding = dh->Int(4, -1);
        int64_t dlen = dh->Int(5, 0), rlen = dh->Int(6, 0);
        bool compressed = dh->Int(7, 1) != 0;
        if (n < 0 || n > rows - row || dlen < 0 || rlen < 0 || dlen + rlen > csize ||
            dlen + rlen > usize) {
          return Corrupt(page_at, c, "bad data page v2 header");
        }
        levels.assign(n, 1);
        if (c.optional && dlen > 0) {
          Hybrid h(body + rlen, body + rlen + dlen, 1);
          if (!h.Decode(n, levels.data())) return Corrupt(page_at, c, "corrupt definition levels");
        }
        std::string_view rest(reinterpret_cast<const char*>(body + rlen + dlen),
                              csize - rlen - dlen);
        const int64_t values_size = usize - rlen - dlen;
        if (values_size == 0 && rest.empty()) {
          page_buf.clear();  // no values (all null, or none): nothing was compressed
        } else {
          std::string e =
              Decompress(compressed ? cm.codec : Codec::kNone, rest, values_size, &page_buf);
          if (!e.empty()) return Corrupt(page_at, c, e);
        }
        p = reinterpret_cast<const uint8_t*>(page_buf.data());
        pend = p + page_buf.size();
      }
      for (int64_t i = 0; i < n; i++) {
        if (levels[i] > 1) return Corrupt(page_at, c, "definition level above 1 in a flat column");
        nonnull += levels[i];
      }
      // Decode the non-null values.
      const Values* src = &vals;
      bool dictionary = encoding == kPlainDictionary || encoding == kRleDictionary;
      if (dictionary) {
        if (!have_dict) return Corrupt(page_at, c, "dictionary-encoded page without a dictionary");
        if (pend <= p && nonnull > 0) return Corrupt(page_at, c, "truncated dictionary indices");
        int bw = nonnull > 0 ? *p++ : 0;
        if (bw > 32) return Corrupt(page_at, c, "bad dictionary index width");
        idx.resize(nonnull);
        Hybrid h(p, pend, bw);
        if (nonnull > 0 && !h.Decode(nonnull, idx.data()))
          return Corrupt(page_at, c, "corrupt dictionary indices");
        size_t dn = std::max({dict.ints.size(), dict.dbls.size(), dict.strs.size()});
        for (uint32_t k : idx) {
          if (k >= dn) return Corrupt(page_at, c, "dictionary index out of range");
        }
        src = &dict;
      } else if (encoding == kPlain) {
        if (!DecodePlain(c, p, pend, nonnull, &vals))
          return Corrupt(page_at, c, "truncated values");
      } else if (encoding == kRle && c.type == kBoolean) {
        if (pend - p < 4) return Corrupt(page_at, c, "truncated boolean values");
        idx.resize(nonnull);
        Hybrid h(p + 4, pend, 1);
        if (!h.Decode(nonnull, idx.data())) return Corrupt(page_at, c, "corrupt boolean values");
        vals.ints.assign(idx.begin(), idx.end());
        vals.dbls.clear();
        vals.strs.clear();
      } else if (encoding == kDeltaBinaryPacked && (c.type == kInt32 || c.type == kInt64)) {
        const uint8_t* q = p;
        if (!DecodeDelta(&q, pend, nonnull, &delta) || delta.size() < nonnull) {
          return Corrupt(page_at, c, "corrupt DELTA_BINARY_PACKED values");
        }
        vals.ints.assign(delta.begin(), delta.begin() + nonnull);
        vals.dbls.clear();
        vals.strs.clear();
      } else if (encoding == kDeltaLengthByteArray && c.type == kByteArray) {
        const uint8_t* q = p;
        if (!DecodeDelta(&q, pend, nonnull, &delta) || delta.size() < nonnull) {
          return Corrupt(page_at, c, "corrupt DELTA_LENGTH_BYTE_ARRAY lengths");
        }
        vals.ints.clear();
        vals.dbls.clear();
        vals.strs.clear();
        for (size_t i = 0; i < nonnull; i++) {
          if (delta[i] < 0 || delta[i] > pend - q) return Corrupt(page_at, c, "truncated values");
          vals.strs.emplace_back(reinterpret_cast<const char*>(q), delta[i]);
          q += delta[i];
        }
      } else if (encoding == kDeltaByteArray && c.type == kByteArray) {
        // Prefix lengths and suffixes, both DELTA_BINARY_PACKED lengths; values rebuilt into
        // `owned` (views below point into it, so reserve first).
        const uint8_t* q = p;
        std::vector<int64_t> prefix;
        if (!DecodeDelta(&q, pend, nonnull, &prefix) || prefix.size() < nonnull ||
            !DecodeDelta(&q, pend, nonnull, &delta) || delta.size() < nonnull) {
          return Corrupt(page_at, c, "corrupt DELTA_BYTE_ARRAY lengths");
        }
        size_t total = 0;
        for (size_t i = 0; i < nonnull; i++) {
          if (prefix[i] < 0 || delta[i] < 0 || delta[i] > pend - q)
            return Corrupt(page_at, c, "truncated values");
          total += prefix[i] + delta[i];
          if (total > static_cast<size_t>(kMaxDecompressed))
            return Corrupt(page_at, c, "values too large");
        }
        owned.clear();
        owned.reserve(total);
        vals.ints.clear();
        vals.dbls.clear();
        vals.strs.clear();
        std::string_view prev;
        for (size_t i = 0; i < nonnull; i++) {
          if (static_cast<size_t>(prefix[i]) > prev.size())
            return Corrupt(page_at, c, "prefix longer than the previous value");
          size_t at = owned.size();
          owned.append(prev.data(), prefix[i]);
          if (delta[i] > pend - q) return Corrupt(page_at, c, "truncated values");
          owned.append(reinterpret_cast<const char*>(q), delta[i]);
          q += delta[i];
          prev = std::string_view(owned.data() + at, owned.size() - at);
          vals.strs.push_back(prev);
        }
      } else if (encoding == kByteStreamSplit && (c.type == kFloat || c.type == kDouble)) {
        size_t w = c.type == kFloat ? 4 : 8;
        if (static_cast<size_t>(pend - p) < nonnull * w)
          return Corrupt(page_at, c, "truncated values");
        vals.ints.clear();
        vals.strs.clear();
        vals.dbls.resize(nonnull);
        for (size_t i = 0; i < nonnull; i++) {
          uint8_t b[8];
          for (size_t k = 0; k < w; k++) b[k] = p[k * nonnull + i];
          if (w == 4) {
            float f;
            std::memcpy(&f, b, 4);
            vals.dbls[i] = f;
          } else {
            std::memcpy(&vals.dbls[i], b, 8);
          }
        }
      } else {
        return Corrupt(page_at, c, "unsupported encoding " + std::to_string(encoding));
      }
      if (dictionary && src->strs.size() > 0 && plan_->fields[r].kind == ValueKind::kString) {
        // Enum membership once per dictionary entry, not once per value.
        if (dict_enum.size() != src->strs.size()) {
          const auto& set = plan_->fields[r].enum_set;
          dict_enum.resize(src->strs.size());
          for (size_t k = 0; k < src->strs.size(); k++) {
            dict_enum[k] = set.empty() || set.count(src->strs[k]) > 0;
          }
        }
        size_t vi = 0;
        for (int64_t i = 0; i < n; i++, row++) {
          if (!levels[i]) {
            sink->Null(r);
            continue;
          }
          uint32_t k = idx[vi++];
          sink->StringKnown(r, row, src->strs[k], dict_enum[k]);
        }
        continue;
      }
      size_t vi = 0;
      for (int64_t i = 0; i < n; i++, row++) {
        if (!levels[i]) {
          sink->Null(r);
          continue;
        }
        Deliver(c, *src, dictionary ? idx[vi] : vi, r, row, sink);
        vi++;
      }
    }
    return Status::Ok();
  }

  std::vector<Column> columns_;
  std::vector<RowGroup> groups_;
};

}  // namespace

Result<std::unique_ptr<FileReader>> OpenParquet(std::shared_ptr<const Blob> blob,
                                                const std::string& name) {
  return SelfDescribedReader::OpenAs<ParquetReader>(std::move(blob), name);
}

}  // namespace rsl::data
