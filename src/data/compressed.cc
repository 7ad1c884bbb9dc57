#include "data/compressed.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "base/codes.h"
#include "base/strings.h"
#include "data/format.h"

namespace rsl::data {
namespace {

constexpr char kGzipMagic[] = "\x1f\x8b";
constexpr char kZstdMagic[] = "\x28\xb5\x2f\xfd";

// The most zlib is handed per call (its counters are 32-bit).
constexpr size_t kMaxZlibStep = 1u << 30;
// Window of Drain: its output is thrown away.
constexpr size_t kDrainBytes = 1u << 20;

class GzipDecompressor : public Decompressor {
 public:
  GzipDecompressor(std::string_view in, std::string name) : in_(in), name_(std::move(name)) {
    ok_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK;  // gzip wrapper only
    if (!StartsWith(in_, kGzipMagic)) error_ = "not gzip data (it does not start with 1f 8b)";
  }
  ~GzipDecompressor() override {
    if (ok_) inflateEnd(&zs_);
  }

  Status Read(size_t max, std::string* out) override {
    if (!ok_) return Error(codes::kInternal, "zlib could not be initialised");
    if (done_) return Status::Ok();
    if (!error_.empty()) return FormatError(name_, static_cast<int64_t>(pos_), error_);
    const size_t start = out->size();
    out->resize(start + max);
    size_t produced = 0;
    while (produced < max && !done_) {
      const size_t avail_in = std::min(in_.size() - pos_, kMaxZlibStep);
      const size_t avail_out = std::min(max - produced, kMaxZlibStep);
      zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in_.data() + pos_));
      zs_.avail_in = static_cast<uInt>(avail_in);
      zs_.next_out = reinterpret_cast<Bytef*>(out->data() + start + produced);
      zs_.avail_out = static_cast<uInt>(avail_out);
      int rc = inflate(&zs_, Z_NO_FLUSH);
      const size_t used = avail_in - zs_.avail_in, made = avail_out - zs_.avail_out;
      pos_ += used;
      produced += made;
      if (rc == Z_STREAM_END) {
        // One member ended: another may follow (concatenated gzip files); NUL padding after
        // the last one is ignored, as gzip(1) does.
        std::string_view rest = in_.substr(pos_);
        if (rest.find_first_not_of('\0') == std::string_view::npos) {
          pos_ = in_.size();
          done_ = true;
        } else if (StartsWith(rest, kGzipMagic)) {
          inflateReset(&zs_);
        } else {
          error_ = "trailing bytes after the gzip data (not another gzip member)";
        }
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        error_ = std::string("corrupt gzip stream (") + (zs_.msg ? zs_.msg : "bad data") + ")";
      } else if (pos_ == in_.size() && produced < max) {
        error_ = "truncated gzip stream: the file ends inside compressed data";
      } else if (used == 0 && made == 0) {
        error_ = "corrupt gzip stream (no progress)";
      }
      if (!error_.empty()) {
        out->resize(start + produced);
        return FormatError(name_, static_cast<int64_t>(pos_), error_);
      }
    }
    out->resize(start + produced);
    return Status::Ok();
  }

  bool done() const override { return done_; }

 private:
  std::string_view in_;
  std::string name_;
  z_stream zs_{};
  bool ok_ = false;
  bool done_ = false;
  size_t pos_ = 0;
  std::string error_;
};

class ZstdDecompressor : public Decompressor {
 public:
  ZstdDecompressor(std::string_view in, std::string name)
      : in_(in), name_(std::move(name)), ds_(ZSTD_createDCtx()) {
    if (!StartsWith(in_, std::string_view(kZstdMagic, 4))) {
      error_ = "not zstd data (it does not start with 28 b5 2f fd)";
    }
  }
  ~ZstdDecompressor() override { ZSTD_freeDCtx(ds_); }

  Status Read(size_t max, std::string* out) override {
    if (ds_ == nullptr) return Error(codes::kInternal, "zstd could not be initialised");
    if (done_) return Status::Ok();
    if (!error_.empty()) return FormatError(name_, static_cast<int64_t>(pos_), error_);
    const size_t start = out->size();
    out->resize(start + max);
    ZSTD_outBuffer ob{out->data() + start, max, 0};
    while (ob.pos < ob.size && !done_) {
      ZSTD_inBuffer ib{in_.data(), in_.size(), pos_};
      const size_t in_before = ib.pos, out_before = ob.pos;
      size_t rc = ZSTD_decompressStream(ds_, &ob, &ib);
      pos_ = ib.pos;
      if (ZSTD_isError(rc)) {
        error_ = std::string("corrupt zstd stream (") + ZSTD_getErrorName(rc) + ")";
      } else if (rc == 0 && pos_ == in_.size()) {
        done_ = true;  // the last frame ended (another one would start by itself)
      } else if (rc != 0 && pos_ == in_.size() && ob.pos < ob.size) {
        error_ = "truncated zstd stream: the file ends inside compressed data";
      } else if (ib.pos == in_before && ob.pos == out_before && rc != 0) {
        error_ = "corrupt zstd stream (no progress)";
      }
      if (!error_.empty()) {
        out->resize(start + ob.pos);
        return FormatError(name_, static_cast<int64_t>(pos_), error_);
      }
    }
    out->resize(start + ob.pos);
    return Status::Ok();
  }

  bool done() const override { return done_; }

 private:
  std::string_view in_;
  std::string name_;
  ZSTD_DCtx* ds_;
  bool done_ = false;
  size_t pos_ = 0;
  std::string error_;
};

bool HasExtension(const std::string& lower, Compression* c, size_t* len) {
  static const struct {
    const char* ext;
    Compression c;
  } kExt[] = {{".gz", Compression::kGzip},
              {".gzip", Compression::kGzip},
              {".zst", Compression::kZstd},
              {".zstd", Compression::kZstd}};
  for (const auto& e : kExt) {
    if (EndsWith(lower, e.ext)) {
      *c = e.c;
      *len = std::strlen(e.ext);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
  }
  return "?";
}

Compression DetectCompression(const std::string& name, std::string_view head) {
  if (StartsWith(head, kGzipMagic)) return Compression::kGzip;
  if (StartsWith(head, std::string_view(kZstdMagic, 4))) return Compression::kZstd;
  Compression c = Compression::kNone;
  size_t len = 0;
  HasExtension(ToLower(name), &c, &len);
  return c;
}

std::string StripCompressionExtension(const std::string& name) {
  Compression c;
  size_t len = 0;
  if (!HasExtension(ToLower(name), &c, &len)) return name;
  return name.substr(0, name.size() - len);
}

std::unique_ptr<Decompressor> NewDecompressor(Compression c, std::string_view in,
                                              const std::string& name) {
  if (c == Compression::kZstd) return std::make_unique<ZstdDecompressor>(in, name);
  return std::make_unique<GzipDecompressor>(in, name);
}

Status Drain(Decompressor* d) {
  std::string scratch;
  while (!d->done()) {
    scratch.clear();
    RSL_RETURN_IF_ERROR(d->Read(kDrainBytes, &scratch));
  }
  return Status::Ok();
}

Status StreamLines(Decompressor* d, size_t skip, bool quotes, const std::function<bool()>& stop,
                   const std::function<Status(std::string_view, int64_t)>& consume) {
  std::string buf;
  int64_t offset = 0;  // of buf[0] in the decompressed text
  while (!d->done() && !stop()) {
    RSL_RETURN_IF_ERROR(d->Read(kTextWindowBytes, &buf));
    if (skip > 0) {
      size_t n = std::min(skip, buf.size());
      buf.erase(0, n);
      skip -= n;
      offset += static_cast<int64_t>(n);
    }
    size_t cut = d->done() ? buf.size() : LastLineEnd(buf, quotes);
    if (cut == 0) continue;
    Status st = consume(std::string_view(buf).substr(0, cut), offset);
    if (!st.ok() || stop()) {
      // Garbage text may come out of a corrupt stream before its checksum fails: the
      // stream's error, when it has one, is the cause to report.
      RSL_RETURN_IF_ERROR(Drain(d));
      return st;
    }
    buf.erase(0, cut);
    offset += static_cast<int64_t>(cut);
  }
  return Status::Ok();
}

Status StreamErrorOr(Compression c, std::string_view in, const std::string& name,
                     Status text_error) {
  if (c == Compression::kNone || text_error.ok()) return text_error;
  auto d = NewDecompressor(c, in, name);
  RSL_RETURN_IF_ERROR(Drain(d.get()));
  return text_error;
}

Status DecompressHead(Compression c, std::string_view in, const std::string& name, size_t max,
                      std::string* out) {
  out->clear();
  auto d = NewDecompressor(c, in, name);
  while (out->size() < max && !d->done()) {
    RSL_RETURN_IF_ERROR(d->Read(max - out->size(), out));
  }
  return Status::Ok();
}

}  // namespace rsl::data
