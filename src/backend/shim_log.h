// An attempt's log: its stdout+stderr, written to the log file created at the first byte,
// with the step's secret values masked.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backend/shim_launch.h"

namespace rsl::shim {

//! Replaces every secret value in `data` by ***.
void Mask(std::string* data, const std::vector<std::string>& secrets);

//! Appends to the attempt's log, created at the first byte: a step that prints nothing costs
//! no file. Short writes are retried; a log that cannot be opened drops the output.
void WriteLog(Attempt* a, const char* data, size_t len);

}  // namespace rsl::shim
