// Reading one field of a Kubernetes object as the API server (or a test) sent it: a missing
// member, a member of another type, or a parent that is not an object reads as empty.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace rsl::k8s {

//! `j[key]` where `j` is an object and that member a string; "" otherwise.
inline std::string Str(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace rsl::k8s
