// Helpers for the expression language's tests.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "expr/expr.h"

namespace rsl::expr {

//! A Context whose references are the keys of `values` (Reference::ToString()).
class MapContext : public Context {
 public:
  std::map<std::string, Value> values;
  std::optional<Value> Lookup(const Reference& ref) const override {
    auto it = values.find(ref.ToString());
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace rsl::expr
