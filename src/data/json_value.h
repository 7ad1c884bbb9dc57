// Type checks of nested values written as JSON: JSONL arrays, maps and records, and the
// JSON text a CSV cell holds for an array (`"[1.5, 2]"`) or a map. A value fits a declared
// type when every item fits, recursively, by the same rules the readers use for top-level
// values (a JSON integer fits a float, a string fits a string, bytes, enum symbol or fixed).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string_view>

#include "schema/schema.h"

namespace rsl::data {

//! True when `v` can be read as `type` (null fits a nullable type only).
bool JsonFits(const schema::Type& type, simdjson::dom::element v);

//! Parses `text` as JSON and checks it against `type`. `*items` is set to the number of
//! items of a top-level array (-1 otherwise). False when the text is not JSON or does not fit.
bool JsonTextFits(const schema::Type& type, std::string_view text, int64_t* items);

//! Whether `v` is within the range of a 32-bit Avro int.
bool FitsInt32(int64_t v);

//! "an array of float", "a map of long", "a record": what a nested type expects, for messages.
const char* NestedExpectation(const schema::Type& type);

}  // namespace rsl::data
