#include "base/fault_env.h"

#include "base/codes.h"

namespace rsl {

void FaultEnv::FailNth(Op op, int n, int errnum, bool sticky) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = static_cast<size_t>(op);
  faults_[i] = Fault{counts_[i] + n, errnum, sticky};
}

void FaultEnv::FailPaths(Op op, const std::string& contains, int errnum) {
  std::lock_guard<std::mutex> lock(mu_);
  path_faults_[static_cast<size_t>(op)] = PathFault{contains, errnum};
}

void FaultEnv::Heal() {
  std::lock_guard<std::mutex> lock(mu_);
  faults_ = {};
  path_faults_ = {};
}

int FaultEnv::count(Op op) {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_[static_cast<size_t>(op)];
}

int FaultEnv::failures() {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_;
}

int FaultEnv::Hit(Op op, std::string_view path, std::string_view path2) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = static_cast<size_t>(op);
  int n = ++counts_[i];
  if (const PathFault& p = path_faults_[i];
      p.errnum != 0 && (path.find(p.contains) != std::string_view::npos ||
                        path2.find(p.contains) != std::string_view::npos)) {
    ++failures_;
    return p.errnum;
  }
  const Fault& f = faults_[i];
  if (f.at == 0 || n < f.at || (n > f.at && !f.sticky)) return 0;
  ++failures_;
  return f.errnum;
}

Result<std::string> FaultEnv::ReadFile(const std::string& path) {
  if (int e = Hit(Op::kRead, path)) return OsError(codes::kIoError, "cannot read", path, e);
  return EnvWrapper::ReadFile(path);
}

Status FaultEnv::WriteFile(const std::string& path, const std::string& contents, bool sync) {
  if (int e = Hit(Op::kWrite, path)) return OsError(codes::kIoError, "cannot write", path, e);
  if (!sync) return EnvWrapper::WriteFile(path, contents, false);
  // The data is written; its fsync is what fails (the caller must not trust the file).
  if (int e = Hit(Op::kSync, path)) {
    RSL_RETURN_IF_ERROR(EnvWrapper::WriteFile(path, contents, false));
    return OsError(codes::kIoError, "cannot fsync", path, e);
  }
  return EnvWrapper::WriteFile(path, contents, true);
}

Status FaultEnv::Symlink(const std::string& target, const std::string& path) {
  if (int e = Hit(Op::kLink, path)) return OsError(codes::kIoError, "cannot create link", path, e);
  return EnvWrapper::Symlink(target, path);
}

Result<std::unique_ptr<FileLock>> FaultEnv::LockFile(const std::string& path, int64_t timeout_ms) {
  if (int e = Hit(Op::kLock, path)) return OsError(codes::kIoError, "cannot open lock", path, e);
  return EnvWrapper::LockFile(path, timeout_ms);
}

Status FaultEnv::Rename(const std::string& from, const std::string& to) {
  if (int e = Hit(Op::kRename, from, to)) return RenameError(from, to, e);
  return EnvWrapper::Rename(from, to);
}

Result<std::vector<std::string>> FaultEnv::ListDir(const std::string& dir) {
  if (int e = Hit(Op::kList, dir)) return OsError(codes::kIoError, "cannot list", dir, e);
  return EnvWrapper::ListDir(dir);
}

Status FaultEnv::RemoveAll(const std::string& path) {
  if (int e = Hit(Op::kRemove, path)) return OsError(codes::kIoError, "cannot remove", path, e);
  return EnvWrapper::RemoveAll(path);
}

Status FaultEnv::MakeDirs(const std::string& path) {
  if (int e = Hit(Op::kMakeDirs, path)) {
    return OsError(codes::kIoError, "cannot create directory", path, e);
  }
  return EnvWrapper::MakeDirs(path);
}

Status FaultEnv::Chmod(const std::string& path, uint32_t mode) {
  if (int e = Hit(Op::kChmod, path)) return OsError(codes::kIoError, "cannot chmod", path, e);
  return EnvWrapper::Chmod(path, mode);
}

Status FaultEnv::OpenDirTo(const std::string& dir, uint32_t bits) {
  if (int e = Hit(Op::kChmod, dir)) return OsError(codes::kIoError, "cannot chmod", dir, e);
  return EnvWrapper::OpenDirTo(dir, bits);
}

Status FaultEnv::SyncFile(const std::string& path) {
  if (int e = Hit(Op::kSync, path)) return OsError(codes::kIoError, "cannot fsync", path, e);
  return EnvWrapper::SyncFile(path);
}

Status FaultEnv::SyncDir(const std::string& path) {
  if (int e = Hit(Op::kSync, path)) return OsError(codes::kIoError, "cannot fsync", path, e);
  return EnvWrapper::SyncDir(path);
}

Result<ProcessResult> FaultEnv::RunProcess(const ProcessSpec& spec) {
  if (int e = Hit(Op::kProcess, spec.argv.empty() ? "" : spec.argv[0])) {
    return OsError(codes::kIoError, "cannot run", spec.argv.empty() ? "" : spec.argv[0], e);
  }
  return EnvWrapper::RunProcess(spec);
}

}  // namespace rsl
