// Parquet: the footer (Thrift compact FileMetaData) gives the writer schema and
// the row groups; each row group is one chunk, decoded column by column. Columns the declared
// schema does not name are never decompressed. Supported: data pages v1 and v2, dictionary
// pages, encodings PLAIN, PLAIN_DICTIONARY/RLE_DICTIONARY, RLE (booleans and levels),
// DELTA_BINARY_PACKED (ints), BYTE_STREAM_SPLIT (floats); codecs none, snappy, gzip, zstd,
// LZ4_RAW, LZ4 (Hadoop framing or raw), Brotli.
// Nested columns (groups, LIST, MAP/MAP_KEY_VALUE, legacy 2-level lists, bare repeated fields)
// are decoded with their repetition and definition levels (Dremel): a top-level field's
// presence and item count come from its first column; the nested paths the plan addresses
// ("a.b", "items[]", "m{}") get their values from their own columns (sink.h).
// The schema elements are read in parquet_schema.cc, the page encodings in parquet_decode.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>

#include "base/codes.h"
#include "base/strings.h"
#include "data/codec.h"
#include "data/decimal.h"
#include "data/format.h"
#include "data/parquet_decode.h"
#include "data/parquet_schema.h"
#include "data/thrift.h"

namespace rsl::data {
namespace {

using schema::Kind;
using thrift::Node;
using namespace parquet_decode;  // NOLINT(google-build-using-namespace): the format's own
                                 // vocabulary

// The buffers of one row group's reading (ReadGroup, ReadColumn), reused across row groups.
struct Scratch {
  Values dict, vals;
  std::string page_buf, dict_buf, owned;
  std::vector<uint32_t> levels, idx, reps;
  std::vector<int64_t> delta;
  std::vector<uint8_t> dict_enum;
};

// One nested column chunk, decoded: levels per entry and its non-null values in order.
struct Leaf {
  std::vector<uint8_t> rep, def;
  std::vector<int64_t> ints;
  std::vector<double> dbls;
  std::vector<std::string> strs;
};

constexpr int64_t kMaxLevels = int64_t{1} << 26;  // level entries per nested column chunk

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
    RSL_RETURN_IF_ERROR(ReadFileSchema(*schema, name_, footer_at, &columns_, &tops_, &schema_));
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
  bool ReadsNestedPaths() const override { return true; }

  Status ReadChunk(size_t chunk, ChunkSink* sink) override {
    std::unique_ptr<Scratch> scratch = TakeScratch();
    Status st = ReadGroup(groups_[chunk], sink, scratch.get());
    std::lock_guard<std::mutex> lock(scratch_mu_);
    scratch_.push_back(std::move(scratch));
    return st;
  }

 private:
  Error Corrupt(int64_t at, const Column& c, const std::string& what) const {
    return FormatError(name_, at, "column " + Quote(c.name) + ": " + what);
  }

  // How a flat column's values reach the sink: directly as what the field declares, or
  // through Deliver (decimals, unsigned, conversions, a kind that does not match).
  enum class Route { kString, kDouble, kInt, kBool, kAny };
  static Route RouteOf(const Column& c, ValueKind k) {
    if (c.decimal_scale >= 0) return Route::kAny;
    switch (c.type) {
      case kByteArray:
      case kFixed:
        return k == ValueKind::kString ? Route::kString : Route::kAny;
      case kFloat:
      case kDouble:
        return k == ValueKind::kDouble ? Route::kDouble : Route::kAny;
      case kInt32:
      case kInt64:
      case kInt96:
        return k == ValueKind::kInt && !c.is_unsigned ? Route::kInt : Route::kAny;
      case kBoolean:
        return k == ValueKind::kBool ? Route::kBool : Route::kAny;
      default:
        return Route::kAny;
    }
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

  // Buffers for one row group's reading, kept by the reader (one validation) so that a
  // worker's next row group reuses the pages it already faulted in; never by the thread, which
  // may be a long-lived one of the controller's.
  std::unique_ptr<Scratch> TakeScratch() {
    std::lock_guard<std::mutex> lock(scratch_mu_);
    if (scratch_.empty()) return std::make_unique<Scratch>();
    std::unique_ptr<Scratch> s = std::move(scratch_.back());
    scratch_.pop_back();
    return s;
  }

  Status ReadGroup(const RowGroup& rg, ChunkSink* sink, Scratch* scratch) {
    for (size_t t = 0; t < tops_.size(); t++) {
      int r = map_[t];
      if (r < 0) continue;
      if (tops_[t].flat) {
        RSL_RETURN_IF_ERROR(
            ReadColumn(rg.chunks[tops_[t].first_leaf], rg.rows, r, sink, nullptr, scratch));
      } else {
        RSL_RETURN_IF_ERROR(ReadNested(tops_[t], rg, r, sink, scratch));
      }
    }
    sink->rows = rg.rows;
    return Status::Ok();
  }

  // Reads a column chunk: a flat column's values go to reader field r of `sink`; a nested
  // column's levels and values (out != nullptr) are collected into `out`.
  Status ReadColumn(const ChunkMeta& cm, int64_t rows, int r, ChunkSink* sink, Leaf* out,
                    Scratch* scratch) {
    const Column& c = columns_[cm.column];
    const uint8_t* base = reinterpret_cast<const uint8_t*>(blob_->data().data());
    int64_t pos = cm.start;
    const int64_t end = cm.start + cm.size;
    // Buffers kept from one column chunk to the next: a chunk's pages are about a megabyte
    // each, and fresh buffers per chunk were fresh pages to fault in.
    Values& dict = scratch->dict;
    Values& vals = scratch->vals;
    std::string& page_buf = scratch->page_buf;
    std::string& dict_buf_ = scratch->dict_buf;
    std::string& owned = scratch->owned;
    std::vector<uint32_t>& levels = scratch->levels;
    std::vector<uint32_t>& idx = scratch->idx;
    std::vector<uint32_t>& reps = scratch->reps;
    std::vector<int64_t>& delta = scratch->delta;
    std::vector<uint8_t>& dict_enum = scratch->dict_enum;  // per dictionary entry: in the enum
    dict_enum.clear();
    bool have_dict = false;
    const Route route = out ? Route::kAny : RouteOf(c, plan_->fields[r].kind);
    int64_t row = 0;
    int64_t read = 0;  // nested: level entries read
    const int def_width = out ? BitWidth(c.max_def) : 1;
    while (out ? read < cm.num_values : row < rows) {
      if (pos >= end)
        return Corrupt(pos, c,
                       out ? "column chunk ends after " + std::to_string(read) + " of " +
                                 std::to_string(cm.num_values) + " values"
                           : "column chunk ends after " + std::to_string(row) + " of " +
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
      bool defs = false;  // definition levels were decoded into `levels`
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
        if (out && (n < 0 || n > cm.num_values - read || n > kMaxLevels - read)) {
          return Corrupt(page_at, c,
                         "page has more values than the column chunk declares (at most " +
                             std::to_string(kMaxLevels) + " in one row group)");
        }
        if (!out && (n < 0 || n > rows - row))
          return Corrupt(page_at, c, "page has more values than the row group rows");
        if (out) levels.assign(n, 1);
        if (out && c.max_rep > 0) {
          if (pend - p < 4) return Corrupt(page_at, c, "truncated repetition levels");
          uint32_t len;
          std::memcpy(&len, p, 4);
          p += 4;
          if (len > static_cast<size_t>(pend - p))
            return Corrupt(page_at, c, "repetition levels exceed the page");
          reps.assign(n, 0);
          Hybrid h(p, p + len, BitWidth(c.max_rep));
          if (!h.Decode(n, reps.data())) return Corrupt(page_at, c, "corrupt repetition levels");
          p += len;
        }
        if (out ? c.max_def > 0 : c.optional) {
          if (pend - p < 4) return Corrupt(page_at, c, "truncated definition levels");
          uint32_t len;
          std::memcpy(&len, p, 4);
          p += 4;
          if (len > static_cast<size_t>(pend - p))
            return Corrupt(page_at, c, "definition levels exceed the page");
          levels.resize(n);
          defs = true;
          Hybrid h(p, p + len, def_width);
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
        if (n < 0 || (out ? n > cm.num_values - read || n > kMaxLevels - read : n > rows - row) ||
            dlen < 0 || rlen < 0 || dlen + rlen > csize || dlen + rlen > usize) {
          return Corrupt(page_at, c, "bad data page v2 header");
        }
        if (out) levels.assign(n, 1);
        if (out && c.max_rep > 0) {
          reps.assign(n, 0);
          Hybrid h(body, body + rlen, BitWidth(c.max_rep));
          if (!h.Decode(n, reps.data())) return Corrupt(page_at, c, "corrupt repetition levels");
        }
        if (out ? c.max_def > 0 : c.optional && dlen > 0) {
          levels.resize(n);
          defs = true;
          Hybrid h(body + rlen, body + rlen + dlen, def_width);
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
      if (out) {
        if (c.max_def == 0) levels.assign(n, 0);
        for (int64_t i = 0; i < n; i++) {
          if (levels[i] > static_cast<uint32_t>(c.max_def))
            return Corrupt(page_at, c,
                           "definition level " + std::to_string(levels[i]) +
                               " above the column's " + std::to_string(c.max_def));
          nonnull += levels[i] == static_cast<uint32_t>(c.max_def);
        }
        for (int64_t i = 0; c.max_rep > 0 && i < n; i++) {
          if (reps[i] > static_cast<uint32_t>(c.max_rep))
            return Corrupt(page_at, c,
                           "repetition level " + std::to_string(reps[i]) + " above the column's " +
                               std::to_string(c.max_rep));
        }
        if (read == 0 && n > 0 && c.max_rep > 0 && reps[0] != 0)
          return Corrupt(page_at, c, "the first value continues a record (repetition level not 0)");
      } else if (!defs) {
        nonnull = static_cast<size_t>(n);  // a required column, or a v2 page without levels
      } else {
        for (int64_t i = 0; i < n; i++) {
          if (levels[i] > 1)
            return Corrupt(page_at, c, "definition level above 1 in a flat column");
          nonnull += levels[i];
        }
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
      if (out) {
        for (int64_t i = 0; i < n; i++) {
          out->def.push_back(static_cast<uint8_t>(levels[i]));
          out->rep.push_back(c.max_rep > 0 ? static_cast<uint8_t>(reps[i]) : 0);
          if (out->rep.back() == 0) row++;
        }
        read += n;
        for (size_t i = 0; i < nonnull; i++) {
          size_t k = dictionary ? idx[i] : i;
          if (c.type == kByteArray || c.type == kFixed)
            out->strs.emplace_back(src->strs[k]);
          else if (c.type == kFloat || c.type == kDouble)
            out->dbls.push_back(src->dbls[k]);
          else
            out->ints.push_back(src->ints[k]);
        }
        continue;
      }
      // Each value to the sink, through the route chosen once per chunk: a loop per kind
      // instead of Deliver's tests per value.
      auto each = [&](auto&& deliver) {
        if (nonnull == static_cast<size_t>(n)) {  // no nulls: no level to test
          for (int64_t i = 0; i < n; i++, row++) deliver(dictionary ? idx[i] : i, row);
          return;
        }
        size_t vi = 0;
        for (int64_t i = 0; i < n; i++, row++) {
          if (!levels[i]) {
            sink->Null(r);
            continue;
          }
          deliver(dictionary ? idx[vi] : vi, row);
          vi++;
        }
      };
      if (dictionary && src->strs.size() > 0 && plan_->fields[r].kind == ValueKind::kString) {
        // Enum membership once per dictionary entry, not once per value.
        if (dict_enum.size() != src->strs.size()) {
          const auto& set = plan_->fields[r].enum_set;
          dict_enum.resize(src->strs.size());
          for (size_t k = 0; k < src->strs.size(); k++) {
            dict_enum[k] = set.empty() || set.count(src->strs[k]) > 0;
          }
        }
        each([&](size_t k, int64_t at) { sink->StringKnown(r, at, src->strs[k], dict_enum[k]); });
        continue;
      }
      switch (route) {
        case Route::kString:
          each([&](size_t k, int64_t at) { sink->String(r, at, src->strs[k]); });
          break;
        case Route::kDouble:
          each([&](size_t k, int64_t at) { sink->Double(r, at, src->dbls[k]); });
          break;
        case Route::kInt:
          each([&](size_t k, int64_t at) { sink->Int(r, at, src->ints[k]); });
          break;
        case Route::kBool:
          each([&](size_t k, int64_t) { sink->Bool(r, src->ints[k] != 0); });
          break;
        case Route::kAny:
          each([&](size_t k, int64_t at) { Deliver(c, *src, k, r, at, sink); });
          break;
      }
    }
    if (out && row != rows) {
      return Corrupt(cm.start, c,
                     "column chunk holds " + std::to_string(row) + " records, its row group " +
                         std::to_string(rows));
    }
    return Status::Ok();
  }

  // A nested top-level field for one row group: its presence (null or not, and how many
  // items a list or map has) from its first column, and the values of the nested paths the
  // plan addresses ("a.b", "items[]") from their columns. A path's value exists where its
  // innermost list has an element (or once per row outside lists): there it is a value or a
  // null (a null struct makes its fields null); an empty or null list holds none.
  Status ReadNested(const Top& top, const RowGroup& rg, int r, ChunkSink* sink, Scratch* scratch) {
    Leaf first;
    const int fc = top.first_leaf;
    RSL_RETURN_IF_ERROR(ReadColumn(rg.chunks[fc], rg.rows, r, sink, &first, scratch));
    const SNode& t = top.node;
    int items_def = -1, items_rep = 0;  // a list or map: the level of an item
    if (t.list || t.map) {
      items_def = t.children[0].def;
      items_rep = t.children[0].rlevel;
    } else if (t.rep == 2) {
      items_def = t.def;
      items_rep = t.rlevel;
    }
    int64_t row = 0;
    for (size_t i = 0; i < first.def.size(); row++) {
      size_t j = i + 1;
      while (j < first.def.size() && first.rep[j] != 0) j++;
      if (t.rep == 1 && first.def[i] < t.def) {
        sink->Null(r);
      } else {
        int64_t items = -1;
        if (items_def >= 0) {
          items = 0;
          for (size_t k = i; k < j; k++) {
            items += first.rep[k] <= items_rep && first.def[k] >= items_def;
          }
        }
        sink->Other(r, row, items);
      }
      i = j;
    }
    for (size_t s = 0; s < plan_->fields.size(); s++) {
      if (plan_->fields[s].parent != r) continue;
      int col = -1;
      for (int k = fc; k < fc + top.leaves; k++) {
        if (columns_[k].path == plan_->fields[s].name) col = k;
      }
      if (col < 0) continue;  // declared with a default, absent from the data
      Leaf own;
      const Leaf* l = &first;
      if (col != fc) {
        RSL_RETURN_IF_ERROR(ReadColumn(rg.chunks[col], rg.rows, r, sink, &own, scratch));
        l = &own;
      }
      const Column& c = columns_[col];
      Values view;
      view.ints = l->ints;
      view.dbls = l->dbls;
      view.strs.assign(l->strs.begin(), l->strs.end());
      int64_t rr = -1;
      size_t vi = 0;
      const int si = static_cast<int>(s);
      for (size_t k = 0; k < l->def.size(); k++) {
        if (l->rep[k] == 0) rr++;
        if (l->def[k] == c.max_def) {
          Deliver(c, view, vi++, si, rr, sink);
        } else if (l->def[k] >= c.slot_def) {
          sink->Null(si);
        }
      }
    }
    return Status::Ok();
  }

  std::vector<Column> columns_;
  std::vector<Top> tops_;
  std::mutex scratch_mu_;
  std::vector<std::unique_ptr<Scratch>> scratch_;  // GUARDED_BY(scratch_mu_): not in use
  std::vector<RowGroup> groups_;
};

}  // namespace

Result<std::unique_ptr<FileReader>> OpenParquet(std::shared_ptr<const Blob> blob,
                                                const std::string& name) {
  return SelfDescribedReader::OpenAs<ParquetReader>(std::move(blob), name);
}

}  // namespace rsl::data
