// One output root, several runs (docs/engine.md "Two runs, one output root"): the lock that
// serializes commits to a local root, the claims that tell which runs of a root are in
// flight (policy refuse), and the `latest` pointer of a versioned root. Every file operation
// goes through the Env handed in, so fault tests fail each of them.
//
// Layout: beside the root, so that the root itself is made by the first commit only (a run
// that fails publishes nothing, not even an empty directory), in a hidden directory:
//   <parent>/.<name>.rsl-output/lock           flock'd for a commit or a claim
//   <parent>/.<name>.rsl-output/runs/<run id>  a claim: the run's directory, while in flight
// and in the root, with policy versioned:
//   <root>/<run id>/...          each run's commit, with its own _RSL_COMMIT
//   <root>/latest -> <run id>    the last committed run (a symbolic link)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/env.h"
#include "base/status.h"

namespace rsl::engine {

inline constexpr char kOutputLatestName[] = "latest";
//! How long a commit or an admission waits for another's lock on the root. A commit holds
//! it for its renames and the manifest (milliseconds for 40 steps, about 0.2 s for 10,000);
//! past two minutes the holder is stuck (a hung NFS server) and the run fails with the
//! holder named rather than wait forever.
inline constexpr int64_t kOutputLockWaitMs = 2 * 60 * 1000;

//! The hidden directory beside the local root `root` that holds its lock and claims.
std::string OutputControlDir(const std::string& root);

//! Takes the lock of the local root `root` (making its control directory first), waiting up
//! to `wait_ms`. Errors: IO_ERROR (the control directory cannot be made, the lock file
//! cannot be opened, or another holds it past the wait: message, path and hint say so).
Result<std::unique_ptr<FileLock>> LockOutputRoot(Env* env, const std::string& root,
                                                 int64_t wait_ms = kOutputLockWaitMs);
//! LockOutputRoot without waiting: null while another commit holds the lock.
Result<std::unique_ptr<FileLock>> TryLockOutputRoot(Env* env, const std::string& root);
//! The error of a wait for the lock of `root` that ended after `waited_ms`.
Error OutputRootStayedLocked(const std::string& root, int64_t waited_ms);

//! Claims `root` for run `run_id` (whose directory is `run_dir`), under the root's lock.
//! Other claims whose run is still in flight (its engine holds <run dir>/owner.lock) are
//! kept, the others (a run that ended without removing its claim) removed. With `refuse`
//! and another run in flight: OUTPUT_CONFLICT naming it, and no claim is made. Otherwise
//! IO_ERROR when the claim cannot be written.
Status ClaimOutputRoot(Env* env, const std::string& root, const std::string& run_id,
                       const std::string& run_dir, bool refuse);

//! Removes run `run_id`'s claim of `root` (best effort: a claim left behind is stale once
//! the run's engine lets go of it, and the next claim removes it).
void ReleaseOutputClaim(Env* env, const std::string& root, const std::string& run_id);

//! Points <root>/latest at <root>/<run id> in one rename (a new link beside it, renamed
//! over the old one, then the root fsynced). REQUIRES: the root's lock is held.
Status MoveLatest(Env* env, const std::string& root, const std::string& run_id);

}  // namespace rsl::engine
