// The data contract check: existence -> schema -> constraints -> quality (completeness,
// uniqueness, freshness), as SPEC.md "data" orders them, computed in ONE multi-threaded pass
// over every data file under the input URI (files x chunks as tasks).
//
// Messages and codes are the contract (SPEC.md), e.g.
//   DATA_QUALITY_COMPLETENESS_BELOW_THRESHOLD amount: non-null 99.91% < 99.95% (9 of 10000 null)
//   DATA_QUALITY_UNIQUENESS_BELOW_THRESHOLD tx_id: distinct 99.98% < 99.99% (9998 of 10000
//   distinct) DATA_QUALITY_FRESHNESS_EXCEEDED timestamp: newest record 2024-06-15T10:00:00Z is 3h0m
//   old > 1h DATA_CONSTRAINT_VIOLATION action: 3 of 10000 values not in enum [click, cart, buy]
//   (first "refund" at part-0.csv row 17)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "base/status.h"
#include "data/catalog.h"
#include "data/distinct.h"
#include "data/format.h"
#include "schema/schema.h"
#include "spec/workload.h"

namespace rsl::data {

struct ValidateOptions {
  int threads = 0;                                   //!< 0: all cores
  int64_t distinct_budget = kDefaultDistinctBudget;  //!< bytes before exact-distinct spills
  std::string spill_dir;                             //!< "" : a temporary directory
  Env* env = nullptr;    //!< the clock (freshness); nullptr: Env::Default() (tests: a fake one)
  bool checksum = true;  //!< sha256 of every file (DataDescriptor)
  //! Where the input block sits in its file: errors about its own fields carry the full
  //! path (`spec.data.input.uri`, `spec.data.input.quality.uniqueKey`). Errors about a
  //! field of the data carry the field's path in the data (`amount`, `nested.x`).
  std::string input_path = "spec.data.input";
  ReadOptions read;
};

//! {uri, schema, version, checksum, schemaFingerprint, format, files, rows, bytes}: how every
//! data set that crosses the system is named (lineage, model provenance).
//! checksum: "sha256:<hex>" over "<relative path> <size> <sha256 of the file>\n" lines in
//! path order; version: the first 16 hex digits of sha256(schema JSON + checksum);
//! schemaFingerprint: "sha256:<hex>" of the schema JSON.
struct DataDescriptor {
  std::string uri;
  std::string schema;  //!< Avro JSON
  std::string version;
  std::string checksum;
  std::string schema_fingerprint;
  std::string format;
  int64_t files = 0;
  int64_t rows = 0;
  int64_t bytes = 0;  //!< the files' total size as stored (compressed files: compressed)
  nlohmann::json ToJson() const;
};

struct FieldReport {
  std::string name;
  std::string type;
  int64_t nulls = 0;
  int64_t values = 0;
  std::optional<double> min, max;           //!< numbers
  std::optional<int64_t> min_int, max_int;  //!< integer fields: min and max exactly
  std::optional<int64_t> min_len, max_len;  //!< strings
  int64_t violations = 0;                   //!< constraint violations
  std::string first_violation;              //!< "\"refund\" at part-0.csv row 17"
};

struct CheckResult {
  std::string name;     //!< existence, schema, constraints, completeness, uniqueness, freshness
  std::string state;    //!< ok | failed | skipped
  std::string code;     //!< the error code when failed
  std::string message;  //!< what was measured (ok) or the error message (failed)
};

struct ValidationReport {
  std::string uri;
  std::string format;
  int64_t files = 0;
  int64_t rows = 0;
  int64_t bytes = 0;
  std::vector<FieldReport> fields;
  std::vector<CheckResult> checks;
  std::vector<std::string> notes;  //!< e.g. writer fields the declared schema ignores
  std::string unique_key;
  std::optional<int64_t> distinct_keys;
  std::optional<int64_t> newest_micros;  //!< newest record (or file mtime, see freshness_from)
  std::string freshness_from;            //!< "field <name>" or "file mtime"
  DataDescriptor descriptor;
  double seconds = 0;
  Status status;  //!< OK or the first failure (its Error has code, path = field, message)

  nlohmann::json ToJson() const;
  //! One line per check ("completeness: ok: ..."), then "OK" or the first failure's code.
  std::string ToText() const;
};

//! Validates `input` (uri, format, schema, quality). `catalog` resolves non-file URIs (may be
//! null). Never throws; every failure is in report.status and report.checks.
ValidationReport Validate(const spec::DataInput& input, Catalog* catalog,
                          const ValidateOptions& options = {});

//! Per-field statistics of the data at `uri` with its own (writer or inferred) schema.
ValidationReport Profile(const std::string& uri, const std::string& format, Catalog* catalog,
                         const ValidateOptions& options = {});

//! The schema of the data at `uri`: the writer schema of Avro/Parquet; for CSV and JSONL
//! inferred from the first rows (long, double, boolean, else string; nullable where a
//! sampled value is empty/null). Used by `datasource scan` and `data profile`.
Result<schema::Schema> InferSchema(const std::string& uri, const std::string& format,
                                   Catalog* catalog);

//! (measured, threshold) rendered with the same decimals: at least 2, as many as the threshold
//! needs, more until they differ; the measured value truncated, never rounded up to pass.
std::pair<std::string, std::string> FormatPercents(double measured, double threshold);
//! 3725000 -> "1h2m5s"; 3600000 -> "1h"; 1500 -> "1.5s".
std::string FormatDurationMs(int64_t ms);
//! Microseconds since the epoch -> "2024-06-15T10:00:00Z" (fraction when non-zero).
std::string FormatTimestampMicros(int64_t micros);

}  // namespace rsl::data
