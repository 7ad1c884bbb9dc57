// The audit log: recording the API's writes, and reading the log back.
#include <algorithm>

#include "api/routes.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api::routes {

namespace {

constexpr int64_t kMaxAuditLimit = 10000;

Json EntryJson(const AuditEntry& e) {
  return {{"seq", e.seq},
          {"timeMs", e.time_ms},
          {"subject", e.subject},
          {"verb", e.verb},
          {"resource", e.resource},
          {"namespace", e.namespace_},
          {"objectId", e.object_id},
          {"result", e.result},
          {"message", e.message}};
}

}  // namespace

AuditEntry MakeAuditEntry(const Principal& who, const std::string& verb,
                          const std::string& resource, const std::string& ns, const std::string& id,
                          const Status& result, const std::string& message) {
  AuditEntry e;
  e.subject = who.subject;
  e.verb = verb;
  e.resource = resource;
  e.namespace_ = ns;
  e.object_id = id;
  e.result = result.ok() ? "OK" : result.code();
  e.message = message;
  return e;
}

void RecordAudit(const Services& s, const Principal& who, const std::string& verb,
                 const std::string& resource, const std::string& ns, const std::string& id,
                 const Status& result, const std::string& message) {
  // A failing audit write must not hide the answer.
  (void)s.audit->Append(MakeAuditEntry(who, verb, resource, ns, id, result, message));
}

Result<Reply> ListAudit(const Services& s, RequestContext& c) {
  AuditQuery q;
  q.object_id = c.Query("id");
  std::string ns = c.Query("namespace");
  std::string limit = c.Query("limit");
  if (!limit.empty()) {
    if (limit.find_first_not_of("0123456789") != std::string::npos || limit.size() > 6) {
      return Error(codes::kInvalidArgument, "invalid limit " + Quote(limit)).Value(limit);
    }
    q.limit = std::min<int64_t>(std::stoll(limit), kMaxAuditLimit);
  }
  if (!ns.empty()) {
    if (!c.who.CanRead(ns)) return Forbidden(c.who, "read the audit log", ns);
    q.namespaces = {ns};
  } else if (!c.who.IsClusterAdmin()) {
    q.namespaces = c.who.namespaces;
    if (std::find(q.namespaces.begin(), q.namespaces.end(), "*") != q.namespaces.end()) {
      q.namespaces.clear();
    }
  }
  auto entries = s.audit->List(q);
  if (!entries.ok()) return entries.error();
  Json items = Json::array();
  for (const auto& e : *entries) items.push_back(EntryJson(e));
  return JsonReply({{"apiVersion", kApiVersion}, {"kind", "AuditEntryList"}, {"items", items}});
}

}  // namespace rsl::api::routes
