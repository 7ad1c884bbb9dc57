// Helpers for the Slurm backend's unit tests (slurm*_test.cc): the recorded outputs of Slurm's
// client commands (tests/slurm/testdata/).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "base/file.h"

namespace rsl::backend {

//! tests/slurm/testdata/<name>, a real Slurm command's output; "" and a failed test when it
//! cannot be read.
inline std::string Recorded(const std::string& name) {
  auto text = ReadFile(std::string(RSL_SOURCE_DIR) + "/tests/slurm/testdata/" + name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

}  // namespace rsl::backend
