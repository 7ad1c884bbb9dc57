#include "cli/cli.h"

#include <iostream>

namespace rsl::cli {

void FailWith(const Errors& errors) {
  for (const auto& e : errors) std::cerr << e.ToString() << "\n";
  std::cerr << (errors.empty() ? std::string("INTERNAL") : errors.front().code) << "\n";
  throw Exit{1};
}

void FailWith(const Error& error) { FailWith(Errors{error}); }

}  // namespace rsl::cli
