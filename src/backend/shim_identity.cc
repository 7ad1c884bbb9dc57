#include "backend/shim_identity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "backend/shim_io.h"

namespace rsl::shim {

bool InOurUserNamespace(pid_t pid) {
  static const std::string ours = ReadSmall("/proc/self/uid_map");
  if (pid <= 0) return false;
  return ReadSmall("/proc/" + std::to_string(pid) + "/uid_map") == ours;
}

bool GiveDir(const std::string& dir, uid_t uid, gid_t gid) {
  // Already so (a spare directory of the same identity, see SpareDirs): one system call.
  struct stat st {};
  if (lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid && st.st_gid == gid &&
      (st.st_mode & 07777) == 0700) {
    return true;
  }
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = fchown(fd, uid, gid) == 0 && fchmod(fd, 0700) == 0;
  int e = errno;
  close(fd);
  errno = e;
  return ok;
}

bool GiveNewDir(const std::string& dir, uid_t uid, gid_t gid) {
  return fchownat(AT_FDCWD, dir.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace rsl::shim
