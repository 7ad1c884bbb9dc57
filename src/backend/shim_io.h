// rsl-shim's small system-call helpers: the clocks, and whole reads and writes of the small
// files the supervisor touches (cgroup controls, /proc entries).
#pragma once

#include <cstdint>
#include <string>

namespace rsl::shim {

//! CLOCK_MONOTONIC in milliseconds: deadlines and durations.
int64_t NowMs();
//! CLOCK_REALTIME in microseconds: when an attempt started and ended.
int64_t RealUs();

//! Writes `s` to the existing file `path` (a cgroup control, a /proc id map) in one write().
//! False when it cannot be opened or the write is short.
bool WriteString(const std::string& path, const std::string& s);
//! The whole file, or "" when it cannot be opened.
std::string ReadSmall(const std::string& path);
//! The number after the first `key` in `text` ("oom_kill " in memory.events), -1 if absent.
long long ReadNumberAfter(const std::string& text, const std::string& key);

//! "rsl-shim: <what><arg>: <strerror(err)>" on stderr, in write() calls only: a step's child
//! uses it between fork and exec, where stderr is already the step's log.
void WriteErr(const char* what, const char* arg, int err);

}  // namespace rsl::shim
