// Test doubles of the Env: a clock the test moves (FakeClockEnv: real files and processes,
// fake time) and a whole fake operating system (FakeEnv: in-memory files, fake time,
// scripted processes) for logic tests that should touch no disk and spawn nothing.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/env.h"

namespace rsl {

//! A date in 2024, so fake times read as real ones in records and messages.
inline constexpr int64_t kFakeEnvStartMs = 1'718'409'600'000;

//! Time that passes only when the test says so. NowMs and MonotonicMs read the same value.
class ManualClock {
 public:
  explicit ManualClock(int64_t start_ms) : now_(start_ms) {}
  int64_t Now() const { return now_.load(); }
  void Advance(int64_t ms) { now_ += ms; }
  void Set(int64_t ms) { now_ = ms; }
  //! Fake time does not pass while waiting: returns at once when the deadline is behind,
  //! else after at most 1 ms of real time (or a notification), so the caller re-checks
  //! (test-only polling).
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 int64_t deadline_ms);

 private:
  std::atomic<int64_t> now_;
};

//! The time calls of an Env (`Base`: Env or EnvWrapper) answered by a ManualClock: SleepMs
//! advances the clock instead of sleeping. The fakes below are built on it.
template <class Base>
class ManualTimeEnv : public Base {
 public:
  template <class... BaseArgs>
  explicit ManualTimeEnv(int64_t start_ms, BaseArgs&&... base_args)
      : Base(std::forward<BaseArgs>(base_args)...), clock_(start_ms) {}
  void Advance(int64_t ms) { clock_.Advance(ms); }
  void SetNowMs(int64_t ms) { clock_.Set(ms); }

  int64_t NowMs() override { return clock_.Now(); }
  int64_t MonotonicMs() override { return clock_.Now(); }
  void SleepMs(int64_t ms) override { clock_.Advance(ms); }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 int64_t deadline_ms) override {
    clock_.WaitUntil(cv, lock, deadline_ms);
  }

 private:
  ManualClock clock_;
};

//! The files and processes of `target` (default: the real ones), a ManualClock for time.
class FakeClockEnv : public ManualTimeEnv<EnvWrapper> {
 public:
  explicit FakeClockEnv(int64_t start_ms = kFakeEnvStartMs, Env* target = Env::Default())
      : ManualTimeEnv<EnvWrapper>(start_ms, target) {}
};

//! An operating system in memory: a file tree (paths are absolute, "/" always exists; no
//! links, no "..") with the errno of the real calls (ENOENT, ENOTEMPTY, EISDIR...), a
//! ManualClock, and processes answered by a script. Thread-safe.
class FakeEnv : public ManualTimeEnv<Env> {
 public:
  explicit FakeEnv(int64_t start_ms = kFakeEnvStartMs);

  // Processes: the script answers every RunProcess (an error when none is set); every spec
  // asked for is kept, in order.
  using ProcessScript = std::function<Result<ProcessResult>(const ProcessSpec&)>;
  void SetProcessScript(ProcessScript script);
  std::vector<ProcessSpec> processes_run();

  //! Sorted paths of everything in the tree (directories end in '/'): what a test compares.
  std::vector<std::string> Tree();

  Result<std::string> ReadFile(const std::string& path) override;
  Status WriteFile(const std::string& path, const std::string& contents, bool sync) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Status RemoveAll(const std::string& path) override;
  Status MakeDirs(const std::string& path) override;
  Status Chmod(const std::string& path, uint32_t mode) override;
  Status OpenDirTo(const std::string& dir, uint32_t bits) override;
  Result<FileInfo> Stat(const std::string& path) override;
  Status SyncFile(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  bool PathExists(const std::string& path) override;
  bool IsDirectory(const std::string& path) override;

  Result<ProcessResult> RunProcess(const ProcessSpec& spec) override;
  //! A link is a node of its own (Stat says kLink, ReadFile reads its target's name);
  //! paths are never resolved through it.
  Status Symlink(const std::string& target, const std::string& path) override;
  //! Never waits (the clock is the test's): CONFLICT at once while another holds it.
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path, int64_t timeout_ms) override;

 private:
  struct Node {
    bool dir = false;
    std::string data;
    uint32_t mode = 0644;
    bool link = false;
  };
  class Lock;
  // REQUIRES: mu_ held.
  Node* Find(const std::string& path);
  bool HasChildren(const std::string& dir);

  std::mutex mu_;
  std::map<std::string, Node> nodes_;  // GUARDED_BY(mu_): normalized path -> node
  ProcessScript script_;               // GUARDED_BY(mu_)
  std::vector<ProcessSpec> run_;       // GUARDED_BY(mu_)
  std::set<std::string> locked_;       // GUARDED_BY(mu_): paths whose lock is held
};

}  // namespace rsl
