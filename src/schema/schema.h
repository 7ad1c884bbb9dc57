// One schema model for data contracts: the compact form
// ("feature_vector:float32[1024],label:int32") and Avro record JSON (primitives, logicalType,
// nullable unions, nested records, arrays, enums, maps, fixed, and RSL's `constraints`
// {enum, min, max}) both parse into it. It is also the writer schema that format readers
// report (from an Avro header, a Parquet footer, or inferred from CSV/JSONL).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::schema {

enum class Kind {
  kNull,
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kBytes,
  kString,
  kRecord,
  kEnum,
  kArray,
  kMap,
  kUnion,
  kFixed,
};

//! "int", "record", ... as Avro names them.
const char* KindName(Kind kind);

struct Field;

//! RSL's value constraints on a field (Avro extension attribute "constraints").
struct Constraints {
  std::vector<std::string> enum_values;  //!< allowed string values (empty: any)
  std::optional<double> min;
  std::optional<double> max;
  //! min/max exactly, when written as integers (longs beyond 2^53 lose digits as doubles).
  std::optional<int64_t> min_int;
  std::optional<int64_t> max_int;
  bool empty() const { return enum_values.empty() && !min && !max; }
};

//! An Avro type. Shared (immutable after parse) so records can be referenced by name.
struct Type {
  Kind kind = Kind::kNull;
  std::string name;                   //!< records, enums, fixed: the (full) name
  std::string logical_type;           //!< e.g. timestamp-micros, timestamp-millis, date, decimal
  std::vector<Field> fields;          //!< kRecord
  std::vector<std::string> symbols;   //!< kEnum
  std::shared_ptr<const Type> items;  //!< kArray (element), kMap (value)
  std::vector<std::shared_ptr<const Type>> branches;  //!< kUnion
  int64_t size = 0;  //!< kFixed: bytes; kArray from the compact form T[N]: N (0 = any)
  //! logicalType decimal: the number of digits and how many of them follow the point
  //! (value = unscaled integer / 10^scale). 0/0 when not a decimal.
  int precision = 0;
  int scale = 0;

  //! True for logicalType decimal (on bytes or fixed in Avro; on a Parquet column as double).
  bool IsDecimal() const { return logical_type == "decimal"; }

  //! Renders as Avro JSON (canonical-ish: names, types, logicalType, symbols...).
  std::string ToJson() const;
  //! Short human form used in messages: "long", "union[null,string]", "array<float>[128]".
  std::string ToString() const;
  //! True for a union whose branches include null.
  bool IsNullable() const;
  //! For a nullable union of null + one type: that type; otherwise this.
  const Type& NonNull() const;
};

using TypePtr = std::shared_ptr<const Type>;

struct Field {
  std::string name;
  TypePtr type;
  std::optional<std::string> default_json;  //!< the Avro "default", as JSON text
  Constraints constraints;
  std::vector<std::string> aliases;
};

//! A parsed schema: always a record at the top level for data sets.
struct Schema {
  TypePtr root;
  const Type& record() const { return *root; }
  const Field* FindField(const std::string& name) const;
  //! A top-level field or a field of nested records by its dotted path ("a.b": field b of the
  //! record a, nullable or not); nullptr when none.
  const Field* FindPath(const std::string& path) const;
  //! Every dotted path FindPath finds (top-level names first), for did-you-mean hints.
  std::vector<std::string> RecordPaths() const;
  std::string ToJson() const { return root ? root->ToJson() : "null"; }
};

//! Parses either form: text starting with '{' is Avro JSON, anything else the compact form.
//! Errors carry code SPEC_INVALID, a message naming the field and, where known, the column
//! (pos.line/column relative to the start of `text`, 1-based).
Result<Schema> ParseSchema(const std::string& text);
//! How an invalid logical type (a decimal whose scale exceeds its precision, or that does not
//! fit its fixed size) is treated: an error in a contract; ignored, as the Avro specification
//! asks of readers, in a writer schema read from a data file.
enum class InvalidLogical { kError, kIgnore };
Result<Schema> ParseAvroSchema(const std::string& json,
                               InvalidLogical invalid = InvalidLogical::kError);
Result<Schema> ParseCompactSchema(const std::string& text);

//! The output schema of `schemaRef: input` + features (each feature: name and a compact type
//! such as "float32" or "float32[128]"). A feature whose name already exists is an error.
struct FeatureDecl {
  std::string name;
  std::string type;
};
Result<Schema> ExtendSchema(const Schema& input, const std::vector<FeatureDecl>& features);

}  // namespace rsl::schema
