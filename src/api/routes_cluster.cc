// The controller and the cluster: health, versions, metrics, nodes, cluster status and the
// catalogs (datasources, environments). Who may call each is the route table's business
// (server.cc): most of these are admin-only there.
#include "api/routes.h"
#include "api/server.h"

namespace rsl::api::routes {

namespace {

Result<Reply> JsonOrError(Result<Json> j) {
  if (!j.ok()) return j.error();
  return JsonReply(std::move(*j));
}

}  // namespace

Result<Reply> Healthz(const Services&, RequestContext&) {
  Reply r;
  r.text = "ok\n";
  r.content_type = "text/plain";
  return r;
}

Result<Reply> Version(const Services&, RequestContext&) {
  return JsonReply({{"controller", kControllerVersion}, {"apiVersion", kApiVersion}});
}

Result<Reply> MetricsText(const Services& s, RequestContext&) {
  s.service->CollectMetrics(s.metrics);
  HttpServerStats stats = s.http_stats ? s.http_stats() : HttpServerStats{};
  s.metrics->Set("rsl_api_open_connections", {}, stats.connections);
  s.metrics->Set("rsl_api_open_streams", {}, stats.streams);
  Reply r;
  r.text = s.metrics->Render();
  r.content_type = "text/plain; version=0.0.4";
  return r;
}

Result<Reply> ListNodes(const Services& s, RequestContext& c) {
  return JsonOrError(s.service->ListNodes(c.Query("capability")));
}

Result<Reply> ClusterStatus(const Services& s, RequestContext&) {
  return JsonOrError(s.service->ClusterStatus());
}

Result<Reply> ListDatasources(const Services& s, RequestContext&) {
  return JsonOrError(s.service->ListDatasources());
}

Result<Reply> ListEnvironments(const Services& s, RequestContext&) {
  return JsonOrError(s.service->ListEnvironments());
}

}  // namespace rsl::api::routes
