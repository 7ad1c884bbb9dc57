// Block decompression shared by the Avro and Parquet readers: snappy (raw), deflate (raw,
// Avro), gzip/zlib (Parquet GZIP; several gzip members one after another too), zstd, LZ4
// (Parquet LZ4_RAW: one raw block; Parquet's deprecated LZ4: Hadoop's framing, else one raw
// block, as other readers guess) and Brotli. Corrupt input is an error string, never a crash;
// output is capped (kMaxDecompressed) so a hostile header cannot exhaust memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rsl::data {

//! 1 GiB: far above any sane block or page (Avro blocks are ~64 KiB-16 MiB, Parquet pages
//! ~1 MiB), far below what a CI machine can hold.
inline constexpr int64_t kMaxDecompressed = 1ll << 30;

enum class Codec { kNone, kSnappy, kDeflate, kGzip, kZstd, kLz4Raw, kLz4Hadoop, kBrotli };

//! Decompresses `in` into `out` (replacing it). `expected` is the uncompressed size when the
//! format records it (Parquet; LZ4 and Brotli need it), else -1. Returns "" on success, else what
//! went wrong.
std::string Decompress(Codec codec, std::string_view in, int64_t expected, std::string* out);

}  // namespace rsl::data
