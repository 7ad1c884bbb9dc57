#include "base/file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include "base/codes.h"

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

Result<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OsError(codes::kIoError, "cannot open", path, errno);
  return ReadToEnd(fd, path, std::string().max_size());
}

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
          .Hint("outputs are published as regular files and directories; copy what a link "
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
  if (::chmod(path.c_str(), 0700) != 0) return OsError(codes::kIoError, "cannot chmod", path, errno);
  return Status::Ok();
}

Status SyncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return OsError(codes::kIoError, "cannot open directory", path, errno);
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  if (rc != 0) return OsError(codes::kIoError, "cannot fsync", path, e);
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return OsError(codes::kIoError, "cannot create", tmp, errno);
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return OsError(codes::kIoError, "cannot write", tmp, e);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return OsError(codes::kIoError, "cannot fsync", tmp, e);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return OsError(codes::kIoError, "cannot rename onto", path, e);
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDir(dir.empty() ? "." : dir);
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return OsError(codes::kIoError, "cannot create directory", path, ec.value());
  return Status::Ok();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return OsError(codes::kIoError, "cannot remove", path, ec.value());
  return Status::Ok();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace rsl
