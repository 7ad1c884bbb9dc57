// The audit log: who (token subject) did what (verb, resource), when, to which object id,
// and with which result. Append-only, kept in <state-dir>/rsl.db (component "api_audit"),
// written through the process's shared connection (base/sqlite.h SharedDb).
// Secrets never enter it: entries name objects, never their values.
//
// Threading: safe from many threads. Concurrent appends are group-committed: the one at the
// head of the queue writes itself and those queued behind it in one transaction (one fsync),
// and each Append returns once the transaction holding its entry is durable.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/group_commit.h"
#include "base/sqlite.h"
#include "base/status.h"

namespace rsl::api {

struct AuditEntry {
  int64_t seq = 0;       //!< assigned on append
  int64_t time_ms = 0;   //!< assigned on append when 0
  std::string subject;   //!< who: the token's subject
  std::string verb;      //!< submit, cancel, rollback, create, ...
  std::string resource;  //!< workloads, secrets, configmaps, tokens, ...
  std::string namespace_;
  std::string object_id;  //!< wl-..., or the object's name
  std::string result;     //!< "OK" or the error code
  std::string message;    //!< short detail, e.g. "rolled back from wl-..."
};

struct AuditQuery {
  std::vector<std::string> namespaces;  //!< empty = all
  std::string object_id;                //!< "" = any
  int64_t limit = 1000;
};

class AuditLog {
 public:
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& state_dir);
  //! Appends durably (the entry is committed before this returns). When the transaction
  //! holding it (with entries of other threads) fails, every append in it fails, none kept.
  Status Append(AuditEntry entry);
  //! Appends inside a transaction the caller holds on `db`, the process's shared connection
  //! to this log's database, with its mutex (store::Batch::also: an accepted submission's
  //! entry commits with the submission). INTERNAL when `db` is another connection.
  Status AppendIn(Db* db, AuditEntry entry);
  //! Entries in the order they were appended (the latest `limit` ones).
  Result<std::vector<AuditEntry>> List(const AuditQuery& query);

  //! Transactions that appended entries so far, and appends waiting for theirs now.
  int64_t commits();
  int64_t queued();
  //! Test only: while held, the head of the queue waits before it writes (so that a test
  //! decides which appends share a transaction).
  void TEST_HoldWrites(bool hold);

 private:
  //! At most this many entries in one transaction.
  static constexpr size_t kMaxGroup = 128;

  explicit AuditLog(std::shared_ptr<SharedDb> shared)
      : shared_(std::move(shared)), mu_(shared_->mu()), db_(shared_->db()) {}
  Status Insert(const AuditEntry& e);  // REQUIRES: mu_ held
  // The process's shared connection (SharedDb: the store writes through it too).
  std::shared_ptr<SharedDb> shared_;
  std::mutex& mu_;
  Db* db_;  // GUARDED_BY(mu_)
  GroupCommit<AuditEntry> appends_{kMaxGroup};
};

}  // namespace rsl::api
