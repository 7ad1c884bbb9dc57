// Compressed text files (CSV, JSON Lines): gzip (RFC 1952; several members one after another,
// as `cat a.gz b.gz` or pigz make them) and zstd (RFC 8878; several frames likewise). The
// compression is told by magic bytes (1f 8b, 28 b5 2f fd), else by the name's extension
// (.gz, .gzip, .zst, .zstd). Decompression streams: a reader pulls windows of text, so memory
// stays bounded by the window (plus the longest record), never by the decompressed file.
//
// Corrupt or truncated input is DATA_FORMAT_ERROR "<name>: byte <offset>: corrupt gzip stream
// (...)", the offset being how far into the compressed file decompression got.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace rsl::data {

enum class Compression { kNone, kGzip, kZstd };
const char* CompressionName(Compression c);

//! By the magic bytes at the start of `head`; else by the extension of `name`; else kNone.
Compression DetectCompression(const std::string& name, std::string_view head);
//! `name` without a compression extension: "day=1/a.csv.gz" -> "day=1/a.csv".
std::string StripCompressionExtension(const std::string& name);

//! Pulls decompressed bytes out of one compressed file held in memory.
//! Threading: one thread at a time.
class Decompressor {
 public:
  virtual ~Decompressor() = default;
  //! Appends up to `max` (> 0) decompressed bytes to *out; appends nothing only at the end of
  //! the stream (done() is true then). A corrupt or truncated stream is an error naming the
  //! place; the decompressor is unusable after one.
  virtual Status Read(size_t max, std::string* out) = 0;
  //! True once every byte of the input was decompressed.
  virtual bool done() const = 0;
};

//! A decompressor of `in` (which must outlive it); `name` is used in messages.
//! `c` must not be kNone.
std::unique_ptr<Decompressor> NewDecompressor(Compression c, std::string_view in,
                                              const std::string& name);

//! Decompresses the rest of the stream, throwing the text away: a reader that stopped early
//! (bad text, a value of the wrong type) learns whether the cause was a corrupt stream, which
//! gzip and zstd can only prove by checksums at the end of a member or frame.
Status Drain(Decompressor* d);

//! Feeds the decompressed text to `consume(text, offset)` in runs of whole lines (each run is
//! cut after its last line end, found by LastLineEnd with `quotes`; the rest waits for more
//! text; the last run is whatever remains), `offset` being where the run starts in the
//! decompressed text. The first `skip` bytes (a header, a byte order mark) are left out. Ends
//! early when `consume` fails or `stop()` turns true: then the rest of the stream is checked
//! (Drain), and its error, when it has one, is returned as the cause.
Status StreamLines(Decompressor* d, size_t skip, bool quotes, const std::function<bool()>& stop,
                   const std::function<Status(std::string_view text, int64_t offset)>& consume);

//! `text_error` (bad text at the start of a compressed file), unless decompressing the whole
//! stream fails: then that failure, the cause. Also for kNone: `text_error` as is.
Status StreamErrorOr(Compression c, std::string_view in, const std::string& name,
                     Status text_error);

//! Decompresses up to `max` bytes of the start of `in` (or less: the whole text when shorter).
Status DecompressHead(Compression c, std::string_view in, const std::string& name, size_t max,
                      std::string* out);

}  // namespace rsl::data
