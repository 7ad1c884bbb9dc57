// Format readers: Avro object container files, CSV, JSON Lines and Parquet, all reading from
// one in-memory Blob. A reader parses its header/footer on Open (the writer schema), is bound
// to the declared schema's Plan, and then decodes independent chunks (Avro blocks, Parquet
// row groups, CSV/JSONL byte ranges) into ChunkSinks, possibly from several threads at once.
//
// Corrupt or truncated input is DATA_FORMAT_ERROR naming the file and the byte offset; a value
// that does not fit the declared type is DATA_SCHEMA_MISMATCH. Readers never crash or loop on
// bad input (each has a libFuzzer target: data_avro_fuzzer, data_csv_fuzzer, data_jsonl_fuzzer,
// data_parquet_fuzzer).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "data/resolve.h"
#include "data/sink.h"
#include "data/storage.h"
#include "schema/schema.h"

namespace rsl::data {

enum class Format { kAvro, kCsv, kJsonl, kParquet };
const char* FormatName(Format f);

//! The declared format ("avro", "csv", "jsonl"/"json", "parquet"), or by magic bytes (Obj\x01,
//! PAR1), or by the name's extension, or a first '{' (JSON Lines). A compressed file
//! (data/compressed.h) is told by the name without its compression extension ("a.csv.gz":
//! CSV) or by its decompressed first bytes. `data` is the file's content (only its first bytes
//! are looked at). Nothing fits: DATA_FORMAT_ERROR with a hint.
Result<Format> DetectFormat(const std::string& declared, const std::string& name,
                            std::string_view data);

struct ReadOptions {
  char csv_delimiter = ',';
  //! Target size of one CSV/JSONL chunk: big enough to amortise a task, small enough that
  //! two threads stay balanced on files of a few MiB.
  size_t text_chunk_bytes = 8u << 20;
};

class FileReader {
 public:
  virtual ~FileReader() = default;
  //! The writer schema: from the Avro header or Parquet footer; for CSV the header's names
  //! (typed string); for JSONL inferred from the first lines.
  virtual const schema::Schema& writer_schema() const = 0;
  //! Resolves the writer schema against the plan (DATA_SCHEMA_MISMATCH) and prepares decoding.
  //! The plan must outlive the reader.
  virtual Result<Binding> Bind(const Plan* plan) = 0;
  //! Number of independent chunks (valid after Bind).
  virtual size_t chunks() const = 0;
  //! Decodes one chunk. Thread-safe across different chunks.
  virtual Status ReadChunk(size_t chunk, ChunkSink* sink) = 0;
  //! After every chunk was read (not after a failed read): checks that need the whole file,
  //! e.g. that a declared JSONL field occurs in some record.
  virtual Status Finish() { return Status::Ok(); }
  //! Whether ReadChunk feeds the plan's nested paths ("a.b", "items[]"): Parquet only.
  virtual bool ReadsNestedPaths() const { return false; }
};

//! The common part of the readers of files that carry their writer schema (Avro, Parquet):
//! Bind resolves that schema against the plan and keeps the writer-to-reader column map.
class SelfDescribedReader : public FileReader {
 public:
  const schema::Schema& writer_schema() const override { return schema_; }
  Result<Binding> Bind(const Plan* plan) override;

  //! Makes a `Reader(blob, name)` and parses its header/footer (`Status Reader::Open()`).
  template <class Reader>
  static Result<std::unique_ptr<FileReader>> OpenAs(std::shared_ptr<const Blob> blob,
                                                    const std::string& name) {
    auto r = std::make_unique<Reader>(std::move(blob), name);
    RSL_RETURN_IF_ERROR(r->Open());
    return std::unique_ptr<FileReader>(std::move(r));
  }

 protected:
  SelfDescribedReader(std::shared_ptr<const Blob> blob, std::string name)
      : blob_(std::move(blob)), name_(std::move(name)) {}

  std::shared_ptr<const Blob> blob_;
  std::string name_;
  schema::Schema schema_;       //!< the writer schema, set by the reader's Open
  const Plan* plan_ = nullptr;  //!< after Bind
  std::vector<int> map_;        //!< writer field -> reader field, after Bind
};

//! Parses the header/footer. `name` is used in messages (the URI). CSV and JSON Lines may be
//! gzip- or zstd-compressed (data/compressed.h; read streaming, as one chunk); a compressed
//! Avro or Parquet file is DATA_FORMAT_ERROR (they compress their blocks themselves).
Result<std::unique_ptr<FileReader>> OpenReader(Format format, std::shared_ptr<const Blob> blob,
                                               const std::string& name,
                                               const ReadOptions& options = {});

//! Per-format constructors (OpenReader dispatches to them).
Result<std::unique_ptr<FileReader>> OpenAvro(std::shared_ptr<const Blob> blob,
                                             const std::string& name);
Result<std::unique_ptr<FileReader>> OpenCsv(std::shared_ptr<const Blob> blob,
                                            const std::string& name, const ReadOptions& options);
Result<std::unique_ptr<FileReader>> OpenJsonl(std::shared_ptr<const Blob> blob,
                                              const std::string& name, const ReadOptions& options);
Result<std::unique_ptr<FileReader>> OpenParquet(std::shared_ptr<const Blob> blob,
                                                const std::string& name);

//! What an integer out of its declared type's range is not ("2147483648 at a.csv row 2 is not
//! within the int range [...]"), for ChunkSink::TypeError.
inline constexpr char kOutsideInt[] = "within the int range [-2147483648, 2147483647]";
inline constexpr char kOutsideLong[] =
    "within the long range [-9223372036854775808, 9223372036854775807]";

//! DATA_FORMAT_ERROR "<name>: byte <offset>: <what>".
Error FormatError(const std::string& name, int64_t offset, const std::string& what);

//! As FormatError, for a place in the decompressed text of a compressed file when
//! `decompressed`: "<name>: byte <offset> of the decompressed text: <what>".
Error TextFormatError(const std::string& name, int64_t offset, bool decompressed,
                      const std::string& what);

//! A primitive type for inferred writer schemas; `nullable` makes it union[null, T].
schema::TypePtr PrimitiveType(schema::Kind kind, bool nullable = false);
//! A record type named `name` with the given fields.
schema::Schema RecordSchema(const std::string& name, std::vector<schema::Field> fields);

//! Text values of CSV/JSONL: "2024-06-15T10:00:00.5Z", "2024-06-15 10:00:00+08:00",
//! "2024-06-15" -> microseconds since the epoch (no zone: UTC). False when not a timestamp.
bool ParseTimestampMicros(std::string_view text, int64_t* micros);
//! "true"/"false"/"1"/"0" (any case for the words).
bool ParseBool(std::string_view text, bool* value);

//! Splits text at line ends into chunks of about `target` bytes (CSV: only at line ends
//! outside quoted fields, found by quote parity). Returns chunk start offsets plus the end.
std::vector<size_t> SplitLines(std::string_view text, size_t begin, size_t target, bool quotes);

//! The end (one past the '\n') of the last complete line of `text`, which starts at a record
//! boundary; with `quotes` (CSV) a line break inside a quoted field does not end a line.
//! 0 when `text` holds no complete line.
size_t LastLineEnd(std::string_view text, bool quotes);

//! Bytes of decompressed text a streaming CSV/JSONL reader decodes at a time (plus the rest of
//! a record that straddles the window's end).
inline constexpr size_t kTextWindowBytes = 1u << 20;
//! Bytes of a compressed CSV/JSONL file's text that its reader decompresses at Open (more when
//! the first record is longer): the header and the rows sampled to infer the schema.
inline constexpr size_t kHeadBytes = 256u << 10;

}  // namespace rsl::data
