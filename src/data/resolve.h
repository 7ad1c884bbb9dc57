// Avro schema resolution (the specification's "Schema Resolution" section) between the writer
// schema found in the data and the reader schema declared in the workload:
//  - records match field by name (or a reader field's alias); writer-only fields are ignored
//    (listed in Binding::ignored); reader-only fields need a default;
//  - primitives promote int -> long -> float -> double, and string <-> bytes;
//  - enums: every writer symbol must be a reader symbol (or the reader has a default);
//  - unions: a writer union resolves when each of its non-null branches resolves against the
//    reader (nulls are counted by the completeness check, not rejected here); a reader union
//    accepts a writer type that resolves against one of its branches;
//  - arrays and maps resolve by their items; fixed by size and name.
// Mismatches are DATA_SCHEMA_MISMATCH naming the field and both types.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "data/sink.h"
#include "schema/schema.h"

namespace rsl::data {

//! True when data written as `writer` can be read as `reader`.
bool TypesResolve(const schema::Type& writer, const schema::Type& reader);

//! How the writer's top-level fields map onto the plan's (reader's) fields.
struct Binding {
  std::vector<int> writer_to_reader;  //!< per writer field: reader field index, or -1
  std::vector<int> defaulted;         //!< reader fields absent from the writer (with default)
  std::vector<bool> default_is_null;  //!< per `defaulted` entry
  std::vector<std::string> ignored;   //!< writer fields the reader does not declare
};

//! The DATA_SCHEMA_MISMATCH for a declared field `name` without a default that the data
//! (whose top-level fields are `data_fields`) lacks: `why` says where it is missing, `file`
//! names the data, the hint names the closest data field or lists them all.
Error MissingFieldError(const std::string& name, const std::vector<schema::Field>& data_fields,
                        const std::string& why, const std::string& file);

//! Resolves field by field. `check_types` false matches names only (CSV headers, whose values
//! are checked one by one as they are parsed). `file` names the data in messages.
Result<Binding> Resolve(const schema::Schema& writer, const Plan& plan, const std::string& file,
                        bool check_types = true);

}  // namespace rsl::data
