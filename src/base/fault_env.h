// An Env that fails on demand (leveldb's ErrorEnv / fault_injection_test): it forwards every
// call to its target, counts the calls of each kind, and fails the Nth one of a kind with a
// chosen errno (ENOSPC on a write, EIO on an fsync, EXDEV or EIO on a rename...), once or
// from then on. The failed call does nothing: the error is the one the real call would
// return, with the path and strerror. For fault tests: run once to count the calls, then
// once per N to prove every one of them is survived.
#pragma once

#include <array>
#include <mutex>
#include <string>
#include <string_view>

#include "base/env.h"

namespace rsl {

class FaultEnv : public EnvWrapper {
 public:
  enum class Op {
    kRead,      //!< ReadFile
    kWrite,     //!< WriteFile (and the temporary file of WriteFileAtomic)
    kSync,      //!< SyncFile, SyncDir, and the fsync of WriteFile(sync=true)
    kRename,    //!< Rename (and the rename of WriteFileAtomic)
    kRemove,    //!< RemoveAll
    kMakeDirs,  //!< MakeDirs
    kList,      //!< ListDir
    kChmod,     //!< Chmod, OpenDirTo
    kProcess,   //!< RunProcess (fails to start)
    kLock,      //!< LockFile
    kLink,      //!< Symlink
  };
  static constexpr size_t kOps = 11;

  explicit FaultEnv(Env* target = Env::Default()) : EnvWrapper(target) {}

  //! The `n`-th call of `op` from now on (1-based) fails with `errnum`; with `sticky`, every
  //! later one too (a disk that stays full). Replaces an earlier fault of that kind.
  void FailNth(Op op, int n, int errnum, bool sticky = false);
  //! Every later call of `op` on a path containing `contains` (either path of a rename)
  //! fails with `errnum`, whatever FailNth says: one directory's disk is broken. Replaces an
  //! earlier path fault of that kind.
  void FailPaths(Op op, const std::string& contains, int errnum);
  //! No more faults (counts go on).
  void Heal();
  //! Calls of `op` so far (failed ones included).
  int count(Op op);
  //! Calls that were failed, of every kind.
  int failures();

  Result<std::string> ReadFile(const std::string& path) override;
  Status WriteFile(const std::string& path, const std::string& contents, bool sync) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Status RemoveAll(const std::string& path) override;
  Status MakeDirs(const std::string& path) override;
  Status Chmod(const std::string& path, uint32_t mode) override;
  Status OpenDirTo(const std::string& dir, uint32_t bits) override;
  Status SyncFile(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Result<ProcessResult> RunProcess(const ProcessSpec& spec) override;
  Status Symlink(const std::string& target, const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path, int64_t timeout_ms) override;

 private:
  struct Fault {
    int at = 0;  // the count at which it fires; 0 = none
    int errnum = 0;
    bool sticky = false;
  };
  struct PathFault {
    std::string contains;
    int errnum = 0;  // 0 = none
  };
  //! Counts a call of `op` on `path` (and `path2`); the errno to fail it with, or 0.
  int Hit(Op op, std::string_view path, std::string_view path2 = {});

  std::mutex mu_;
  std::array<int, kOps> counts_{};             // GUARDED_BY(mu_)
  std::array<Fault, kOps> faults_{};           // GUARDED_BY(mu_)
  std::array<PathFault, kOps> path_faults_{};  // GUARDED_BY(mu_)
  int failures_ = 0;                           // GUARDED_BY(mu_)
};

}  // namespace rsl
