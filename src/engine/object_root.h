// One object-store output root, several runs (docs/engine.md "Two runs, one output root"):
// the S3 way of serializing commits, with no lock service, only conditional writes
// (If-None-Match: * and If-Match: <ETag> on PUT) through the OutputPublisher.
//
// Layout, under the data.output.uri `base` (hidden names: data readers skip them):
//   <base>/.rsl-output/lock   the lease of the commit in progress (JSON: run, holder, token,
//                             expires_at in ms since the epoch)
//   <root>/_RSL_COMMIT        the run's manifest, the commit point (root = base, or
//                             <base>/<run id> with policy versioned)
//   <base>/latest             policy versioned: an object whose body is the last committed run id
//   <base>/.rsl-output/claims/<run id>  a claim: the run is in flight (JSON: run, holder,
//                             expires_at), renewed while it is, removed when it ends
//   <base>/.rsl-output/claims.lock      a lease like the commit's, held by a refuse run's
//                             admission while it lists the claims and writes its own
//
// A commit takes the lease with a create-only PUT; a 412 means another commit holds it: the
// commit waits (polling) while the holder's expiry is in the future, and takes over a lease
// whose expiry has passed (its controller was killed) with a PUT conditional on the stale
// lease's ETag, so two waiters never both take it. The holder renews the expiry between
// uploads (conditional on its own ETag: a lease taken over is noticed there), and deletes
// the lease after the manifest. Expiries compare wall clocks of different controllers: they
// must agree to well within kObjectLeaseTtlMs. The manifest is written create-only after the
// old one was removed, so even a commit whose lease was broken cannot write a manifest after
// another commit's: it fails instead (see commit.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "engine/hooks.h"
#include "engine/output_root.h"

namespace rsl::engine {

//! The lease's lifetime without renewal. A commit renews it before each step's upload, so it
//! lasts as long as the slowest single upload may take; a lease left by a killed controller
//! blocks the root this long at most.
inline constexpr int64_t kObjectLeaseTtlMs = 5 * 60 * 1000;
//! Polling a held lease: from 100 ms, doubling, to at most 2 s (a commit of a few steps
//! takes well under a second; two seconds keep a long wait from flooding the store).
inline constexpr int64_t kObjectLeaseFirstPollMs = 100;
inline constexpr int64_t kObjectLeaseMaxPollMs = 2000;

//! The next wait of a poll for a held root (lease or lock) that has waited `waited_ms`:
//! *poll_ms (0 before the first) goes from kObjectLeaseFirstPollMs, doubling, to
//! kObjectLeaseMaxPollMs, and never past the end of a `wait_ms` wait.
int64_t NextRootPollMs(int64_t* poll_ms, int64_t waited_ms, int64_t wait_ms);

//! <base>/.rsl-output/lock
std::string ObjectLeaseUri(const std::string& base);
//! <base>/latest
std::string ObjectLatestUri(const std::string& base);

//! What the lease object holds.
struct LeaseRecord {
  std::string run_id;
  std::string holder;  //!< host:pid of the controller
  std::string token;   //!< unique per acquisition: tells a lost answer to our own PUT
  int64_t expires_at_ms = 0;
};
std::string LeaseJson(const LeaseRecord& lease);
//! Errors: DATA_FORMAT_ERROR (not a lease object).
Result<LeaseRecord> ParseLease(const std::string& json);

struct ObjectLeaseOptions {
  int64_t wait_ms = kOutputLockWaitMs;
  int64_t ttl_ms = kObjectLeaseTtlMs;
};

//! The lease of one commit on one base. Not thread-safe: one commit uses it.
class ObjectLease {
 public:
  //! Takes the lease of `base` for run `run_id`, waiting up to options.wait_ms while another
  //! run's live lease holds it (one of `run_id` itself, left by a crash, is taken over). Errors:
  //! IO_ERROR naming the holder run when the wait ends; the store's own error
  //! (DATA_SOURCE_UNREACHABLE, ...) when it cannot be read or written. `uri`: the lease
  //! object, "" for the commit lease (ObjectLeaseUri), else another of the same kind (the
  //! claims lock).
  static Result<std::unique_ptr<ObjectLease>> Acquire(OutputPublisher* store, Env* env,
                                                      const std::string& base,
                                                      const std::string& run_id,
                                                      const ObjectLeaseOptions& options = {},
                                                      const std::string& uri = "");
  //! One try, without waiting: the lease, or null while another run's live lease holds it
  //! (then `*holder`, when given, is that lease). A lease that expired, is not a lease, or is
  //! this run's own is taken over as Acquire does. Errors as Acquire's, but never the wait's.
  static Result<std::unique_ptr<ObjectLease>> TryAcquire(OutputPublisher* store, Env* env,
                                                         const std::string& base,
                                                         const std::string& run_id,
                                                         const ObjectLeaseOptions& options = {},
                                                         const std::string& uri = "",
                                                         LeaseRecord* holder = nullptr);
  //! Acquire's error when its wait ends after `waited_ms` with `holder` still holding it.
  static Error StayedLocked(const std::string& base, const std::string& uri,
                            const LeaseRecord& holder, int64_t waited_ms,
                            const ObjectLeaseOptions& options = {});
  //! Releases (best effort).
  ~ObjectLease();

  //! Pushes the expiry to now + ttl when a quarter of the ttl has passed since the last
  //! write (always with `force`), conditional on this holder's version. CONFLICT when the
  //! lease was taken over: the commit must stop writing.
  Status Renew(bool force = false);
  //! Deletes the lease if it is still this holder's. Best effort: a lease left behind
  //! expires. Idempotent.
  void Release();
  //! The run whose expired lease this one took over ("" when none).
  const std::string& took_over_from() const { return took_over_from_; }

 private:
  ObjectLease(OutputPublisher* store, Env* env, std::string uri, LeaseRecord record,
              std::string etag, int64_t ttl_ms)
      : store_(store),
        env_(env),
        uri_(std::move(uri)),
        record_(std::move(record)),
        etag_(std::move(etag)),
        ttl_ms_(ttl_ms),
        written_at_ms_(env->NowMs()) {}

  OutputPublisher* store_;
  Env* env_;
  std::string uri_;
  LeaseRecord record_;
  std::string etag_;
  int64_t ttl_ms_;
  int64_t written_at_ms_;
  bool released_ = false;
  std::string took_over_from_;
};

//! A claim's lifetime without renewal: a claim left by a controller that died (its runs'
//! ends never removed theirs) keeps `policy: refuse` runs of the root out this long at most.
//! The engine renews every claim of its in-flight runs when a quarter of it has passed (one
//! PUT per run every 75 s, whatever the number of steps).
inline constexpr int64_t kObjectClaimTtlMs = 5 * 60 * 1000;
//! After a failed renewal (the store unreachable): try again this much later, well before
//! the claim expires.
inline constexpr int64_t kObjectClaimRetryMs = 15 * 1000;
//! The (Warning) event reason of a claim that could not be renewed.
inline constexpr char kOutputClaimNotRenewed[] = "OutputClaimNotRenewed";

//! <base>/.rsl-output/claims (the prefix of every claim of the root)
std::string ObjectClaimsPrefix(const std::string& base);
//! <base>/.rsl-output/claims/<run id>
std::string ObjectClaimUri(const std::string& base, const std::string& run_id);
//! <base>/.rsl-output/claims.lock
std::string ObjectClaimsLockUri(const std::string& base);

//! What a claim object holds.
struct ClaimRecord {
  std::string run_id;
  std::string holder;  //!< host:pid of the controller
  int64_t expires_at_ms = 0;
};
std::string ClaimJson(const ClaimRecord& claim);
//! Errors: DATA_FORMAT_ERROR (not a claim object).
Result<ClaimRecord> ParseClaim(const std::string& json);

struct ObjectClaimOptions {
  int64_t wait_ms = kOutputLockWaitMs;  //!< for the claims lock
  int64_t ttl_ms = kObjectClaimTtlMs;
};

//! Run `run_id`'s claim of the object-store root `base` while it is in flight (policy
//! refuse: docs/engine.md "Two runs, one output root"). Not thread-safe: the admission
//! thread makes it, then the engine's loop alone renews and releases it. Destroying it
//! leaves the claim in place (an engine that stops leaves its runs in flight; recovery
//! resumes the claim).
class ObjectClaim {
 public:
  //! Claims `base` for `run_id`. With `refuse`, under the claims lock (ObjectClaimsLockUri,
  //! so of two refuse admissions at once exactly one is admitted): every claim of another
  //! run whose expiry has passed is removed, and a live one refuses the run with
  //! OUTPUT_CONFLICT naming that run, its holder and its expiry (no claim is made then).
  //! Without `refuse` the claim is simply written. A claim of `run_id` already there (a
  //! recovered admission) is taken over. Errors: OUTPUT_CONFLICT; IO_ERROR when the claims
  //! lock stays held; the store's own.
  static Result<std::unique_ptr<ObjectClaim>> Take(OutputPublisher* store, Env* env,
                                                   const std::string& base,
                                                   const std::string& run_id, bool refuse,
                                                   const ObjectClaimOptions& options = {});

  //! Writes the expiry anew (now + ttl) when a quarter of the ttl has passed since the last
  //! write (always with `force`). A claim that is gone (it expired and another admission
  //! removed it) is written again. Errors: the store's; next_renewal_ms() is then
  //! kObjectClaimRetryMs later.
  Status Renew(bool force = false);
  //! When Renew next has something to do.
  int64_t next_renewal_ms() const { return next_renewal_ms_; }
  //! Renewals that failed in a row (0 after one that succeeded).
  int failures() const { return failures_; }
  //! Removes the claim (best effort: one left behind expires). Idempotent.
  void Release();
  const std::string& uri() const { return uri_; }
  const std::string& run_id() const { return record_.run_id; }

 private:
  ObjectClaim(OutputPublisher* store, Env* env, std::string uri, ClaimRecord record,
              std::string etag, int64_t ttl_ms);

  OutputPublisher* store_;
  Env* env_;
  std::string uri_;
  ClaimRecord record_;
  std::string etag_;
  int64_t ttl_ms_;
  int64_t next_renewal_ms_;
  int failures_ = 0;
  bool released_ = false;
};

//! The manifest object at <root>/_RSL_COMMIT with its ETag, or nullopt when there is none.
Result<std::optional<StoredObject>> ReadObjectManifest(OutputPublisher* store,
                                                       const std::string& root);

//! Writes the manifest `json` at <root>/_RSL_COMMIT only if none exists (the commit removed
//! the old one under its lease). Errors: OUTPUT_CONFLICT when another run's manifest is
//! there (that run named: a commit that lost its lease), the store's own otherwise.
Status WriteObjectManifest(OutputPublisher* store, const std::string& root,
                           const std::string& run_id, const std::string& json);

//! Points <base>/latest at `run_id` (its body is the run id), conditional on the version read
//! just before. REQUIRES: the lease of `base` is held. Errors: CONFLICT when another commit
//! moved it meanwhile (a lease that expired), the store's otherwise.
Status MoveObjectLatest(OutputPublisher* store, const std::string& base, const std::string& run_id);

}  // namespace rsl::engine
