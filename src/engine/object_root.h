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
  //! (DATA_SOURCE_UNREACHABLE, ...) when it cannot be read or written.
  static Result<std::unique_ptr<ObjectLease>> Acquire(OutputPublisher* store, Env* env,
                                                      const std::string& base,
                                                      const std::string& run_id,
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
