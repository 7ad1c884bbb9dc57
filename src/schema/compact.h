// The compact schema form ("feature_vector:float32[1024],label:int32"). Internal to schema/.
#pragma once

#include <string>

#include "base/status.h"
#include "schema/schema.h"

namespace rsl::schema {

//! One compact type: bool int32 int64 float32 float64 string bytes timestamp, optionally
//! followed by [N] (a fixed-size array, N >= 1). Errors: SPEC_INVALID naming the type.
Result<TypePtr> ParseCompactType(const std::string& text);

//! The compact type names, for hints.
const std::vector<std::string>& CompactTypeNames();

//! True for Avro names: [A-Za-z_][A-Za-z0-9_]*.
bool IsAvroName(const std::string& name);

}  // namespace rsl::schema
