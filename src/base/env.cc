#include "base/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <filesystem>
#include <thread>

#include "base/codes.h"
#include "base/file.h"

extern char** environ;

namespace rsl {
namespace {

// After a process closed its output, how long to wait between looks at whether it exited
// (at most; it starts at 1 ms): most exit at once, and the timeout still bounds the wait.
constexpr int64_t kReapPollMaxMs = 10;

int64_t SinceEpochMs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// A descriptor closed when the scope ends.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// While a lock is held by someone else, the longest pause between two tries: a waiter
// notices a release within 20 ms, and a wait of minutes costs a few thousand tries.
constexpr int64_t kLockPollMaxMs = 20;

class PosixFileLock : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override { ::close(fd_); }  // releases the flock

 private:
  int fd_;
};

class PosixEnv : public Env {
 public:
  Result<std::string> ReadFile(const std::string& path) override {
    auto text = ReadFileIfExists(path, std::string().max_size());
    if (!text.ok()) return text.error();
    if (!*text) return OsError(codes::kIoError, "cannot open", path, ENOENT);
    return std::move(**text);
  }

  Status WriteFile(const std::string& path, const std::string& contents, bool sync) override {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.fd < 0) return OsError(codes::kIoError, "cannot create", path, errno);
    size_t off = 0;
    while (off < contents.size()) {
      ssize_t n = ::write(fd.fd, contents.data() + off, contents.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return OsError(codes::kIoError, "cannot write", path, errno);
      }
      off += static_cast<size_t>(n);
    }
    if (sync && ::fsync(fd.fd) != 0) return OsError(codes::kIoError, "cannot fsync", path, errno);
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return RenameError(from, to, errno);
    return Status::Ok();
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return OsError(codes::kIoError, "cannot list", dir, errno);
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    int e = errno;
    ::closedir(d);
    if (e != 0) return OsError(codes::kIoError, "cannot list", dir, e);
    return names;
  }

  Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return OsError(codes::kIoError, "cannot remove", path, ec.value());
    return Status::Ok();
  }

  Status MakeDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return OsError(codes::kIoError, "cannot create directory", path, ec.value());
    return Status::Ok();
  }

  Status Chmod(const std::string& path, uint32_t mode) override {
    if (::chmod(path.c_str(), mode) != 0)
      return OsError(codes::kIoError, "cannot chmod", path, errno);
    return Status::Ok();
  }

  // A directory opened never through a link in its place (a step may have planted one).
  static int OpenDirNoFollow(const std::string& dir) {
    return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }

  // Adds permission `bits` to the directory open as `fd`.
  static Status AddBits(int fd, const std::string& dir, uint32_t bits) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return OsError(codes::kIoError, "cannot stat", dir, errno);
    if ((st.st_mode & bits) == bits) return Status::Ok();
    if (::fchmod(fd, (st.st_mode & 07777) | bits) != 0) {
      return OsError(codes::kIoError, "cannot chmod", dir, errno);
    }
    return Status::Ok();
  }

  Status OpenDirTo(const std::string& dir, uint32_t bits) override {
    Fd fd(OpenDirNoFollow(dir));
    if (fd.fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return Status::Ok();
      return OsError(codes::kIoError, "cannot open directory", dir, errno);
    }
    return AddBits(fd.fd, dir, bits);
  }

  int64_t OpenDirToAndMeasure(const std::string& dir, uint32_t bits) override {
    // One descriptor for the chmod and the listing: one path walk, no opendir (whose fstat
    // and descriptor would come on top). A link in dir's place (ELOOP, or ENOTDIR with
    // O_DIRECTORY): as the composed calls do, the link is not opened to readers and its
    // target is measured. Anything else that cannot be opened cannot be listed either.
    Fd fd(OpenDirNoFollow(dir));
    if (fd.fd < 0) {
      return errno == ELOOP || errno == ENOTDIR ? Env::OpenDirToAndMeasure(dir, bits) : 0;
    }
    (void)AddBits(fd.fd, dir, bits);
    int64_t total = 0;
    alignas(dirent64) char buf[8192];
    while (true) {
      ssize_t n = ::getdents64(fd.fd, buf, sizeof buf);
      if (n < 0) return 0;  // cannot be read: as TreeBytes
      if (n == 0) return total;
      for (ssize_t off = 0; off < n;) {
        const auto* e = reinterpret_cast<const dirent64*>(buf + off);
        off += e->d_reclen;
        const char* name = e->d_name;
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
        unsigned char type = e->d_type;
        if (type == DT_REG || type == DT_UNKNOWN) {
          struct stat st {};
          if (::fstatat(fd.fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
          if (S_ISREG(st.st_mode)) total += static_cast<int64_t>(st.st_size);
          type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        // Below the top, the composed walk (a descriptor held per level would let a deep
        // tree run out of them).
        if (type == DT_DIR) total += TreeBytes(this, dir + "/" + name);
      }
    }
  }

  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      return OsError(errno == ENOENT ? codes::kNotFound : codes::kIoError, "cannot stat", path,
                     errno);
    }
    FileInfo info;
    info.type = S_ISREG(st.st_mode)   ? FileInfo::Type::kRegular
                : S_ISDIR(st.st_mode) ? FileInfo::Type::kDirectory
                : S_ISLNK(st.st_mode) ? FileInfo::Type::kLink
                                      : FileInfo::Type::kOther;
    info.mode = st.st_mode & 07777;
    info.size = static_cast<int64_t>(st.st_size);
    info.device = static_cast<uint64_t>(st.st_dev);
    return info;
  }

  Status SyncFile(const std::string& path) override {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.fd < 0) return OsError(codes::kIoError, "cannot open", path, errno);
    if (::fsync(fd.fd) != 0) return OsError(codes::kIoError, "cannot fsync", path, errno);
    return Status::Ok();
  }

  Status SyncDir(const std::string& path) override {
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.fd < 0) return OsError(codes::kIoError, "cannot open directory", path, errno);
    if (::fsync(fd.fd) != 0) return OsError(codes::kIoError, "cannot fsync", path, errno);
    return Status::Ok();
  }

  bool PathExists(const std::string& path) override {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
  }

  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Status Symlink(const std::string& target, const std::string& path) override {
    if (::symlink(target.c_str(), path.c_str()) != 0) {
      return OsError(errno == EEXIST ? codes::kConflict : codes::kIoError, "cannot create link",
                     path, errno);
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path, int64_t timeout_ms) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      return OsError(errno == ENOENT ? codes::kNotFound : codes::kIoError, "cannot open lock", path,
                     errno);
    }
    auto lock = std::make_unique<PosixFileLock>(fd);
    int64_t deadline = MonotonicMs() + std::max<int64_t>(timeout_ms, 0);
    int64_t pause = 1;
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) return OsError(codes::kIoError, "cannot lock", path, errno);
      if (MonotonicMs() >= deadline) {
        return Error(codes::kConflict, "lock " + path + " is held by another process").Path(path);
      }
      SleepMs(pause);  // commits are short: poll, from 1 ms up to kLockPollMaxMs
      pause = std::min(pause * 2, kLockPollMaxMs);
    }
    return std::unique_ptr<FileLock>(std::move(lock));
  }

  int64_t NowMs() override { return SinceEpochMs(std::chrono::system_clock::now()); }

  int64_t MonotonicMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  void SleepMs(int64_t ms) override {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }

  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 int64_t deadline_ms) override {
    if (deadline_ms == INT64_MAX) {
      cv.wait(lock);
      return;
    }
    cv.wait_until(lock,
                  std::chrono::system_clock::time_point(std::chrono::milliseconds(deadline_ms)));
  }

  Result<ProcessResult> RunProcess(const ProcessSpec& spec) override;
};

// Drains `fds` (stdout, stderr; -1 = not captured) until both end, the deadline passes or
// the output grows past the limit. Returns false when it stopped early (result says why).
bool Drain(int fds[2], const ProcessSpec& spec, int64_t deadline, Env* env, ProcessResult* r) {
  pollfd pfd[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
  int open_fds = (fds[0] >= 0) + (fds[1] >= 0);
  char buf[1 << 16];
  while (open_fds > 0) {
    int wait_ms = -1;
    if (spec.timeout_ms >= 0) {
      int64_t left = deadline - env->MonotonicMs();
      if (left <= 0) {
        r->timed_out = true;
        return false;
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left, INT_MAX));
    }
    int n = ::poll(pfd, 2, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (pfd[i].fd < 0 || pfd[i].revents == 0) continue;
      ssize_t got = ::read(pfd[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? r->out : r->err).append(buf, static_cast<size_t>(got));
        if (r->out.size() + r->err.size() > spec.max_output) {
          r->output_exceeded = true;
          return false;
        }
      } else if (got == 0 || errno != EINTR) {
        pfd[i].fd = -1;
        --open_fds;
      }
    }
  }
  return true;
}

Result<ProcessResult> PosixEnv::RunProcess(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Error(codes::kInvalidArgument, "no program to run");
  const std::string& prog = spec.argv[0];
  bool capture_err = spec.stderr_to == ProcessSpec::Stderr::kCapture;
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return OsError(codes::kIoError, "pipe", prog, errno);
  if (capture_err && ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return OsError(codes::kIoError, "pipe", prog, e);
  }
  // Everything the child needs is prepared before it starts.
  std::vector<std::string> env_strings;
  if (spec.env) {
    for (const auto& [k, v] : *spec.env) env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> c_argv, c_env;
  for (const auto& a : spec.argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  for (auto& e : env_strings) c_env.push_back(e.data());
  c_env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  if (capture_err) {
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  } else if (spec.stderr_to == ProcessSpec::Stderr::kMerge) {
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills what it started too.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, prog.c_str(), &actions, &attr, c_argv.data(),
                          spec.env ? c_env.data() : environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  if (capture_err) ::close(err_pipe[1]);
  Fd out(out_pipe[0]), err(err_pipe[0]);
  if (rc != 0) return OsError(codes::kIoError, "cannot run", prog, rc);

  ProcessResult result;
  int64_t deadline = spec.timeout_ms >= 0 ? MonotonicMs() + spec.timeout_ms : INT64_MAX;
  int fds[2] = {out.fd, err.fd};
  bool drained = Drain(fds, spec, deadline, this, &result);
  int status = 0;
  bool reaped = false;
  // Output closed: it normally exits now; one that lingers still meets the deadline.
  for (int64_t pause = 1; drained && !reaped;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      reaped = true;
    } else if (w < 0 && errno != EINTR) {
      break;
    } else if (w == 0) {
      if (spec.timeout_ms >= 0 && MonotonicMs() >= deadline) {
        result.timed_out = true;
        break;
      }
      SleepMs(pause);
      pause = std::min(pause * 2, kReapPollMaxMs);
    }
  }
  if (!reaped) {
    ::kill(-pid, SIGKILL);  // the whole group: what it started dies with it
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv;  // never destroyed: used until the process ends
  return env;
}

Status Env::WriteFileAtomic(const std::string& path, const std::string& contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Status s = WriteFile(tmp, contents, /*sync=*/true);
  if (s.ok()) s = Rename(tmp, path);
  if (!s.ok()) {
    (void)RemoveAll(tmp);
    return s;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDir(dir.empty() ? "." : dir);
}

Error RenameError(const std::string& from, const std::string& to, int errnum) {
  std::string code = errnum == ENOENT                          ? codes::kNotFound
                     : errnum == ENOTEMPTY || errnum == EEXIST ? codes::kConflict
                                                               : codes::kIoError;
  return OsError(code, "cannot rename " + from + " to", to, errnum);
}

int64_t Env::OpenDirToAndMeasure(const std::string& dir, uint32_t bits) {
  (void)OpenDirTo(dir, bits);
  return TreeBytes(this, dir);
}

int64_t TreeBytes(Env* env, const std::string& dir) {
  auto names = env->ListDir(dir);
  if (!names.ok()) return 0;
  int64_t total = 0;
  for (const auto& name : *names) {
    std::string path = dir + "/" + name;
    auto info = env->Stat(path);
    if (!info.ok()) continue;
    if (info->type == FileInfo::Type::kRegular) total += info->size;
    if (info->type == FileInfo::Type::kDirectory) total += TreeBytes(env, path);
  }
  return total;
}

}  // namespace rsl
