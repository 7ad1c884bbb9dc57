#include "backend/shim_dirs.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rsl::shim {

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

mode_t known_umask = 0777;  // not known: every bit may be taken, chmod always

}  // namespace

void SetKnownUmask(mode_t mask) { known_umask = mask & 0777; }

bool MakeDirs(const std::string& path, mode_t parent_mode, mode_t leaf_mode, bool* made) {
  if (made) *made = false;
  if (path.empty()) return true;
  auto make = [&](const std::string& dir, mode_t mode, bool* fresh) {
    if (mkdir(dir.c_str(), mode) != 0) return errno == EEXIST;
    if (mode != 0755 && (mode & known_umask) != 0 && chmod(dir.c_str(), mode) != 0) return false;
    if (fresh) *fresh = true;
    return true;
  };
  if (make(path, leaf_mode, made)) return true;
  if (errno != ENOENT) return false;
  size_t p = path.rfind('/');
  if (p == std::string::npos || p == 0) return false;
  if (!MakeDirs(path.substr(0, p), parent_mode, parent_mode)) return false;
  return make(path, leaf_mode, made);
}

std::string Dirname(const std::string& path) {
  size_t p = path.rfind('/');
  return p == std::string::npos || p == 0 ? "" : path.substr(0, p);
}

bool IsEmptyDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool empty = true;
  while (const dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(d);
  return empty;
}

bool SpareDirs::Make(const std::string& pool, const std::string& dir, bool isolated, bool* made) {
  if (made) *made = false;
  auto it = pool.empty() ? spares_.end() : spares_.find(pool);
  if (it != spares_.end()) {
    // A spare that is `dir` itself (an attempt launched again) is no longer spare.
    auto self = std::find(it->second.begin(), it->second.end(), dir);
    if (self != it->second.end()) it->second.erase(self);
  }
  while (it != spares_.end() && !it->second.empty()) {
    const std::string& spare = it->second.back();
    if (rename(spare.c_str(), dir.c_str()) == 0) {
      it->second.pop_back();
      return true;
    }
    // ENOENT: dir's parent is not made yet, or the spare is gone (its run directory was
    // removed); EXDEV: another file system; ENOTEMPTY/EEXIST: dir exists. A spare that is
    // gone is dropped, else it stays and mkdir below says what is wrong, if anything.
    struct stat st {};
    if (errno != ENOENT || lstat(spare.c_str(), &st) == 0) break;
    it->second.pop_back();
  }
  return isolated ? MakeDirs(dir, 0711, 0700, made) : MakeDirs(dir, 0755, 0755, made);
}

bool SpareDirs::Recycle(const std::string& workdir) {
  std::string pool = Dirname(workdir);
  if (pool.empty() || !IsEmptyDir(workdir)) return false;
  std::vector<std::string>& spares = spares_[pool];
  if (spares.size() < kMaxSpareDirs) spares.push_back(workdir);
  return true;
}

void SpareDirs::RemoveAll() {
  for (const auto& [pool, spares] : spares_) {
    for (const auto& d : spares) rmdir(d.c_str());
  }
  spares_.clear();
}

}  // namespace rsl::shim
