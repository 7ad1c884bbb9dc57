// The operating system as the code sees it: files, time and processes behind one interface
// that is handed in at construction (leveldb's Env). `Env::Default()` is the real one;
// `EnvWrapper` forwards every call to another Env, so a test double overrides only what it
// changes: `FakeEnv` (base/fake_env.h: in-memory files, a clock the test advances, scripted
// processes) for logic tests, `FaultEnv` (base/fault_env.h: fails the Nth call of a kind with
// a chosen errno) for fault tests.
//
// Errors are values: an OS error becomes an Error that keeps the path and strerror
// (OsError), IO_ERROR unless a method says otherwise. Every method is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl {

//! What Env::Stat says about a path (never following a symbolic link at it).
struct FileInfo {
  enum class Type { kRegular, kDirectory, kLink, kOther };
  Type type = Type::kOther;
  uint32_t mode = 0;    //!< permission bits (07777)
  int64_t size = 0;     //!< bytes, for regular files
  uint64_t device = 0;  //!< the file system it lies on (st_dev): renames stay on one
};

//! One short-lived helper process (a Slurm client command, an interpreter asked a question).
//! Not for steps: the backends launch those.
struct ProcessSpec {
  std::vector<std::string> argv;  //!< argv[0] is looked up on PATH when it has no '/'
  //! The whole environment of the process; nullopt: this process's own.
  std::optional<std::map<std::string, std::string>> env;
  std::string cwd;  //!< "" = this process's working directory
  //! Past this the process's whole process group (it gets its own) is killed with SIGKILL
  //! and the result says timed_out. < 0: no limit.
  int64_t timeout_ms = -1;
  enum class Stderr { kCapture, kMerge, kDiscard };
  Stderr stderr_to = Stderr::kCapture;  //!< into `err`, into `out`, or to /dev/null
  //! More output than this (stdout and stderr together) kills the group too, so a runaway
  //! program cannot exhaust memory; the result says output_exceeded.
  size_t max_output = SIZE_MAX;
};

struct ProcessResult {
  int exit_code = -1;  //!< -1 when killed by a signal
  int signal = 0;      //!< the signal that ended it, 0 when it exited
  bool timed_out = false;
  bool output_exceeded = false;
  std::string out;  //!< stdout (and stderr with Stderr::kMerge)
  std::string err;  //!< stderr with Stderr::kCapture
};

//! An exclusive advisory lock on a file (flock(2) on its own open file description: two
//! holders in one process exclude each other too), released when destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class Env {
 public:
  Env() = default;
  virtual ~Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  //! The real operating system (POSIX). Process-wide, never destroyed.
  static Env* Default();

  // --- Files ---------------------------------------------------------------------------
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  //! Creates or truncates `path` and writes `contents`; `sync`: fsync it before returning.
  //! Not atomic: see WriteFileAtomic.
  virtual Status WriteFile(const std::string& path, const std::string& contents, bool sync) = 0;
  //! rename(2): replaces a file, or an empty directory, at `to`. Errors: NOT_FOUND (ENOENT:
  //! `from` or the parent of `to` is missing), CONFLICT (ENOTEMPTY/EEXIST: `to` is a
  //! directory that is not empty), IO_ERROR otherwise (EXDEV: another file system).
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  //! The names in `dir` (not "." and ".."), in no particular order.
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  //! rm -rf; a missing path is not an error.
  virtual Status RemoveAll(const std::string& path) = 0;
  //! mkdir -p.
  virtual Status MakeDirs(const std::string& path) = 0;
  //! Sets the permission bits of `path` (following a link, as chmod(2)).
  virtual Status Chmod(const std::string& path, uint32_t mode) = 0;
  //! Adds permission `bits` to the directory `dir`, never through a symbolic link (a step may
  //! have planted one in its place): nothing is changed when `dir` is not a directory.
  virtual Status OpenDirTo(const std::string& dir, uint32_t bits) = 0;
  //! A step's output as its commit publishes it: OpenDirTo(dir, bits), whose failure is
  //! ignored, then TreeBytes(this, dir). Composed of those two calls here (a wrapper's
  //! faults apply); the POSIX Env does both through one descriptor.
  virtual int64_t OpenDirToAndMeasure(const std::string& dir, uint32_t bits);
  //! lstat(2). Errors: NOT_FOUND when nothing is there.
  virtual Result<FileInfo> Stat(const std::string& path) = 0;
  //! fsync a file, so its contents are durable.
  virtual Status SyncFile(const std::string& path) = 0;
  //! fsync a directory, so renames and creations inside it are durable.
  virtual Status SyncDir(const std::string& path) = 0;
  //! Anything at `path` (a dangling link too).
  virtual bool PathExists(const std::string& path) = 0;
  //! A directory at `path`, following links.
  virtual bool IsDirectory(const std::string& path) = 0;

  //! Creates a symbolic link at `path` pointing to `target` (symlink(2)); fails with
  //! CONFLICT when something is at `path` already.
  virtual Status Symlink(const std::string& target, const std::string& path) = 0;
  //! Takes the exclusive lock of `path` (created 0600 when missing; its directory must
  //! exist), waiting at most `timeout_ms` (0: not at all). Errors: CONFLICT when another
  //! holder still has it at the deadline, NOT_FOUND when the directory is missing,
  //! IO_ERROR otherwise. The lock dies with its holder process, so a crash never leaves
  //! it taken.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path,
                                                     int64_t timeout_ms) = 0;

  //! Writes `path.tmp.<pid>` (fsynced), renames it over `path` and fsyncs the directory, so
  //! a reader sees the old or the new contents, never a mix, even after a crash. Built on
  //! WriteFile, Rename and SyncDir, so a wrapper that fails one of them fails this too; the
  //! temporary file is removed on failure.
  Status WriteFileAtomic(const std::string& path, const std::string& contents);

  // --- Time ----------------------------------------------------------------------------
  //! Milliseconds since the Unix epoch (wall time: records, deadlines kept in records).
  virtual int64_t NowMs() = 0;
  //! Milliseconds on a clock that never goes back (intervals, timeouts), arbitrary origin.
  virtual int64_t MonotonicMs() = 0;
  virtual void SleepMs(int64_t ms) = 0;
  //! Blocks on `cv` (with `lock` held) until notified or `deadline_ms` (NowMs scale) passes;
  //! INT64_MAX: until notified. A fake clock may return early: callers re-check.
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         int64_t deadline_ms) = 0;

  // --- Processes -----------------------------------------------------------------------
  //! Runs `spec`, captures its output and waits for it (its process group is killed on a
  //! timeout or too much output). Errors only when it could not be started (IO_ERROR
  //! "cannot run ARGV0: strerror"); one that ran and failed is a ProcessResult.
  virtual Result<ProcessResult> RunProcess(const ProcessSpec& spec) = 0;
};

//! Forwards every call to `target` (which must outlive it); a subclass overrides what it
//! changes.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<std::string> ReadFile(const std::string& path) override { return target_->ReadFile(path); }
  Status WriteFile(const std::string& path, const std::string& contents, bool sync) override {
    return target_->WriteFile(path, contents, sync);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return target_->Rename(from, to);
  }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    return target_->ListDir(dir);
  }
  Status RemoveAll(const std::string& path) override { return target_->RemoveAll(path); }
  Status MakeDirs(const std::string& path) override { return target_->MakeDirs(path); }
  Status Chmod(const std::string& path, uint32_t mode) override {
    return target_->Chmod(path, mode);
  }
  Status OpenDirTo(const std::string& dir, uint32_t bits) override {
    return target_->OpenDirTo(dir, bits);
  }
  Result<FileInfo> Stat(const std::string& path) override { return target_->Stat(path); }
  Status SyncFile(const std::string& path) override { return target_->SyncFile(path); }
  Status SyncDir(const std::string& path) override { return target_->SyncDir(path); }
  bool PathExists(const std::string& path) override { return target_->PathExists(path); }
  bool IsDirectory(const std::string& path) override { return target_->IsDirectory(path); }
  Status Symlink(const std::string& target, const std::string& path) override {
    return target_->Symlink(target, path);
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path, int64_t timeout_ms) override {
    return target_->LockFile(path, timeout_ms);
  }
  int64_t NowMs() override { return target_->NowMs(); }
  int64_t MonotonicMs() override { return target_->MonotonicMs(); }
  void SleepMs(int64_t ms) override { target_->SleepMs(ms); }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 int64_t deadline_ms) override {
    target_->WaitUntil(cv, lock, deadline_ms);
  }
  Result<ProcessResult> RunProcess(const ProcessSpec& spec) override {
    return target_->RunProcess(spec);
  }

 private:
  Env* target_;
};

//! The error of a failed rename(2) as Env::Rename reports it (code by errno), for Env
//! implementations.
Error RenameError(const std::string& from, const std::string& to, int errnum);

//! The total size of the regular files under `dir` (recursively, links not followed); 0 when
//! it cannot be read.
int64_t TreeBytes(Env* env, const std::string& dir);

}  // namespace rsl
