// File-system helpers: every OS error becomes an Error that keeps the path and strerror.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl {

Result<std::string> ReadFile(const std::string& path);
//! A small file that may not exist: nullopt when it does not (one open, no stat, no error
//! built: for hot paths that usually find nothing). Errors: IO_ERROR (unreadable), or
//! INVALID_ARGUMENT when it holds more than `max_bytes`.
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path, size_t max_bytes);
//! Writes to `path.tmp.<pid>`, fsyncs, renames over `path` and fsyncs the directory, so a
//! reader sees the old or the new contents, never a mix, even after a crash.
Status WriteFileAtomic(const std::string& path, const std::string& contents);
//! mkdir -p.
Status MakeDirs(const std::string& path);
//! rm -rf; a missing path is not an error.
Status RemoveAll(const std::string& path);
bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
//! fsync a directory so renames and creations inside it are durable.
Status SyncDir(const std::string& path);

}  // namespace rsl
