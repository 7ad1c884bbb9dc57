#include "engine/object_root.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/strings.h"

namespace rsl::engine {
namespace {

using Json = nlohmann::json;

std::string Trimmed(std::string base) {
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base;
}

std::string Holder() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host) + ":" + std::to_string(getpid());
}

// Unique per acquisition, also between the engines of one process (tests run several).
std::string NewToken(Env* env, const std::string& run_id) {
  static std::atomic<uint64_t> counter{0};
  return run_id + "-" + std::to_string(getpid()) + "-" + std::to_string(env->NowMs()) + "-" +
         std::to_string(counter.fetch_add(1));
}

// The store's error as the commit reports it: what failed, on which object.
Error StoreError(const Status& s, const std::string& what) {
  Error e = s.error();
  e.message = what + ": " + e.message;
  return e;
}

}  // namespace

int64_t NextRootPollMs(int64_t* poll_ms, int64_t waited_ms, int64_t wait_ms) {
  *poll_ms =
      *poll_ms == 0 ? kObjectLeaseFirstPollMs : std::min(*poll_ms * 2, kObjectLeaseMaxPollMs);
  return std::min(*poll_ms, std::max<int64_t>(1, wait_ms - waited_ms));
}

std::string ObjectLeaseUri(const std::string& base) { return Trimmed(base) + "/.rsl-output/lock"; }

std::string ObjectLatestUri(const std::string& base) {
  return Trimmed(base) + "/" + kOutputLatestName;
}

std::string LeaseJson(const LeaseRecord& lease) {
  Json j = {{"run", lease.run_id},
            {"holder", lease.holder},
            {"token", lease.token},
            {"expires_at", lease.expires_at_ms}};
  return j.dump() + "\n";
}

Result<LeaseRecord> ParseLease(const std::string& json) {
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("run") || !j["run"].is_string() || !j.contains("expires_at") ||
      !j["expires_at"].is_number_integer()) {
    return Error(codes::kDataFormatError, "not an output lease object (run, expires_at)");
  }
  LeaseRecord r;
  r.run_id = j["run"].get<std::string>();
  r.expires_at_ms = j["expires_at"].get<int64_t>();
  if (j.contains("holder") && j["holder"].is_string()) r.holder = j["holder"].get<std::string>();
  if (j.contains("token") && j["token"].is_string()) r.token = j["token"].get<std::string>();
  return r;
}

Result<std::unique_ptr<ObjectLease>> ObjectLease::TryAcquire(
    OutputPublisher* store, Env* env, const std::string& base, const std::string& run_id,
    const ObjectLeaseOptions& options, const std::string& lease_uri, LeaseRecord* holder) {
  const std::string uri = lease_uri.empty() ? ObjectLeaseUri(base) : lease_uri;
  LeaseRecord mine{run_id, Holder(), NewToken(env, run_id), 0};
  while (true) {
    mine.expires_at_ms = env->NowMs() + options.ttl_ms;
    auto created = store->WriteObjectIf(uri, LeaseJson(mine), "");
    if (created.ok()) {
      return std::unique_ptr<ObjectLease>(
          new ObjectLease(store, env, uri, mine, *created, options.ttl_ms));
    }
    if (created.status().code() != codes::kConflict) {
      return StoreError(created.status(), "cannot take the lease " + uri);
    }
    auto current = store->ReadObject(uri);
    if (!current.ok()) {
      if (current.status().code() == codes::kNotFound) continue;  // released meanwhile
      return StoreError(current.status(), "cannot read the lease " + uri);
    }
    auto held = ParseLease(current->bytes);
    if (held.ok() && held->token == mine.token) {
      // Our own create, whose answer was lost and retried: it is ours.
      return std::unique_ptr<ObjectLease>(
          new ObjectLease(store, env, uri, mine, current->etag, options.ttl_ms));
    }
    // Left by this very run: its commit was cut short by a crash and a recovered engine
    // repeats it (a run has one engine at a time: its owner lock), so it need not expire.
    const bool own_run = held.ok() && held->run_id == run_id;
    if (!held.ok() || held->expires_at_ms < env->NowMs() || own_run) {
      // Expired (its controller died mid-commit) or not a lease: taken over, only if
      // nobody else changed it since we read it.
      mine.expires_at_ms = env->NowMs() + options.ttl_ms;
      auto taken = store->WriteObjectIf(uri, LeaseJson(mine), current->etag);
      if (taken.ok()) {
        std::unique_ptr<ObjectLease> lease(
            new ObjectLease(store, env, uri, mine, *taken, options.ttl_ms));
        if (!own_run) lease->took_over_from_ = held.ok() ? held->run_id : "(unreadable lease)";
        return lease;
      }
      if (taken.status().code() != codes::kConflict) {
        return StoreError(taken.status(), "cannot take over the lease " + uri);
      }
      continue;  // another waiter took it first (or our answer was lost): look again
    }
    if (holder) *holder = *held;
    return std::unique_ptr<ObjectLease>();  // a live lease of another run
  }
}

Error ObjectLease::StayedLocked(const std::string& base, const std::string& lease_uri,
                                const LeaseRecord& holder, int64_t waited_ms,
                                const ObjectLeaseOptions& options) {
  const std::string uri = lease_uri.empty() ? ObjectLeaseUri(base) : lease_uri;
  // What the lease guards.
  const std::string guarded = lease_uri.empty() ? "output root " + Trimmed(base)
                                                : "the claims of output root " + Trimmed(base);
  return Error(codes::kIoError, guarded + " stayed locked by run " + holder.run_id + " (" +
                                    holder.holder + ") for " + std::to_string(waited_ms / 1000) +
                                    " s")
      .Value(uri)
      .Hint("another run is committing there; its lease " + uri +
            " is renewed while it commits and deleted when it ends (an abandoned one "
            "expires after " +
            std::to_string(options.ttl_ms / 1000) + " s)");
}

Result<std::unique_ptr<ObjectLease>> ObjectLease::Acquire(OutputPublisher* store, Env* env,
                                                          const std::string& base,
                                                          const std::string& run_id,
                                                          const ObjectLeaseOptions& options,
                                                          const std::string& lease_uri) {
  const int64_t start = env->MonotonicMs();
  int64_t poll_ms = 0;
  while (true) {
    LeaseRecord seen;  // the live holder
    auto lease = TryAcquire(store, env, base, run_id, options, lease_uri, &seen);
    if (!lease.ok() || *lease) return lease;
    const int64_t waited = env->MonotonicMs() - start;
    if (waited >= options.wait_ms) {
      return StayedLocked(base, lease_uri, seen, options.wait_ms, options);
    }
    env->SleepMs(NextRootPollMs(&poll_ms, waited, options.wait_ms));
  }
}

ObjectLease::~ObjectLease() { Release(); }

Status ObjectLease::Renew(bool force) {
  if (released_) return Error(codes::kConflict, "the lease " + uri_ + " was released");
  const int64_t now = env_->NowMs();
  if (!force && now - written_at_ms_ < ttl_ms_ / 4) return Status::Ok();
  LeaseRecord next = record_;
  next.expires_at_ms = now + ttl_ms_;
  auto renewed = store_->WriteObjectIf(uri_, LeaseJson(next), etag_);
  if (!renewed.ok() && renewed.status().code() == codes::kConflict) {
    // Our own renewal whose answer was lost reads back with our token and expiry.
    auto current = store_->ReadObject(uri_);
    auto held = current.ok() ? ParseLease(current->bytes) : Result<LeaseRecord>(current.error());
    if (held.ok() && held->token == record_.token && held->expires_at_ms == next.expires_at_ms) {
      renewed = current->etag;
    } else {
      std::string by = held.ok() ? "run " + held->run_id + " (" + held->holder + ")" : "nobody";
      return Error(codes::kOutputConflict, "lost the lease " + uri_ +
                                               " of the output root: it expired and is held by " +
                                               by + " now")
          .Value(uri_)
          .Hint("a single upload took longer than the lease (" + std::to_string(ttl_ms_ / 1000) +
                " s); the other run owns the root now, rerun this one");
    }
  }
  if (!renewed.ok()) return StoreError(renewed.status(), "cannot renew the lease " + uri_);
  record_ = next;
  etag_ = *renewed;
  written_at_ms_ = now;
  return Status::Ok();
}

void ObjectLease::Release() {
  if (released_) return;
  released_ = true;
  // Only our own: a lease taken over after ours expired belongs to another commit. (Between
  // this read and the delete another could take over an expired one; ours is renewed up to
  // the manifest, so it is not expired here.)
  auto current = store_->ReadObject(uri_);
  if (!current.ok()) return;
  auto held = ParseLease(current->bytes);
  if (!held.ok() || held->token != record_.token) return;
  (void)store_->Remove(uri_);
}

std::string ObjectClaimsPrefix(const std::string& base) {
  return Trimmed(base) + "/.rsl-output/claims";
}

std::string ObjectClaimUri(const std::string& base, const std::string& run_id) {
  return ObjectClaimsPrefix(base) + "/" + run_id;
}

std::string ObjectClaimsLockUri(const std::string& base) {
  return Trimmed(base) + "/.rsl-output/claims.lock";
}

std::string ClaimJson(const ClaimRecord& claim) {
  Json j = {{"run", claim.run_id}, {"holder", claim.holder}, {"expires_at", claim.expires_at_ms}};
  return j.dump() + "\n";
}

Result<ClaimRecord> ParseClaim(const std::string& json) {
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("run") || !j["run"].is_string() || !j.contains("expires_at") ||
      !j["expires_at"].is_number_integer()) {
    return Error(codes::kDataFormatError, "not an output claim object (run, expires_at)");
  }
  ClaimRecord c;
  c.run_id = j["run"].get<std::string>();
  c.expires_at_ms = j["expires_at"].get<int64_t>();
  if (j.contains("holder") && j["holder"].is_string()) c.holder = j["holder"].get<std::string>();
  return c;
}

namespace {

// Writes a claim whether or not one is there (a claim is its run's alone: its name is the
// run id), in single conditional PUTs: create-only, or over the version just read.
Result<std::string> WriteClaim(OutputPublisher* store, const std::string& uri,
                               const std::string& json) {
  Status last = Error(codes::kConflict, "the claim " + uri + " kept changing while written");
  for (int tries = 0; tries < 4; ++tries) {  // each lost race means another write meanwhile
    auto created = store->WriteObjectIf(uri, json, "");
    if (created.ok() || created.status().code() != codes::kConflict) return created;
    auto current = store->ReadObject(uri);
    if (!current.ok()) {
      if (current.status().code() == codes::kNotFound) continue;  // removed meanwhile
      return current.error();
    }
    auto over = store->WriteObjectIf(uri, json, current->etag);
    if (over.ok() || over.status().code() != codes::kConflict) return over;
    last = over.status();
  }
  return last.error();
}

}  // namespace

ObjectClaim::ObjectClaim(OutputPublisher* store, Env* env, std::string uri, ClaimRecord record,
                         std::string etag, int64_t ttl_ms)
    : store_(store),
      env_(env),
      uri_(std::move(uri)),
      record_(std::move(record)),
      etag_(std::move(etag)),
      ttl_ms_(ttl_ms),
      next_renewal_ms_(env->NowMs() + ttl_ms / 4) {}

Result<std::unique_ptr<ObjectClaim>> ObjectClaim::Take(OutputPublisher* store, Env* env,
                                                       const std::string& base,
                                                       const std::string& run_id, bool refuse,
                                                       const ObjectClaimOptions& options) {
  const std::string uri = ObjectClaimUri(base, run_id);
  // Held to the end of the function: between the listing and our own claim no other refuse
  // admission lists (runs of other policies write their claims without it: one written
  // after our listing is a run admitted after this one, which replace and versioned allow).
  std::unique_ptr<ObjectLease> lock;
  if (refuse) {
    ObjectLeaseOptions lo;
    lo.wait_ms = options.wait_ms;
    auto taken = ObjectLease::Acquire(store, env, base, run_id, lo, ObjectClaimsLockUri(base));
    if (!taken.ok()) return taken.error();
    lock = std::move(*taken);
    auto claims = store->ListObjects(ObjectClaimsPrefix(base));
    if (!claims.ok()) {
      return StoreError(claims.status(), "cannot list the claims of " + Trimmed(base));
    }
    // The first live claim of another run refuses it; every expired one is removed.
    std::optional<Error> refused;
    for (const auto& other : *claims) {
      if (other == uri) continue;
      auto current = store->ReadObject(other);
      if (!current.ok()) {
        if (current.status().code() == codes::kNotFound) continue;  // its run just ended
        return StoreError(current.status(), "cannot read the claim " + other);
      }
      auto held = ParseClaim(current->bytes);
      if (!held.ok() || held->expires_at_ms < env->NowMs()) {
        // Its controller died (or it is not a claim): it claims nothing any more.
        (void)store->Remove(other);
        continue;
      }
      if (held->run_id == run_id || refused) continue;
      const std::string until = FormatUtc(held->expires_at_ms / 1000, "%Y-%m-%dT%H:%M:%SZ");
      refused =
          Error(codes::kOutputConflict,
                "run " + held->run_id + " (" + held->holder +
                    ") is writing to the same output root " + Trimmed(base) +
                    ", and data.output.policy is refuse; its claim expires at " + until +
                    " unless renewed")
              .Path("spec.data.output.uri")
              .Value(Trimmed(base))
              .Hint("wait for " + held->run_id + " to end (its claim " + other +
                    " is removed then, or expires " + std::to_string(options.ttl_ms / 1000) +
                    " s after its controller stops renewing it), or choose policy: replace or "
                    "policy: versioned");
    }
    if (refused) return *refused;
  }
  ClaimRecord mine{run_id, Holder(), env->NowMs() + options.ttl_ms};
  auto written = WriteClaim(store, uri, ClaimJson(mine));
  if (!written.ok()) return StoreError(written.status(), "cannot write the claim " + uri);
  return std::unique_ptr<ObjectClaim>(
      new ObjectClaim(store, env, uri, std::move(mine), *written, options.ttl_ms));
}

Status ObjectClaim::Renew(bool force) {
  if (released_) return Error(codes::kConflict, "the claim " + uri_ + " was released");
  const int64_t now = env_->NowMs();
  if (!force && now < next_renewal_ms_) return Status::Ok();
  ClaimRecord next = record_;
  next.expires_at_ms = now + ttl_ms_;
  auto renewed = store_->WriteObjectIf(uri_, ClaimJson(next), etag_);
  // Gone (it expired and an admission removed it) or changed: written again, still ours.
  if (!renewed.ok() && renewed.status().code() == codes::kConflict) {
    renewed = WriteClaim(store_, uri_, ClaimJson(next));
  }
  if (!renewed.ok()) {
    ++failures_;
    next_renewal_ms_ = now + std::min(kObjectClaimRetryMs, ttl_ms_ / 4);
    return StoreError(renewed.status(), "cannot renew the claim " + uri_);
  }
  failures_ = 0;
  record_ = next;
  etag_ = *renewed;
  next_renewal_ms_ = now + ttl_ms_ / 4;
  return Status::Ok();
}

void ObjectClaim::Release() {
  if (released_) return;
  released_ = true;
  (void)store_->Remove(uri_);
}

Result<std::optional<StoredObject>> ReadObjectManifest(OutputPublisher* store,
                                                       const std::string& root) {
  auto m = store->ReadObject(Trimmed(root) + "/" + kCommitManifestName);
  if (m.ok()) return std::optional<StoredObject>(std::move(*m));
  if (m.status().code() == codes::kNotFound) return std::optional<StoredObject>();
  return StoreError(m.status(), "cannot read the manifest of " + Trimmed(root));
}

Status WriteObjectManifest(OutputPublisher* store, const std::string& root,
                           const std::string& run_id, const std::string& json) {
  const std::string uri = Trimmed(root) + "/" + kCommitManifestName;
  auto written = store->WriteObjectIf(uri, json, "");
  if (written.ok()) return Status::Ok();
  if (written.status().code() != codes::kConflict) {
    return StoreError(written.status(), "cannot write the manifest " + uri);
  }
  auto there = store->ReadObject(uri);
  if (there.ok() && there->bytes == json) return Status::Ok();  // ours, its answer lost
  std::string other = "another run";
  if (there.ok()) {
    auto m = ParseCommitManifest(there->bytes);
    if (m.ok() && !m->run_id.empty()) other = "run " + m->run_id;
  }
  return Error(codes::kOutputConflict, "the manifest " + uri + " was written by " + other +
                                           " while run " + run_id + " committed")
      .Value(uri)
      .Hint("two commits overlapped after a lease expired; the root holds " + other +
            "'s commit, rerun this one");
}

Status MoveObjectLatest(OutputPublisher* store, const std::string& base,
                        const std::string& run_id) {
  const std::string uri = ObjectLatestUri(base);
  std::string if_match;  // none yet: create-only
  auto current = store->ReadObject(uri);
  if (current.ok()) {
    if (current->bytes == run_id) return Status::Ok();  // repeated after a crash
    if_match = current->etag;
  } else if (current.status().code() != codes::kNotFound) {
    return StoreError(current.status(), "cannot read " + uri);
  }
  auto written = store->WriteObjectIf(uri, run_id, if_match);
  if (!written.ok()) return StoreError(written.status(), "cannot write " + uri);
  return Status::Ok();
}

}  // namespace rsl::engine
