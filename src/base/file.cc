#include "base/file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include "base/codes.h"
#include "base/env.h"
#include "base/strings.h"

namespace rsl {

namespace {

// Reads `fd` to its end (at most `max_bytes`) and closes it.
Result<std::string> ReadToEnd(int fd, const std::string& path, size_t max_bytes) {
  std::string out;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return OsError(codes::kIoError, "cannot read", path, e);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      return Error(codes::kInvalidArgument,
                   path + " is larger than " + std::to_string(max_bytes) + " bytes")
          .Value(path);
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) { return Env::Default()->ReadFile(path); }

Result<std::optional<std::string>> ReadFileIfExists(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return OsError(codes::kIoError, "cannot open", path, errno);
  }
  auto text = ReadToEnd(fd, path, max_bytes);
  if (!text.ok()) return text.error();
  return std::optional<std::string>(std::move(*text));
}

Result<std::optional<std::string>> ReadUntrustedFileIfExists(const std::string& path,
                                                             size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    if (errno == ELOOP) {
      return Error(codes::kInvalidArgument, path + " is a symbolic link: not read").Value(path);
    }
    return OsError(codes::kIoError, "cannot open", path, errno);
  }
  struct stat st {};
  // More than one link: possibly a hard link to someone else's file (where the kernel does
  // not forbid them, fs.protected_hardlinks=0). A step's own report has one.
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    ::close(fd);
    return Error(codes::kInvalidArgument,
                 path + " is not a regular file with a single link: not read")
        .Value(path);
  }
  auto text = ReadToEnd(fd, path, max_bytes);
  if (!text.ok()) return text.error();
  return std::optional<std::string>(std::move(*text));
}

Result<std::string> ReadFileBeneath(const std::string& root, const std::string& relative) {
  std::string path = root + "/" + relative;
  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return OsError(codes::kIoError, "cannot open directory", root, errno);
  open_how how{};
  how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = int(::syscall(SYS_openat2, dir, relative.c_str(), &how, sizeof(how)));
  int e = errno;
  if (fd < 0 && e == ENOSYS) {
    // Kernels before 5.6: no link at the end, and the file found must lie under root.
    fd = ::openat(dir, relative.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    e = errno;
    if (fd >= 0) {
      char real_root[PATH_MAX], real_file[PATH_MAX];
      std::string self = "/proc/self/fd/" + std::to_string(fd);
      ssize_t n = ::readlink(self.c_str(), real_file, sizeof(real_file) - 1);
      if (!::realpath(root.c_str(), real_root) || n <= 0) {
        ::close(fd);
        fd = -1;
        e = ELOOP;
      } else {
        real_file[n] = 0;
        std::string prefix = std::string(real_root) + "/";
        if (std::string(real_file).compare(0, prefix.size(), prefix) != 0) {
          ::close(fd);
          fd = -1;
          e = ELOOP;
        }
      }
    }
  }
  ::close(dir);
  if (fd < 0) {
    if (e == ELOOP || e == EXDEV) {
      return Error(codes::kInvalidArgument,
                   path + " is or passes through a symbolic link: not read")
          .Value(path)
          .Hint(
              "outputs are published as regular files and directories; copy what a link "
              "points to instead");
    }
    return OsError(codes::kIoError, "cannot open", path, e);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error(codes::kInvalidArgument, path + " is not a regular file: not read").Value(path);
  }
  return ReadToEnd(fd, path, std::string().max_size());
}

Status MakePrivateDir(const std::string& path) {
  RSL_RETURN_IF_ERROR(MakeDirs(path));
  return Env::Default()->Chmod(path, 0700);
}

Status SyncDir(const std::string& path) { return Env::Default()->SyncDir(path); }

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  return Env::Default()->WriteFileAtomic(path, contents);
}

Status MakeDirs(const std::string& path) { return Env::Default()->MakeDirs(path); }

Status RemoveAll(const std::string& path) { return Env::Default()->RemoveAll(path); }

bool PathExists(const std::string& path) { return Env::Default()->PathExists(path); }

bool IsDirectory(const std::string& path) { return Env::Default()->IsDirectory(path); }

int64_t TreeBytes(const std::string& dir, int64_t max_entries) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int64_t total = 0;
  int64_t entries = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++entries > max_entries) return -1;
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return ec ? -1 : total;
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : Split(path && *path ? path : "/usr/sbin:/usr/bin:/sbin:/bin", ':')) {
    if (dir.empty()) continue;
    std::string f = dir + "/" + name;
    if (::access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

}  // namespace rsl
