#include "data/codec.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

namespace rsl::data {
namespace {

std::string Inflate(std::string_view in, int window_bits, int64_t expected, std::string* out) {
  z_stream zs{};
  if (inflateInit2(&zs, window_bits) != Z_OK) return "zlib init failed";
  out->clear();
  out->resize(expected > 0 ? static_cast<size_t>(expected) : std::max<size_t>(in.size() * 4, 1024));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  size_t produced = 0;
  int rc = Z_OK;
  while (true) {
    if (produced == out->size()) {
      if (static_cast<int64_t>(out->size()) * 2 > kMaxDecompressed) {
        inflateEnd(&zs);
        return "decompressed size exceeds the limit";
      }
      out->resize(out->size() * 2);
    }
    zs.next_out = reinterpret_cast<Bytef*>(out->data() + produced);
    zs.avail_out = static_cast<uInt>(out->size() - produced);
    rc = inflate(&zs, Z_NO_FLUSH);
    produced = out->size() - zs.avail_out;
    if (rc == Z_STREAM_END && window_bits > 0 && zs.avail_in >= 2 && zs.next_in[0] == 0x1f &&
        zs.next_in[1] == 0x8b) {
      inflateReset(&zs);  // another gzip member follows (writers may emit several)
      continue;
    }
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      return "truncated deflate stream";
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      inflateEnd(&zs);
      return std::string("corrupt deflate stream: ") + (zs.msg ? zs.msg : "error");
    }
  }
  inflateEnd(&zs);
  out->resize(produced);
  return "";
}

// One raw LZ4 block of exactly `expected` bytes.
std::string Lz4Block(std::string_view in, int64_t expected, std::string* out) {
  if (expected < 0) return "LZ4 block without a recorded size";
  if (expected > kMaxDecompressed) return "decompressed size exceeds the limit";
  if (in.size() > static_cast<size_t>(INT32_MAX)) return "LZ4 block too large";
  out->resize(static_cast<size_t>(expected));
  int got = LZ4_decompress_safe(in.data(), out->data(), static_cast<int>(in.size()),
                                static_cast<int>(expected));
  if (got < 0) return "corrupt LZ4 block";
  if (got != expected) {
    return "LZ4 block size " + std::to_string(got) + " != expected " + std::to_string(expected);
  }
  return "";
}

// Hadoop's LZ4 framing: (big-endian uncompressed size, compressed size, raw block) repeated.
bool Lz4Hadoop(std::string_view in, int64_t expected, std::string* out) {
  auto be32 = [](const char* p) {
    const auto* u = reinterpret_cast<const unsigned char*>(p);
    return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
  };
  if (expected < 0 || expected > kMaxDecompressed) return false;
  out->clear();
  std::string block;
  while (!in.empty()) {
    if (in.size() < 8) return false;
    uint32_t usize = be32(in.data()), csize = be32(in.data() + 4);
    in.remove_prefix(8);
    if (csize > in.size() || out->size() + usize > static_cast<size_t>(expected)) return false;
    if (!Lz4Block(in.substr(0, csize), usize, &block).empty()) return false;
    out->append(block);
    in.remove_prefix(csize);
  }
  return static_cast<int64_t>(out->size()) == expected;
}

std::string Brotli(std::string_view in, int64_t expected, std::string* out) {
  if (expected < 0) return "Brotli block without a recorded size";
  if (expected > kMaxDecompressed) return "decompressed size exceeds the limit";
  out->resize(static_cast<size_t>(expected));
  size_t got = out->size();
  if (BrotliDecoderDecompress(in.size(), reinterpret_cast<const uint8_t*>(in.data()), &got,
                              reinterpret_cast<uint8_t*>(out->data())) !=
      BROTLI_DECODER_RESULT_SUCCESS) {
    return "corrupt Brotli block";
  }
  if (static_cast<int64_t>(got) != expected) {
    return "Brotli block size " + std::to_string(got) + " != expected " + std::to_string(expected);
  }
  return "";
}

}  // namespace

std::string Decompress(Codec codec, std::string_view in, int64_t expected, std::string* out) {
  switch (codec) {
    case Codec::kNone:
      out->assign(in.data(), in.size());
      return "";
    case Codec::kSnappy: {
      size_t n = 0;
      if (!snappy::GetUncompressedLength(in.data(), in.size(), &n)) return "corrupt snappy block";
      if (static_cast<int64_t>(n) > kMaxDecompressed) return "decompressed size exceeds the limit";
      if (expected >= 0 && static_cast<int64_t>(n) != expected) {
        return "snappy block size " + std::to_string(n) + " != expected " +
               std::to_string(expected);
      }
      out->resize(n);
      if (!snappy::RawUncompress(in.data(), in.size(), out->data())) return "corrupt snappy block";
      return "";
    }
    case Codec::kDeflate:
      return Inflate(in, -15, expected, out);
    case Codec::kGzip:
      return Inflate(in, 15 + 32, expected, out);  // gzip or zlib header
    case Codec::kZstd: {
      unsigned long long n = ZSTD_getFrameContentSize(in.data(), in.size());
      if (n == ZSTD_CONTENTSIZE_ERROR) return "corrupt zstd frame";
      if (n != ZSTD_CONTENTSIZE_UNKNOWN) {
        if (static_cast<int64_t>(n) > kMaxDecompressed)
          return "decompressed size exceeds the limit";
        out->resize(n);
        size_t got = ZSTD_decompress(out->data(), n, in.data(), in.size());
        if (ZSTD_isError(got)) return std::string("corrupt zstd frame: ") + ZSTD_getErrorName(got);
        out->resize(got);
        return "";
      }
      // Streaming: size not recorded in the frame.
      ZSTD_DStream* ds = ZSTD_createDStream();
      ZSTD_initDStream(ds);
      out->clear();
      ZSTD_inBuffer ib{in.data(), in.size(), 0};
      std::string buf(ZSTD_DStreamOutSize(), '\0');
      while (ib.pos < ib.size) {
        ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
        size_t rc = ZSTD_decompressStream(ds, &ob, &ib);
        if (ZSTD_isError(rc)) {
          ZSTD_freeDStream(ds);
          return std::string("corrupt zstd frame: ") + ZSTD_getErrorName(rc);
        }
        out->append(buf.data(), ob.pos);
        if (static_cast<int64_t>(out->size()) > kMaxDecompressed) {
          ZSTD_freeDStream(ds);
          return "decompressed size exceeds the limit";
        }
        if (rc == 0) break;
        if (ob.pos == 0 && ib.pos == ib.size) break;
      }
      ZSTD_freeDStream(ds);
      return "";
    }
    case Codec::kLz4Raw:
      return Lz4Block(in, expected, out);
    case Codec::kLz4Hadoop:
      if (Lz4Hadoop(in, expected, out)) return "";
      return Lz4Block(in, expected, out);
    case Codec::kBrotli:
      return Brotli(in, expected, out);
  }
  return "unknown codec";
}

}  // namespace rsl::data
