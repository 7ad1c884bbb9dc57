// The API's handlers (docs/api.md), one file per resource. Each one answers one route of the
// table in RegisterApiRoutes (server.cc), which says who may call it (router.h): a
// handler starts with an authenticated caller (or none on public routes) and its path
// parameters, applies the namespace rules, calls the Service and records its writes in the
// audit log. Each can be called on its own with a fake Service (routes_test.cc).
//
// Namespace rules (as Kubernetes): a request naming a namespace the caller has no role in is
// 403 FORBIDDEN; an object addressed by id that lives in such a namespace is 404 NOT_FOUND
// (ids are global, so existence is not revealed); a viewer's writes are 403 FORBIDDEN.
#pragma once

#include <string>

#include "api/router.h"
#include "base/status.h"

namespace rsl::api::routes {

// --- workloads (routes_workloads.cc) ------------------------------------------------------
//! POST /api/v1/workloads[?namespace=N]: the namespace is metadata.namespace, else ?namespace,
//! else the caller's default; both given and different is INVALID_ARGUMENT. 201.
Result<Reply> SubmitWorkload(const Services& s, RequestContext& c);
//! POST /api/v1/namespaces/{ns}/workloads.
Result<Reply> SubmitWorkloadInNamespace(const Services& s, RequestContext& c);
//! GET /api/v1/workloads[?namespace=N][&name=X][&allNamespaces=true].
Result<Reply> ListWorkloads(const Services& s, RequestContext& c);
//! GET /api/v1/namespaces/{ns}/workloads[?name=X].
Result<Reply> ListWorkloadsInNamespace(const Services& s, RequestContext& c);
//! GET /api/v1/workloads/{id}, .../describe, .../events, .../lineage[?format=openlineage].
Result<Reply> GetWorkload(const Services& s, RequestContext& c);
Result<Reply> DescribeWorkload(const Services& s, RequestContext& c);
Result<Reply> WorkloadEvents(const Services& s, RequestContext& c);
Result<Reply> WorkloadLineage(const Services& s, RequestContext& c);
//! GET /api/v1/workloads[?phase=P][&label=K=V][&limit=L][&continue=N]: the items in phase P
//! with label K=V, items [N, N+L) of them, metadata.total and, when more follow,
//! metadata.continue (the next N).
//! GET /api/v1/workloads/{id}/logs[?step=S][&follow=true][&tailBytes=N]: sets a stream on
//! c.res; tailBytes starts each step's log at its last N bytes (at a line start).
Result<Reply> WorkloadLogs(const Services& s, RequestContext& c);
//! GET /api/v1/workloads/{id}/watch[?logStep=S][&tailBytes=N] and GET /api/v1/watch/workloads
//! (namespaces as ListWorkloads): server-sent events (events_stream.h).
Result<Reply> WatchWorkload(const Services& s, RequestContext& c);
Result<Reply> WatchWorkloads(const Services& s, RequestContext& c);
//! POST /api/v1/workloads/{id}/cancel and .../rollback (201 with the new version). Every
//! attempt is audited, a denied one too: answered 404, it is recorded under the object's
//! namespace when the object exists, else under none.
Result<Reply> CancelWorkload(const Services& s, RequestContext& c);
Result<Reply> RollbackWorkload(const Services& s, RequestContext& c);

// --- cluster (routes_cluster.cc) ------------------------------------------------------------
//! GET /healthz ("ok\n", text), GET /version.
Result<Reply> Healthz(const Services& s, RequestContext& c);
Result<Reply> Version(const Services& s, RequestContext& c);
//! GET /metrics: the Prometheus text, with the scrape-time gauges set first.
Result<Reply> MetricsText(const Services& s, RequestContext& c);
//! GET /api/v1/nodes[?capability=C], /api/v1/cluster/status, /api/v1/datasources,
//! /api/v1/environments.
Result<Reply> ListNodes(const Services& s, RequestContext& c);
Result<Reply> ClusterStatus(const Services& s, RequestContext& c);
Result<Reply> ListDatasources(const Services& s, RequestContext& c);
Result<Reply> ListEnvironments(const Services& s, RequestContext& c);

// --- the web console (routes_ui.cc) ---------------------------------------------------------
//! GET /ui: a redirect to /ui/. GET /ui/ and /ui/{file}: the console's files (ui_assets.h),
//! public (they hold no data), with the console's Content-Security-Policy, nosniff, an ETag
//! (If-None-Match answers 304) and Cache-Control: no-cache.
Result<Reply> UiRedirect(const Services& s, RequestContext& c);
Result<Reply> UiFile(const Services& s, RequestContext& c);

// --- configuration (routes_config.cc) -------------------------------------------------------
//! GET /api/v1/whoami: the caller's subject, role and namespaces.
Result<Reply> WhoAmI(const Services& s, RequestContext& c);
//! POST /api/v1/namespaces/{ns}/configmaps|secrets with {"name", "data": {K: V}}: 201; a
//! secret's answer names its keys, never its values. Audited (keys only).
Result<Reply> CreateConfigMap(const Services& s, RequestContext& c);
Result<Reply> CreateSecret(const Services& s, RequestContext& c);
//! GET /api/v1/namespaces/{ns}/configmaps|secrets.
Result<Reply> ListConfigMaps(const Services& s, RequestContext& c);
Result<Reply> ListSecrets(const Services& s, RequestContext& c);

// --- the audit log (routes_audit.cc) --------------------------------------------------------
//! GET /api/v1/audit[?namespace=N][&id=X][&limit=L]: the caller's namespaces (an admin's:
//! all), at most 10000 entries.
Result<Reply> ListAudit(const Services& s, RequestContext& c);
//! Appends one entry for `who` doing `verb` on `resource`; result "OK" or the error code. A
//! failing audit write is dropped: it must not hide the answer.
void RecordAudit(const Services& s, const Principal& who, const std::string& verb,
                 const std::string& resource, const std::string& ns, const std::string& id,
                 const Status& result, const std::string& message);
//! The entry RecordAudit appends.
AuditEntry MakeAuditEntry(const Principal& who, const std::string& verb,
                          const std::string& resource, const std::string& ns, const std::string& id,
                          const Status& result, const std::string& message);

}  // namespace rsl::api::routes
