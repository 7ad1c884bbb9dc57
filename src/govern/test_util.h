// Helpers for the govern layer's tests.
#pragma once

#include <string>

namespace rsl::govern {

//! tests/govern/testdata/: price tables, policies and strategies the tests read.
inline const std::string kTestdata = std::string(RSL_SOURCE_DIR) + "/tests/govern/testdata/";

}  // namespace rsl::govern
