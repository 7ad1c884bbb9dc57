// rsl-shim's directories: mkdir -p with the modes of isolated steps, and the pool of spare
// working directories that spares a launch its inode allocation (SpareDirs).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace rsl::shim {

//! True when `path` is a directory (links followed).
bool IsDirectory(const std::string& path);
//! True when `dir` is a directory holding nothing but "." and "..".
bool IsEmptyDir(const std::string& dir);
//! Everything before the last '/'; "" when there is none or it is the first character.
std::string Dirname(const std::string& path);

//! mkdir -p: missing parents are made `parent_mode`, a missing `path` itself `leaf_mode`. The
//! default 0755 is left to the umask, as for any mkdir; another mode (an isolated step's 0711
//! parents and 0700 directories) is set exactly, whatever the umask (a chmod only where the
//! umask takes one of its bits). errno is kept on failure. `made`, when given: set to true
//! when `path` itself was made here (so it is ours, a directory, and has `leaf_mode`).
bool MakeDirs(const std::string& path, mode_t parent_mode = 0755, mode_t leaf_mode = 0755,
              bool* made = nullptr);
//! The process's umask, for MakeDirs to skip a chmod the umask cannot have made needed: set
//! by a process that knows it will not change it (the supervisor). Until then MakeDirs
//! always sets an exact mode with chmod.
void SetKnownUmask(mode_t mask);

//! An attempt's directories (its working directory and staging) are new inodes, and inode
//! allocation is what a step's launch costs most on ext4 without a journal: it skips every
//! recently deleted inode of the group one by one (up to ~0.3 ms a directory after many
//! deletions). So an ended attempt's working directory, when the step left it empty, is kept
//! as a spare, under its own name, and the next attempt's directory is that spare renamed:
//! one rename, no allocation. Spares that no attempt took are removed (rmdir: only while
//! still empty) when the supervisor goes idle. Not thread-safe (the supervisor has one).
class SpareDirs {
 public:
  //! Makes `dir` (in `pool`, the directory that holds it): a spare of the pool renamed, else
  //! MakeDirs (0711 parents and a 0700 leaf when `isolated`; `made` as there: false for a
  //! spare or a directory that was there). False with errno set.
  bool Make(const std::string& pool, const std::string& dir, bool isolated, bool* made = nullptr);
  //! Keeps the ended attempt's `workdir` as a spare of its pool when it is empty (at most
  //! kMaxSpareDirs a pool). True when it was empty (kept or not).
  bool Recycle(const std::string& workdir);
  //! Removes every spare that is still empty and forgets them all.
  void RemoveAll();

 private:
  static constexpr size_t kMaxSpareDirs = 64;               // per directory of working directories
  std::map<std::string, std::vector<std::string>> spares_;  // pool -> its spares
};

}  // namespace rsl::shim
