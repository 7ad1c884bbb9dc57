// File-system helpers: every OS error becomes an Error that keeps the path and strerror.
// The plain ones are Env::Default()'s (base/env.h); code that wants its file system handed
// in (fault tests, fakes) takes an Env* instead. The Read*IfExists/Beneath readers are
// for the hot path and for files someone else controls, and stay direct.
#pragma once

#include <cstdint>
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
//! ReadFileIfExists for a file someone else controls (a step's metrics or progress file, read
//! by a controller that may be root): a symbolic link at `path` is not followed and anything
//! but a regular file (a FIFO, a device) is not opened for reading. Errors as
//! ReadFileIfExists, and INVALID_ARGUMENT for a link or a file that is not regular.
Result<std::optional<std::string>> ReadUntrustedFileIfExists(const std::string& path,
                                                             size_t max_bytes);
//! `root`/`relative`, read only when no symbolic link is on the way from root and the file
//! is regular: a step's output published by a controller that may be root never reads what
//! a link planted by the step points to. Errors: INVALID_ARGUMENT (a link, not a regular
//! file), IO_ERROR.
Result<std::string> ReadFileBeneath(const std::string& root, const std::string& relative);
//! Writes to `path.tmp.<pid>`, fsyncs, renames over `path` and fsyncs the directory, so a
//! reader sees the old or the new contents, never a mix, even after a crash.
Status WriteFileAtomic(const std::string& path, const std::string& contents);
//! mkdir -p.
Status MakeDirs(const std::string& path);
//! mkdir -p, then the directory's mode is set to 0700: a state directory, which nothing but
//! its owner may enter (steps run as other users, docs/security.md).
Status MakePrivateDir(const std::string& path);
//! rm -rf; a missing path is not an error.
Status RemoveAll(const std::string& path);
bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);

//! The directory part of `path`, as dirname(1): everything before the last '/', "/" for a
//! file in the root, "." when there is no '/'. Trailing slashes are not removed first.
std::string Dirname(const std::string& path);

// The executable `name` in $PATH ("/usr/sbin:/usr/bin:/sbin:/bin" where unset or empty), or "".
std::string FindInPath(const std::string& name);
//! Bytes of the regular files below directory `dir`, recursively (symbolic links are not
//! followed); -1 when it cannot be read whole or holds more than `max_entries` entries.
int64_t TreeBytes(const std::string& dir, int64_t max_entries = INT64_MAX);
//! fsync a directory so renames and creations inside it are durable.
Status SyncDir(const std::string& path);

}  // namespace rsl
