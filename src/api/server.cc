#include "api/server.h"

#include <iostream>

#include "api/routes.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api {

Status ParseListen(const std::string& listen, std::string* host, int* port) {
  size_t colon = listen.rfind(':');
  auto bad = [&]() {
    return Error(codes::kInvalidArgument, "invalid --listen address " + Quote(listen))
        .Value(listen)
        .Hint("use HOST:PORT, e.g. 127.0.0.1:7070 (port 0 = any free port)");
  };
  if (colon == std::string::npos) return bad();
  *host = listen.substr(0, colon);
  if (host->empty()) *host = "127.0.0.1";
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  std::string p = listen.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
    return bad();
  }
  *port = std::stoi(p);
  if (*port > 65535) return bad();
  return Status::Ok();
}

bool IsLoopback(const std::string& host) {
  return StartsWith(host, "127.") || host == "::1" || host == "localhost";
}

Status CheckListenSecurity(const std::string& listen, const std::string& host,
                           const std::string& tls_cert, const std::string& tls_key,
                           bool insecure_listen) {
  if (tls_cert.empty() != tls_key.empty()) {
    return Error(codes::kInvalidArgument, "--tls-cert and --tls-key go together")
        .Hint("pass both: the PEM certificate chain and its private key");
  }
  if (tls_cert.empty() && !insecure_listen && !IsLoopback(host)) {
    return Error(codes::kInvalidArgument,
                 "plain HTTP on " + listen + " would send bearer tokens and secret values in clear")
        .Value(listen)
        .Hint(
            "serve HTTPS with --tls-cert FILE --tls-key FILE, listen on 127.0.0.1, or accept "
            "the risk with --insecure-listen");
  }
  return Status::Ok();
}

Status CheckClientCaFlags(const std::string& tls_client_ca, bool tls) {
  if (tls_client_ca.empty() || tls) return Status::Ok();
  return Error(codes::kInvalidArgument, "--tls-client-ca needs TLS")
      .Value(tls_client_ca)
      .Hint(
          "client certificates come in the TLS handshake: add --tls-cert FILE --tls-key FILE "
          "or --tls-self-signed");
}

ApiServer::ApiServer(Service* service, TokenStore* tokens, AuditLog* audit, Metrics* metrics,
                     HttpServerOptions options)
    : router_(Services{service, tokens, audit, metrics, [this] { return http_->stats(); },
                       &auth_limiter_}),
      http_(std::make_unique<HttpServer>(std::move(options))) {
  RegisterApiRoutes(&router_);
  // The router is the server's one handler: it answers unknown routes with the JSON 404.
  http_->SetHandler(
      [this](const HttpRequest& req, HttpResponse& res) { router_.Dispatch(req, res); });
}

ApiServer::~ApiServer() { Stop(); }

Status ApiServer::Start(const std::string& host, int port) {
  RSL_RETURN_IF_ERROR(Listen(host, port));
  Serve();
  return Status::Ok();
}

Status ApiServer::Listen(const std::string& host, int port) { return http_->Listen(host, port); }

void ApiServer::Serve() { http_->Start(); }

void ApiServer::Stop() {
  if (tls_) tls_->Stop();  // its connections end; then the plain server's
  http_->Stop();
}

Status ApiServer::EnableTls(const std::string& cert_file, const std::string& key_file) {
  auto tls = std::make_unique<TlsFrontend>(http_.get(), HttpServerOptions{}.max_connections);
  RSL_RETURN_IF_ERROR(tls->LoadCertificate(cert_file, key_file));
  tls->Attach();
  tls_ = std::move(tls);
  return Status::Ok();
}

Status ApiServer::EnableClientCertificates(const std::string& ca_file, bool required) {
  RSL_RETURN_IF_ERROR(tls_->LoadClientCa(ca_file, required));
  AuditLog* audit = router_.services().audit;
  tls_->SetOnRefused([audit](const std::string& peer, const std::string& why) {
    if (!audit) return;
    AuditEntry e;
    e.subject = "anonymous";
    e.verb = "authenticate";
    e.resource = "certificates";
    e.result = codes::kUnauthenticated;
    e.message = "TLS handshake from " + peer + " refused: " + why;
    (void)audit->Append(e);  // the refusal stands even if the audit write fails
  });
  return Status::Ok();
}

Status ApiServer::EnableClientCrl(const std::string& crl_file) {
  RSL_RETURN_IF_ERROR(tls_->LoadClientCrl(crl_file));
  tls_->SetOnNote([](const std::string& note) {
    std::cerr << "rsl-controller: --tls-client-crl " << note << std::endl;
  });
  return Status::Ok();
}

void RegisterApiRoutes(Router* router) {
  using namespace routes;
  Router& r = *router;
  r.Get("/healthz", Access::Public(), Healthz);
  r.Get("/version", Access::Public(), Version);
  r.Get("/metrics", Access::Admin("read metrics"), MetricsText);
  r.Get("/api/v1/whoami", Access::Token(), WhoAmI);

  r.Get("/ui", Access::Public(), UiRedirect);
  r.Get("/ui/", Access::Public(), UiFile);
  r.Get("/ui/{file}", Access::Public(), UiFile);

  r.Post("/api/v1/workloads", Access::Token(), SubmitWorkload);
  r.Post("/api/v1/namespaces/{ns}/workloads", Access::Token(), SubmitWorkloadInNamespace);
  r.Get("/api/v1/workloads", Access::Token(), ListWorkloads);
  r.Get("/api/v1/namespaces/{ns}/workloads", Access::Token(), ListWorkloadsInNamespace);
  r.Get("/api/v1/workloads/{id}", Access::Token(), GetWorkload);
  r.Get("/api/v1/workloads/{id}/describe", Access::Token(), DescribeWorkload);
  r.Get("/api/v1/workloads/{id}/events", Access::Token(), WorkloadEvents);
  r.Get("/api/v1/workloads/{id}/lineage", Access::Token(), WorkloadLineage);
  r.Post("/api/v1/workloads/{id}/cancel", Access::Token(), CancelWorkload);
  r.Post("/api/v1/workloads/{id}/rollback", Access::Token(), RollbackWorkload);
  r.Get("/api/v1/workloads/{id}/logs", Access::Token(), WorkloadLogs);
  r.Get("/api/v1/workloads/{id}/watch", Access::Token(), WatchWorkload);
  r.Get("/api/v1/watch/workloads", Access::Token(), WatchWorkloads);

  r.Get("/api/v1/nodes", Access::Admin("list nodes"), ListNodes);
  r.Get("/api/v1/cluster/status", Access::Admin("read cluster status"), ClusterStatus);
  r.Get("/api/v1/datasources", Access::Admin("list datasources"), ListDatasources);
  r.Get("/api/v1/environments", Access::Token(), ListEnvironments);
  r.Get("/api/v1/audit", Access::Token(), ListAudit);

  r.Post("/api/v1/namespaces/{ns}/configmaps", Access::Token(), CreateConfigMap);
  r.Get("/api/v1/namespaces/{ns}/configmaps", Access::Token(), ListConfigMaps);
  r.Post("/api/v1/namespaces/{ns}/secrets", Access::Token(), CreateSecret);
  r.Get("/api/v1/namespaces/{ns}/secrets", Access::Token(), ListSecrets);
}

}  // namespace rsl::api
