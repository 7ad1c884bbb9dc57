// What seedctl's client halves share (client.cc: the connection from flags, environment and
// context; client_contexts.cc: the contexts file).
#pragma once

#include <cstdlib>
#include <string>

namespace rsl::api {

//! The environment variable `name`; "" when it is not set.
inline std::string EnvVar(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace rsl::api
