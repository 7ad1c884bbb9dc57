// What format readers feed while they decode: one ChunkSink per unit of work (a CSV byte range,
// an Avro block run, a Parquet row group), holding per-field statistics of the declared
// (reader) schema's top-level fields. Readers convert each value to the reader field's kind
// (Avro promotions happen in the reader) and call the inline methods below, so the quality
// engine costs one predictable branch per value and never materialises columns.
//
// Rows are chunk-local (0-based); the engine turns them into global row numbers once it knows
// how many rows every earlier chunk had. Threading: a ChunkSink is used by one thread.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "data/distinct.h"
#include "schema/schema.h"

namespace rsl::data {

//! The physical class a reader field's values are delivered as.
enum class ValueKind : uint8_t {
  kBool,    //!< boolean
  kInt,     //!< int, long (and timestamps, dates)
  kDouble,  //!< float, double
  kString,  //!< string, bytes, enum (symbol), fixed
  kOther,   //!< arrays, maps, records: only presence is tracked
};

const char* ValueKindName(ValueKind kind);

//! One top-level field of the reader schema, as the quality engine needs it.
struct FieldPlan {
  std::string name;
  std::vector<std::string> aliases;
  std::optional<std::string> default_json;
  schema::TypePtr type;                //!< the reader type as declared (may be a nullable union)
  const schema::Type* base = nullptr;  //!< the non-null branch of `type`
  ValueKind kind = ValueKind::kOther;
  bool has_min = false, has_max = false;
  double min = 0, max = 0;
  //! The bounds for integer values, exact (INT64_MIN/MAX when unbounded).
  int64_t imin = std::numeric_limits<int64_t>::min();
  int64_t imax = std::numeric_limits<int64_t>::max();
  std::vector<std::string> enum_values;           //!< constraints.enum
  std::unordered_set<std::string_view> enum_set;  //!< views into enum_values
  int64_t array_size = 0;  //!< compact T[N]: every array must have N items (0: any)
  bool is_key = false;
  //! timestamp-micros: 1, timestamp-millis: 1000, timestamp-nanos: -1000 (divide); 0: none.
  int64_t ts_scale = 0;
  //! A nested path ("a.b", "items[]", "m{}"): the index of its top-level field; -1 for a
  //! top-level field. Nested paths follow the top-level fields in Plan::fields.
  int parent = -1;
};

//! The reader schema prepared for one validation.
//! Nested paths are planned where the contract addresses them: a nested record field with
//! constraints ("a.b"), the items of an array or map field with constraints ("items[]",
//! "m{}"), and a uniqueKey path. Readers that decode nested values (Parquet) feed them; for
//! other formats Plan::NestedPaths() names them as not checked.
struct Plan {
  std::vector<FieldPlan> fields;
  size_t top_level = 0;  //!< fields[0, top_level) are the schema's top-level fields
  int key_field = -1;    //!< index of the uniqueKey field, -1 when uniqueness is not checked
  int ts_field = -1;     //!< index of the first timestamp-logicalType field, -1 when none
  //! Index of the top-level field with this name (or alias), -1 when none.
  int FieldIndex(std::string_view name) const;
  //! Index of the top-level field or nested path ("a.b", "items[]"), -1 when none.
  int PathIndex(std::string_view path) const;
};

//! Builds the plan: kinds, constraints, key and timestamp fields. The plan keeps views into
//! itself (enum_set): do not copy it after building; hold it by pointer or unique_ptr.
void BuildPlan(const schema::Schema& reader, const std::string& unique_key, Plan* plan);

//! Every nested path of a primitive inside `reader`'s records, arrays and maps ("a.b",
//! "items[]", "m{}", "items[].x"): what a contract may address (did-you-mean hints).
std::vector<std::string> NestedPaths(const schema::Schema& reader);

//! The first value of a field that broke a rule (constraint or type), with how many did.
struct Violation {
  int64_t row = -1;    //!< chunk-local, then global (0-based) after merging
  std::string value;   //!< the offending value as text
  std::string detail;  //!< for type errors: what was expected
  int64_t count = 0;
};

struct FieldStats {
  int64_t nulls = 0;
  int64_t values = 0;  //!< non-null values
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  int64_t imin = std::numeric_limits<int64_t>::max();  //!< integers, exactly
  int64_t imax = std::numeric_limits<int64_t>::min();
  int64_t min_len = std::numeric_limits<int64_t>::max();  //!< strings: shortest
  int64_t max_len = 0;
  int64_t max_ts = std::numeric_limits<int64_t>::min();  //!< newest timestamp, micros
  Violation constraint;                                  //!< enum/min/max/array size
  Violation type_error;  //!< value that does not fit the declared type (CSV, JSONL)
};

class ChunkSink {
 public:
  //! `keys` may be null when the plan has no key field.
  ChunkSink(const Plan* plan, KeyCollector* keys)
      : stats(plan->fields.size()), plan_(plan), keys_(keys) {}

  void Null(int f) { stats[f].nulls++; }

  void Bool(int f, bool v) {
    FieldStats& s = stats[f];
    s.values++;
    if (f == plan_->key_field) keys_->AddInt(v ? 1 : 0);
  }

  void Int(int f, int64_t row, int64_t v) {
    FieldStats& s = stats[f];
    const FieldPlan& p = plan_->fields[f];
    s.values++;
    double d = static_cast<double>(v);
    if (d < s.min) s.min = d;
    if (d > s.max) s.max = d;
    if (v < s.imin) s.imin = v;
    if (v > s.imax) s.imax = v;
    if (v < p.imin || v > p.imax) Violate(&s.constraint, row, v);
    if (p.ts_scale != 0) {
      int64_t micros = p.ts_scale > 0 ? v * p.ts_scale : v / -p.ts_scale;
      if (micros > s.max_ts) s.max_ts = micros;
    }
    if (f == plan_->key_field) keys_->AddInt(v);
  }

  void Double(int f, int64_t row, double v) {
    FieldStats& s = stats[f];
    const FieldPlan& p = plan_->fields[f];
    s.values++;
    if (v < s.min) s.min = v;
    if (v > s.max) s.max = v;
    if ((p.has_min && !(v >= p.min)) || (p.has_max && !(v <= p.max))) {
      Violate(&s.constraint, row, v);
    }
    if (f == plan_->key_field) keys_->AddDouble(v);
  }

  void String(int f, int64_t row, std::string_view v) {
    FieldStats& s = stats[f];
    const FieldPlan& p = plan_->fields[f];
    s.values++;
    int64_t len = static_cast<int64_t>(v.size());
    if (len < s.min_len) s.min_len = len;
    if (len > s.max_len) s.max_len = len;
    if (!p.enum_set.empty() && p.enum_set.find(v) == p.enum_set.end()) {
      ViolateText(&s.constraint, row, v);
    }
    if (f == plan_->key_field) keys_->AddString(v);
  }

  //! As String(), with the enum membership already known (dictionary-encoded columns compute
  //! it once per dictionary entry).
  void StringKnown(int f, int64_t row, std::string_view v, bool in_enum) {
    FieldStats& s = stats[f];
    s.values++;
    int64_t len = static_cast<int64_t>(v.size());
    if (len < s.min_len) s.min_len = len;
    if (len > s.max_len) s.max_len = len;
    if (!in_enum) ViolateText(&s.constraint, row, v);
    if (f == plan_->key_field) keys_->AddString(v);
  }

  //! Arrays, maps, records: present; `items` checked against a compact T[N] size.
  void Other(int f, int64_t row, int64_t items = -1) {
    FieldStats& s = stats[f];
    const FieldPlan& p = plan_->fields[f];
    s.values++;
    if (p.array_size > 0 && items >= 0 && items != p.array_size) {
      ViolateText(&s.constraint, row, std::to_string(items) + " items");
    }
  }

  //! A value that cannot be read as the declared type (CSV text "abc" for a double).
  void TypeError(int f, int64_t row, std::string_view value, const char* expected);

  //! True once any field saw a type error: readers may stop early.
  bool failed() const { return failed_; }

  int64_t rows = 0;  //!< rows this chunk delivered
  std::vector<FieldStats> stats;

 private:
  static void Violate(Violation* v, int64_t row, int64_t value);
  static void Violate(Violation* v, int64_t row, double value);
  static void ViolateText(Violation* v, int64_t row, std::string_view value);

  const Plan* plan_;
  KeyCollector* keys_;
  bool failed_ = false;
};

}  // namespace rsl::data
