// Avro object container files (Avro 1.11 specification, "Object Container Files"): magic
// "Obj\x01", a metadata map (avro.schema, avro.codec), a 16-byte sync marker, then blocks of
// (record count, byte size, records, sync). Codecs: null, deflate, snappy (with its CRC32
// trailer), zstandard. Blocks are grouped into chunks of about kChunkBytes and decoded in
// parallel; every read is bounds-checked, so a corrupt file is an error with its byte offset.
#include <cstdint>
#include <cstring>

#include "base/codes.h"
#include "base/strings.h"
#include "data/codec.h"
#include "data/decimal.h"
#include "data/format.h"

#include <zlib.h>

namespace rsl::data {
namespace {

using schema::Kind;
using schema::Type;

// Consecutive blocks decoded by one task: large enough to amortise a task, small enough to
// spread a 100 MiB file over a handful of threads.
constexpr size_t kChunkBytes = 4u << 20;
// An Avro block of records that take no bytes (all-null records) could claim any count; cap
// the records a block may claim beyond its byte size so a hostile count cannot spin for hours.
constexpr int64_t kMaxEmptyRecords = 1 << 20;

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  int64_t Long() {
    uint64_t v = 0;
    int shift = 0;
    while (true) {
      if (p >= end || shift > 63) {
        ok = false;
        return 0;
      }
      uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
      shift += 7;
    }
    return static_cast<int64_t>((v >> 1) ^ -(v & 1));
  }
  bool Take(size_t n, const uint8_t** out) {
    if (static_cast<size_t>(end - p) < n) {
      ok = false;
      return false;
    }
    *out = p;
    p += n;
    return true;
  }
  std::string_view Bytes() {
    int64_t n = Long();
    const uint8_t* b;
    if (!ok || n < 0 || !Take(static_cast<size_t>(n), &b)) {
      ok = false;
      return {};
    }
    return std::string_view(reinterpret_cast<const char*>(b), n);
  }
};

struct Block {
  size_t offset;  // of the block's count
  int64_t count;
  size_t data;  // offset of the (compressed) data
  size_t size;
};

// Skips or delivers one value of writer type `t`.
// `r` < 0: skip. Returns false on a malformed value (cursor ok=false).
class Decoder {
 public:
  Decoder(const Plan* plan, ChunkSink* sink) : plan_(plan), sink_(sink) {}

  void Value(const Type& t, Cursor* c, int r, int64_t row) {
    // Recursive schemas nest as deep as the data says: bound the stack.
    if (depth_ > kMaxDepth) {
      c->ok = false;
      return;
    }
    depth_++;
    ValueAt(t, c, r, row);
    depth_--;
  }

 private:
  static constexpr int kMaxDepth = 64;

  void ValueAt(const Type& t, Cursor* c, int r, int64_t row) {
    switch (t.kind) {
      case Kind::kNull:
        if (r >= 0) sink_->Null(r);
        return;
      case Kind::kBoolean: {
        const uint8_t* b;
        if (!c->Take(1, &b)) return;
        if (*b > 1) c->ok = false;
        if (r >= 0) Deliver(r, row, static_cast<int64_t>(*b), true);
        return;
      }
      case Kind::kInt:
      case Kind::kLong: {
        int64_t v = c->Long();
        if (r >= 0 && c->ok) Deliver(r, row, v, false);
        return;
      }
      case Kind::kFloat: {
        const uint8_t* b;
        if (!c->Take(4, &b)) return;
        if (r >= 0) {
          float f;
          std::memcpy(&f, b, 4);
          DeliverDouble(r, row, f);
        }
        return;
      }
      case Kind::kDouble: {
        const uint8_t* b;
        if (!c->Take(8, &b)) return;
        if (r >= 0) {
          double d;
          std::memcpy(&d, b, 8);
          DeliverDouble(r, row, d);
        }
        return;
      }
      case Kind::kBytes:
      case Kind::kString: {
        std::string_view s = c->Bytes();
        if (r >= 0 && c->ok) DeliverBytes(t, r, row, s);
        return;
      }
      case Kind::kFixed: {
        const uint8_t* b;
        if (!c->Take(static_cast<size_t>(t.size), &b)) return;
        if (r >= 0)
          DeliverBytes(t, r, row, std::string_view(reinterpret_cast<const char*>(b), t.size));
        return;
      }
      case Kind::kEnum: {
        int64_t i = c->Long();
        if (!c->ok) return;
        if (i < 0 || i >= static_cast<int64_t>(t.symbols.size())) {
          c->ok = false;
          return;
        }
        if (r >= 0) DeliverString(r, row, t.symbols[i]);
        return;
      }
      case Kind::kUnion: {
        int64_t i = c->Long();
        if (!c->ok) return;
        if (i < 0 || i >= static_cast<int64_t>(t.branches.size())) {
          c->ok = false;
          return;
        }
        Value(*t.branches[i], c, r, row);
        return;
      }
      case Kind::kRecord:
        for (const auto& f : t.fields) {
          Value(*f.type, c, -1, row);
          if (!c->ok) return;
        }
        if (r >= 0) sink_->Other(r, row);
        return;
      case Kind::kArray:
      case Kind::kMap: {
        int64_t items = 0;
        while (c->ok) {
          int64_t n = c->Long();
          if (!c->ok || n == 0) break;
          if (n == INT64_MIN) {
            c->ok = false;
            return;
          }
          if (n < 0) {
            n = -n;
            c->Long();  // block size in bytes
          }
          if (n > (c->end - c->p) + kMaxEmptyRecords) {
            c->ok = false;
            return;
          }
          for (int64_t k = 0; k < n && c->ok; k++) {
            if (t.kind == Kind::kMap) c->Bytes();
            Value(*t.items, c, -1, row);
          }
          items += n;
        }
        if (r >= 0 && c->ok) sink_->Other(r, row, items);
        return;
      }
    }
  }

  void Deliver(int r, int64_t row, int64_t v, bool boolean) {
    switch (plan_->fields[r].kind) {
      case ValueKind::kInt:
        sink_->Int(r, row, v);
        return;
      case ValueKind::kDouble:
        sink_->Double(r, row, static_cast<double>(v));
        return;
      case ValueKind::kBool:
        sink_->Bool(r, v != 0);
        return;
      default:
        sink_->Other(r, row);
        return;
    }
    (void)boolean;
  }
  void DeliverDouble(int r, int64_t row, double v) {
    if (plan_->fields[r].kind == ValueKind::kDouble)
      sink_->Double(r, row, v);
    else
      sink_->Other(r, row);
  }
  // Bytes or fixed of writer type `t`: a decimal read as a number is its value with its scale.
  void DeliverBytes(const Type& t, int r, int64_t row, std::string_view s) {
    if (plan_->fields[r].kind == ValueKind::kDouble && t.IsDecimal()) {  // cheap test first
      sink_->Double(r, row, ScaleDecimal(BigEndianDecimal(s), t.scale));
    } else {
      DeliverString(r, row, s);
    }
  }
  void DeliverString(int r, int64_t row, std::string_view s) {
    if (plan_->fields[r].kind == ValueKind::kString)
      sink_->String(r, row, s);
    else
      sink_->Other(r, row);
  }

  const Plan* plan_;
  ChunkSink* sink_;
  int depth_ = 0;
};

class AvroReader : public SelfDescribedReader {
 public:
  AvroReader(std::shared_ptr<const Blob> blob, std::string name)
      : SelfDescribedReader(std::move(blob), std::move(name)) {}

  Status Open() {
    std::string_view data = blob_->data();
    const uint8_t* base = reinterpret_cast<const uint8_t*>(data.data());
    if (data.size() < 4 || std::memcmp(data.data(), "Obj\x01", 4) != 0) {
      return FormatError(name_, 0, "not an Avro object container file (no Obj\\x01 magic)");
    }
    Cursor c{base + 4, base + data.size()};
    std::string schema_json, codec = "null";
    while (true) {
      size_t at = c.p - base;
      int64_t n = c.Long();
      if (!c.ok) return FormatError(name_, at, "truncated header metadata");
      if (n == 0) break;
      if (n == INT64_MIN) return FormatError(name_, at, "bad metadata count");
      if (n < 0) {
        n = -n;
        c.Long();
      }
      if (n > static_cast<int64_t>(data.size()))
        return FormatError(name_, at, "bad metadata count");
      for (int64_t i = 0; i < n; i++) {
        std::string_view key = c.Bytes();
        std::string_view value = c.Bytes();
        if (!c.ok) return FormatError(name_, c.p - base, "truncated header metadata");
        if (key == "avro.schema") schema_json = std::string(value);
        if (key == "avro.codec") codec = std::string(value);
      }
    }
    const uint8_t* sync;
    if (!c.Take(16, &sync))
      return FormatError(name_, c.p - base, "truncated header: no sync marker");
    std::memcpy(sync_, sync, 16);
    if (schema_json.empty()) return FormatError(name_, 4, "header has no avro.schema");
    auto parsed = schema::ParseAvroSchema(schema_json, schema::InvalidLogical::kIgnore);
    if (!parsed.ok()) {
      return FormatError(name_, 4,
                         "writer schema in the header is invalid: " + parsed.error().message);
    }
    schema_ = *parsed;
    if (schema_.record().kind != Kind::kRecord) {
      return FormatError(name_, 4, "writer schema is not a record");
    }
    if (codec == "null")
      codec_ = Codec::kNone;
    else if (codec == "deflate")
      codec_ = Codec::kDeflate;
    else if (codec == "snappy")
      codec_ = Codec::kSnappy;
    else if (codec == "zstandard")
      codec_ = Codec::kZstd;
    else
      return FormatError(name_, 4, "unsupported codec " + Quote(codec));
    // Walk the block headers (cheap: sizes only) to find every block.
    while (c.p < c.end) {
      Block b;
      b.offset = c.p - base;
      b.count = c.Long();
      int64_t size = c.Long();
      if (!c.ok || b.count < 0 || size < 0) {
        return FormatError(name_, b.offset, "truncated or corrupt block header");
      }
      if (b.count > size + kMaxEmptyRecords) {
        return FormatError(name_, b.offset,
                           "block claims " + std::to_string(b.count) + " records in " +
                               std::to_string(size) + " bytes");
      }
      b.data = c.p - base;
      b.size = static_cast<size_t>(size);
      const uint8_t* skip;
      if (!c.Take(b.size, &skip)) {
        return FormatError(name_, b.data,
                           "truncated block: " + std::to_string(size) + " bytes declared, " +
                               std::to_string(data.size() - b.data) + " present");
      }
      const uint8_t* s;
      if (!c.Take(16, &s)) return FormatError(name_, c.p - base, "truncated block: no sync marker");
      if (std::memcmp(s, sync_, 16) != 0) {
        return FormatError(name_, s - base, "sync marker mismatch (corrupt block)");
      }
      blocks_.push_back(b);
    }
    // Group blocks into chunks.
    chunk_starts_.push_back(0);
    size_t acc = 0;
    for (size_t i = 0; i < blocks_.size(); i++) {
      acc += blocks_[i].size;
      if (acc >= kChunkBytes && i + 1 < blocks_.size()) {
        chunk_starts_.push_back(i + 1);
        acc = 0;
      }
    }
    chunk_starts_.push_back(blocks_.size());
    return Status::Ok();
  }

  size_t chunks() const override { return blocks_.empty() ? 0 : chunk_starts_.size() - 1; }

  Status ReadChunk(size_t chunk, ChunkSink* sink) override {
    const uint8_t* base = reinterpret_cast<const uint8_t*>(blob_->data().data());
    Decoder dec(plan_, sink);
    std::string buf;
    int64_t row = 0;
    const auto& fields = schema_.record().fields;
    for (size_t bi = chunk_starts_[chunk]; bi < chunk_starts_[chunk + 1]; bi++) {
      const Block& b = blocks_[bi];
      std::string_view raw(reinterpret_cast<const char*>(base + b.data), b.size);
      std::string_view data = raw;
      if (codec_ != Codec::kNone) {
        std::string_view in = raw;
        if (codec_ == Codec::kSnappy) {
          if (in.size() < 4) return FormatError(name_, b.data, "snappy block without CRC");
          in = in.substr(0, in.size() - 4);
        }
        std::string err = Decompress(codec_, in, -1, &buf);
        if (!err.empty()) return FormatError(name_, b.data, err);
        if (codec_ == Codec::kSnappy) {
          const uint8_t* crc = base + b.data + b.size - 4;
          uint32_t want = (uint32_t(crc[0]) << 24) | (uint32_t(crc[1]) << 16) |
                          (uint32_t(crc[2]) << 8) | crc[3];
          uint32_t got = static_cast<uint32_t>(
              crc32(0, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(buf.size())));
          if (want != got) return FormatError(name_, b.data, "snappy block CRC mismatch");
        }
        data = buf;
      }
      Cursor c{reinterpret_cast<const uint8_t*>(data.data()),
               reinterpret_cast<const uint8_t*>(data.data()) + data.size()};
      for (int64_t i = 0; i < b.count; i++, row++) {
        for (size_t f = 0; f < fields.size(); f++) {
          dec.Value(*fields[f].type, &c, map_[f], row);
        }
        if (!c.ok) {
          return FormatError(
              name_, b.data,
              "corrupt record " + std::to_string(i) + " of the block (" +
                  (codec_ == Codec::kNone
                       ? "at byte " +
                             std::to_string(b.data +
                                            (c.p - reinterpret_cast<const uint8_t*>(data.data())))
                       : std::string("in compressed data")) +
                  ")");
        }
      }
      if (c.p != c.end) {
        return FormatError(name_, b.data,
                           "block has " + std::to_string(c.end - c.p) + " bytes after its " +
                               std::to_string(b.count) + " records");
      }
    }
    sink->rows = row;
    return Status::Ok();
  }

 private:
  Codec codec_ = Codec::kNone;
  uint8_t sync_[16];
  std::vector<Block> blocks_;
  std::vector<size_t> chunk_starts_;
};

}  // namespace

Result<std::unique_ptr<FileReader>> OpenAvro(std::shared_ptr<const Blob> blob,
                                             const std::string& name) {
  return SelfDescribedReader::OpenAs<AvroReader>(std::move(blob), name);
}

}  // namespace rsl::data
