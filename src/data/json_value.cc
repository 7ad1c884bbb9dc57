#include "data/json_value.h"

#include <limits>
#include <string>

namespace rsl::data {

using schema::Kind;
using T = simdjson::dom::element_type;

bool FitsInt32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

bool JsonFits(const schema::Type& type, simdjson::dom::element v) {
  const T t = v.type();
  switch (type.kind) {
    case Kind::kNull:
      return t == T::NULL_VALUE;
    case Kind::kUnion:
      for (const auto& b : type.branches) {
        if (JsonFits(*b, v)) return true;
      }
      return false;
    case Kind::kBoolean:
      return t == T::BOOL;
    case Kind::kInt:
      return t == T::INT64 && FitsInt32(v.get_int64().value_unsafe());
    case Kind::kLong:
      return t == T::INT64;
    case Kind::kFloat:
    case Kind::kDouble:
      return t == T::INT64 || t == T::UINT64 || t == T::DOUBLE;
    case Kind::kString:
    case Kind::kBytes:
    case Kind::kFixed:
      return t == T::STRING;
    case Kind::kEnum: {
      if (t != T::STRING) return false;
      std::string_view s = v.get_string().value_unsafe();
      for (const auto& sym : type.symbols) {
        if (sym == s) return true;
      }
      return false;
    }
    case Kind::kArray: {
      if (t != T::ARRAY) return false;
      // A named array: value_unsafe() refers into the temporary result.
      simdjson::dom::array array = v.get_array().value_unsafe();
      for (auto item : array) {
        if (!type.items || !JsonFits(*type.items, item)) return false;
      }
      return true;
    }
    case Kind::kMap: {
      if (t != T::OBJECT) return false;
      simdjson::dom::object object = v.get_object().value_unsafe();
      for (auto field : object) {
        if (!type.items || !JsonFits(*type.items, field.value)) return false;
      }
      return true;
    }
    case Kind::kRecord: {
      if (t != T::OBJECT) return false;
      simdjson::dom::object obj = v.get_object().value_unsafe();
      for (const auto& f : type.fields) {
        simdjson::dom::element value;
        if (obj[f.name].get(value) != simdjson::SUCCESS) {
          if (!f.default_json && !f.type->IsNullable()) return false;
          continue;
        }
        if (!JsonFits(*f.type, value)) return false;
      }
      return true;
    }
  }
  return false;
}

bool JsonTextFits(const schema::Type& type, std::string_view text, int64_t* items) {
  *items = -1;
  simdjson::dom::parser parser;
  simdjson::dom::element v;
  if (parser.parse(text.data(), text.size()).get(v) != simdjson::SUCCESS) return false;
  if (v.type() == T::ARRAY) *items = static_cast<int64_t>(v.get_array().value_unsafe().size());
  return JsonFits(type, v);
}

const char* NestedExpectation(const schema::Type& type) {
  switch (type.kind) {
    case Kind::kArray:
      return "an array of the declared items (JSON, e.g. [1.5, 2])";
    case Kind::kMap:
      return "a map of the declared values (JSON, e.g. {\"k\": 1})";
    case Kind::kRecord:
      return "a record with the declared fields (JSON object)";
    default:
      return "a value of the declared type";
  }
}

}  // namespace rsl::data
