#include "engine/output_root.h"

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::engine {

std::string OutputControlDir(const std::string& root) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  size_t slash = r.rfind('/');
  if (slash == std::string::npos) return "." + r + ".rsl-output";
  std::string name = r.substr(slash + 1);
  if (name.empty()) return r + ".rsl-output";  // "/"
  return r.substr(0, slash + 1) + "." + name + ".rsl-output";
}

Error OutputRootStayedLocked(const std::string& root, int64_t waited_ms) {
  std::string path = OutputControlDir(root) + "/lock";
  return Error(codes::kIoError, "output root " + root + " stayed locked by another commit for " +
                                    std::to_string(waited_ms / 1000) + " s")
      .Value(path)
      .Hint("another run is committing there; see who holds " + path + " (fuser " + path + ")");
}

namespace {

// The lock of `root`, waiting up to `wait_ms`; CONFLICT while another holds it.
Result<std::unique_ptr<FileLock>> TakeRootLock(Env* env, const std::string& root, int64_t wait_ms) {
  std::string control = OutputControlDir(root);
  Status made = env->MakeDirs(control);
  if (!made.ok()) {
    Error e = made.error();
    e.hint = "commits to " + root + " are serialized by a lock beside it, in " + control +
             ": its parent directory must be writable";
    return e;
  }
  auto lock = env->LockFile(control + "/lock", wait_ms);
  if (lock.ok() || lock.status().code() == codes::kConflict) return lock;
  Error e = lock.error();
  e.code = codes::kIoError;
  return e;
}

}  // namespace

Result<std::unique_ptr<FileLock>> LockOutputRoot(Env* env, const std::string& root,
                                                 int64_t wait_ms) {
  auto lock = TakeRootLock(env, root, wait_ms);
  if (!lock.ok() && lock.status().code() == codes::kConflict)
    return OutputRootStayedLocked(root, wait_ms);
  return lock;
}

Result<std::unique_ptr<FileLock>> TryLockOutputRoot(Env* env, const std::string& root) {
  auto lock = TakeRootLock(env, root, 0);
  if (!lock.ok() && lock.status().code() == codes::kConflict) return std::unique_ptr<FileLock>();
  return lock;
}

namespace {

// Whether the run a claim names is still in flight: its engine holds its owner lock (taken
// at submission, released when the run ends or its engine dies). A claim in the same
// process is seen too: flock locks of two open files exclude each other.
bool ClaimIsLive(Env* env, const std::string& claim_path) {
  auto run_dir = env->ReadFile(claim_path);
  if (!run_dir.ok() || run_dir->empty()) return false;
  auto probe = env->LockFile(*run_dir + "/owner.lock", 0);
  return !probe.ok() && probe.status().code() == codes::kConflict;
}

}  // namespace

Status ClaimOutputRoot(Env* env, const std::string& root, const std::string& run_id,
                       const std::string& run_dir, bool refuse) {
  auto lock = LockOutputRoot(env, root);
  if (!lock.ok()) return lock.status();
  std::string claims = OutputControlDir(root) + "/runs";
  RSL_RETURN_IF_ERROR(env->MakeDirs(claims));
  auto names = env->ListDir(claims);
  if (!names.ok()) return names.status();
  for (const auto& name : *names) {
    if (name == run_id) continue;
    std::string path = claims + "/" + name;
    if (!ClaimIsLive(env, path)) {
      (void)env->RemoveAll(path);
      continue;
    }
    if (refuse) {
      return Error(codes::kOutputConflict, "run " + name + " is writing to the same output root " +
                                               root + ", and data.output.policy is refuse")
          .Path("spec.data.output.uri")
          .Value(root)
          .Hint("wait for " + name + " to end (seedctl workload status --id " + name +
                " --watch), or choose policy: replace or policy: versioned");
    }
  }
  return env->WriteFile(claims + "/" + run_id, run_dir, /*sync=*/false);
}

void ReleaseOutputClaim(Env* env, const std::string& root, const std::string& run_id) {
  (void)env->RemoveAll(OutputControlDir(root) + "/runs/" + run_id);
}

Status MoveLatest(Env* env, const std::string& root, const std::string& run_id) {
  std::string link = root + "/" + kOutputLatestName;
  std::string fresh = root + "/." + kOutputLatestName + ".tmp." + run_id;
  RSL_RETURN_IF_ERROR(env->RemoveAll(fresh));  // left by a crash between the two calls
  RSL_RETURN_IF_ERROR(env->Symlink(run_id, fresh));
  Status moved = env->Rename(fresh, link);
  if (!moved.ok()) {
    (void)env->RemoveAll(fresh);
    return moved;
  }
  return env->SyncDir(root);
}

}  // namespace rsl::engine
