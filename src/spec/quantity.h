// Kubernetes-style quantities and Go-style durations, as SPEC.md writes them.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace rsl::spec {

//! cpu: 8, "8", "500m", 2.5 -> millicores (8000, 8000, 500, 2500).
Result<int64_t> ParseCpuMillis(const std::string& text);
//! memory: "32Gi", "1G", "512Mi", "1e9", plain bytes -> bytes. Binary Ki Mi Gi Ti Pi Ei,
//! decimal k M G T P E.
Result<int64_t> ParseBytes(const std::string& text);
//! "30s", "5m", "2h", "1h30m", "500ms", "1d" -> milliseconds. A bare number is an error
//! (the hint says to add a unit).
Result<int64_t> ParseDurationMs(const std::string& text);

//! 8000 -> "8", 500 -> "500m".
std::string FormatCpu(int64_t millis);
//! 34359738368 -> "32Gi" (exact binary units when possible, else plain bytes).
std::string FormatBytes(int64_t bytes);
//! Human-readable approximation for tables: 1.5Gi, 245Mi.
std::string FormatBytesHuman(int64_t bytes);
//! 5400000 -> "1h30m", 1500 -> "1.5s".
std::string FormatDuration(int64_t ms);

}  // namespace rsl::spec
