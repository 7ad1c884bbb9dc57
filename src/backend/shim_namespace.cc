#include "backend/shim_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "backend/shim_dirs.h"
#include "backend/shim_io.h"

namespace rsl::shim {

namespace {

// The mount flags a bind of `path` must keep when remounted read-only in a user namespace
// (the kernel refuses to drop a flag that the outer mount has locked).
unsigned long LockedFlags(const std::string& path) {
  struct statvfs sv {};
  if (statvfs(path.c_str(), &sv) != 0) return MS_NOSUID | MS_NODEV;
  unsigned long f = 0;
  if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

bool Below(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

}  // namespace

NsPlan PlanNamespace(const Attempt& a) {
  NsPlan ns;
  ns.uid_map = std::to_string(getuid()) + " " + std::to_string(getuid()) + " 1";
  ns.gid_map = std::to_string(getgid()) + " " + std::to_string(getgid()) + " 1";
  for (const auto& h : a.hide) {
    if (h.empty() || h[0] != '/' || !IsDirectory(h)) continue;
    bool inside = false;  // a directory below another hidden one is hidden with it
    for (const auto& other : a.hide) inside = inside || Below(h, other);
    if (!inside) ns.hide.push_back(h);
  }
  std::vector<std::pair<std::string, bool>> wanted;
  if (!a.workdir.empty()) wanted.emplace_back(a.workdir, false);
  for (const auto& d : a.make_dirs) wanted.emplace_back(d, false);
  for (const auto& d : a.ro) wanted.emplace_back(d, true);
  std::sort(wanted.begin(), wanted.end());
  for (const auto& [path, ro] : wanted) {
    const std::string* root = nullptr;
    for (const auto& h : ns.hide) {
      if (Below(path, h)) root = &h;
    }
    if (!root || !IsDirectory(path)) continue;  // visible anyway, or nothing to bind
    // Its parents inside the tmpfs, then itself.
    for (size_t p = path.find('/', root->size() + 1);; p = path.find('/', p + 1)) {
      std::string dir = p == std::string::npos ? path : path.substr(0, p);
      if (std::find(ns.mkdirs.begin(), ns.mkdirs.end(), dir) == ns.mkdirs.end()) {
        ns.mkdirs.push_back(dir);
      }
      if (p == std::string::npos) break;
    }
    ns.binds.push_back({path, ro, LockedFlags(path)});
  }
  return ns;
}

bool EnterNamespace(const NsPlan& ns, const char** what) {
  // Our /proc/self files are root's while we are not dumpable (the supervisor is not), and
  // the id maps are written through them. A forked child (never vfork: this is per memory
  // map) may be; the exec decides again for the step.
  *what = "PR_SET_DUMPABLE";
  if (prctl(PR_SET_DUMPABLE, 1) != 0) return false;
  *what = "unshare(CLONE_NEWUSER|CLONE_NEWNS)";
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  *what = "the user namespace's id maps";
  if (!WriteString("/proc/self/setgroups", "deny") ||
      !WriteString("/proc/self/uid_map", ns.uid_map) ||
      !WriteString("/proc/self/gid_map", ns.gid_map)) {
    return false;
  }
  *what = "a private mount namespace";
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  // Opened here, in the new namespace (a bind source must be one of its mounts), and
  // before the tmpfs hides them.
  *what = "a directory of the step";
  std::vector<int> fds;
  for (const auto& b : ns.binds) {
    fds.push_back(open(b.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (fds.back() < 0) return false;
  }
  *what = "a tmpfs over the state directory";
  for (const auto& h : ns.hide) {
    if (mount("tmpfs", h.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=64k") != 0) {
      return false;
    }
  }
  *what = "the step's directories inside the tmpfs";
  for (const auto& d : ns.mkdirs) {
    if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  *what = "a bind mount of the step's directories";
  for (size_t i = 0; i < ns.binds.size(); ++i) {
    const NsPlan::Bind& b = ns.binds[i];
    std::string src = "/proc/self/fd/" + std::to_string(fds[i]);
    if (mount(src.c_str(), b.path.c_str(), nullptr, MS_BIND, nullptr) != 0) return false;
    if (b.ro && mount(nullptr, b.path.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | b.keep,
                      nullptr) != 0) {
      return false;
    }
    close(fds[i]);
  }
  return true;
}

}  // namespace rsl::shim
