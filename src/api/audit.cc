#include "api/audit.h"

#include <chrono>

#include "base/file.h"

namespace rsl::api {

namespace {
const std::vector<std::string> kMigrations = {
    "CREATE TABLE api_audit ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT, time_ms INTEGER NOT NULL, subject TEXT NOT NULL,"
    "  verb TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,"
    "  object_id TEXT NOT NULL, result TEXT NOT NULL, message TEXT NOT NULL)",
    "CREATE INDEX api_audit_object ON api_audit(object_id)",
};
}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& state_dir) {
  RSL_RETURN_IF_ERROR(MakeDirs(state_dir));
  auto db = Db::Open(StateDbPath(state_dir));
  if (!db.ok()) return db.error();
  RSL_RETURN_IF_ERROR((*db)->Migrate("api_audit", kMigrations));
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(*db)));
}

Status AuditLog::Append(AuditEntry e) {
  if (e.time_ms == 0) {
    e.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto st = db_->Prepare(
      "INSERT INTO api_audit(time_ms, subject, verb, resource, namespace, object_id, result,"
      " message) VALUES(?,?,?,?,?,?,?,?)");
  if (!st.ok()) return st.error();
  st->Bind(1, e.time_ms).Bind(2, e.subject).Bind(3, e.verb).Bind(4, e.resource);
  st->Bind(5, e.namespace_).Bind(6, e.object_id).Bind(7, e.result).Bind(8, e.message);
  return st->Run();
}

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
  std::vector<AuditEntry> out;
  while (st->Step()) {
    AuditEntry e;
    e.seq = st->Int(0);
    e.time_ms = st->Int(1);
    e.subject = st->Text(2);
    e.verb = st->Text(3);
    e.resource = st->Text(4);
    e.namespace_ = st->Text(5);
    e.object_id = st->Text(6);
    e.result = st->Text(7);
    e.message = st->Text(8);
    out.push_back(std::move(e));
  }
  if (!st->status().ok()) return st->status().error();
  return std::vector<AuditEntry>(out.rbegin(), out.rend());
}

}  // namespace rsl::api
