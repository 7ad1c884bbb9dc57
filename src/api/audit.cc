#include "api/audit.h"

#include "base/codes.h"
#include "base/env.h"

namespace rsl::api {

namespace {
const std::vector<std::string> kAuditMigrations = {
    "CREATE TABLE api_audit ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT, time_ms INTEGER NOT NULL, subject TEXT NOT NULL,"
    "  verb TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,"
    "  object_id TEXT NOT NULL, result TEXT NOT NULL, message TEXT NOT NULL)",
    "CREATE INDEX api_audit_object ON api_audit(object_id)",
    // 3: seq without AUTOINCREMENT: no sqlite_sequence page rewritten by every commit that
    // appends. Entries are never deleted, so max + 1 is still above every seq ever given.
    "CREATE TABLE api_audit_v3 ("
    "  seq INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, subject TEXT NOT NULL,"
    "  verb TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,"
    "  object_id TEXT NOT NULL, result TEXT NOT NULL, message TEXT NOT NULL);"
    "INSERT INTO api_audit_v3 SELECT * FROM api_audit;"
    "DROP TABLE api_audit;"
    "ALTER TABLE api_audit_v3 RENAME TO api_audit;"
    "CREATE INDEX api_audit_object ON api_audit(object_id);"
    "DELETE FROM sqlite_sequence WHERE name = 'api_audit';",
};

AuditEntry ReadEntry(const Stmt& row) {
  AuditEntry e;
  row.Into(&e.seq, &e.time_ms, &e.subject, &e.verb, &e.resource, &e.namespace_, &e.object_id,
           &e.result, &e.message);
  return e;
}
}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& state_dir) {
  auto shared = SharedDb::ForStateDir(state_dir, "api_audit", kAuditMigrations);
  if (!shared.ok()) return shared.error();
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(*shared)));
}

Status AuditLog::Insert(const AuditEntry& e) {
  return db_->Run(
      "INSERT INTO api_audit(time_ms, subject, verb, resource, namespace, object_id, result,"
      " message) VALUES(?,?,?,?,?,?,?,?)",
      e.time_ms, e.subject, e.verb, e.resource, e.namespace_, e.object_id, e.result, e.message);
}

Status AuditLog::Append(AuditEntry e) {
  if (e.time_ms == 0) e.time_ms = Env::Default()->NowMs();
  return appends_.Commit(
      &e, [](const AuditEntry&) { return true; },
      [&](const std::vector<AuditEntry*>& group) {
        std::lock_guard<std::mutex> db_lock(mu_);
        if (group.size() == 1) return Insert(*group[0]);
        return db_->Transaction([&] {
          for (const AuditEntry* q : group) RSL_RETURN_IF_ERROR(Insert(*q));
          return Status::Ok();
        });
      });
}

Status AuditLog::AppendIn(Db* db, AuditEntry e) {
  if (db != db_) {
    return Error(codes::kInternal,
                 "the audit entry was to be written on a connection to another database");
  }
  if (e.time_ms == 0) e.time_ms = Env::Default()->NowMs();
  return Insert(e);
}

int64_t AuditLog::commits() { return appends_.commits(); }

int64_t AuditLog::queued() { return appends_.queued(); }

void AuditLog::TEST_HoldWrites(bool hold) { appends_.TEST_Hold(hold); }

Result<std::vector<AuditEntry>> AuditLog::List(const AuditQuery& q) {
  std::string sql =
      "SELECT seq, time_ms, subject, verb, resource, namespace, object_id, result, message"
      " FROM api_audit WHERE 1=1";
  if (!q.namespaces.empty()) {
    sql += " AND namespace IN (";
    for (size_t i = 0; i < q.namespaces.size(); ++i) sql += i ? ",?" : "?";
    sql += ")";
  }
  if (!q.object_id.empty()) sql += " AND object_id = ?";
  sql += " ORDER BY seq DESC LIMIT ?";
  std::lock_guard<std::mutex> lock(mu_);
  auto st = db_->Prepare(sql);
  if (!st.ok()) return st.error();
  int idx = 1;
  for (const auto& ns : q.namespaces) st->Bind(idx++, ns);
  if (!q.object_id.empty()) st->Bind(idx++, q.object_id);
  st->Bind(idx, q.limit);
  auto out = st->Rows(ReadEntry);
  if (!out.ok()) return out.error();
  return std::vector<AuditEntry>(out->rbegin(), out->rend());
}

}  // namespace rsl::api
