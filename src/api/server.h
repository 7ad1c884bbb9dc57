// rsl-controller's HTTP/JSON API (docs/api.md): HttpServer (http_server.h) carries the
// requests, the Router (router.h) authenticates them, renders errors as JSON and counts them,
// and the named handlers (routes.h, one file per resource) authorise by namespace, do the work
// through the Service and audit every change (denied ones included). The route table is
// RegisterApiRoutes in server.cc. Cluster-wide state (nodes, cluster status, metrics, the whole
// audit log) needs admin.
//
// Threading: handlers run on HttpServer's workers, log streams on its stream thread; Service,
// TokenStore, AuditLog and Metrics must be thread-safe (they are). Start() returns once the
// socket is bound.
#pragma once

#include <memory>
#include <string>

#include "api/audit.h"
#include "api/auth.h"
#include "api/http_server.h"
#include "api/metrics.h"
#include "api/router.h"
#include "api/service.h"
#include "api/tls_server.h"
#include "base/status.h"

namespace rsl::api {

inline constexpr char kControllerVersion[] = "0.1.0";

class ApiServer {
 public:
  //! Nothing is owned; everything must outlive the server.
  ApiServer(Service* service, TokenStore* tokens, AuditLog* audit, Metrics* metrics,
            HttpServerOptions options = {});
  ~ApiServer();

  //! Binds host:port (port 0 = an ephemeral port, see port()) and serves on background
  //! threads. CONFLICT when another process listens there, IO_ERROR for other failures.
  Status Start(const std::string& host, int port);
  //! Serves HTTPS with the PEM certificate chain and key (tls_server.h) instead of plain
  //! HTTP. REQUIRES: before Serve(). INVALID_ARGUMENT naming a file that does not load.
  Status EnableTls(const std::string& cert_file, const std::string& key_file);
  //! Mutual TLS: clients are asked for a certificate, verified against the PEM CAs of
  //! `ca_file` (a bad, unknown or expired one fails the handshake, which is audited); a
  //! verified certificate authenticates requests without a bearer token (auth.h).
  //! `required`: a client without a certificate fails the handshake too. REQUIRES: after
  //! EnableTls. INVALID_ARGUMENT naming the file when it does not load.
  Status EnableClientCertificates(const std::string& ca_file, bool required);
  //! Revocation lists for client certificates (--tls-client-crl; tls_server.h): revoked ones
  //! fail the handshake (audited). REQUIRES: after EnableClientCertificates.
  Status EnableClientCrl(const std::string& crl_file);
  //! The SHA-256 fingerprint of the TLS certificate ("" without TLS).
  std::string tls_fingerprint() const { return tls_ ? tls_->fingerprint() : ""; }
  //! Start in two halves: Listen binds (so a taken address fails before anything else
  //! starts), Serve starts the threads. REQUIRES for Serve: Listen succeeded.
  Status Listen(const std::string& host, int port);
  void Serve();
  //! Stops accepting, ends log streams, joins the thread. Idempotent.
  void Stop();
  int port() const { return http_->port(); }
  HttpServerStats stats() const { return http_->stats(); }

 private:
  FailedAuthLimiter auth_limiter_;  // before router_, which points at it
  Router router_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<TlsFrontend> tls_;  // after http_: destroyed (stopped) first
};

//! Adds the API's routes (docs/api.md) to `router`: the one route table of the controller
//! (ApiServer) and of the request fuzzer.
void RegisterApiRoutes(Router* router);

//! Whether `host` (as ParseListen gives it) is a loopback address: 127.x.y.z, ::1, localhost.
bool IsLoopback(const std::string& host);

//! The listen address and TLS flags together: --tls-cert and --tls-key go together, and plain
//! HTTP on an address other than loopback needs `insecure_listen` (tokens and secret values
//! would cross the network in clear). INVALID_ARGUMENT with the fix otherwise.
Status CheckListenSecurity(const std::string& listen, const std::string& host,
                           const std::string& tls_cert, const std::string& tls_key,
                           bool insecure_listen);

//! --tls-client-ca needs TLS (`tls`: --tls-cert or --tls-self-signed): INVALID_ARGUMENT with
//! the fix otherwise.
Status CheckClientCaFlags(const std::string& tls_client_ca, bool tls);

//! Parses "host:port" ("127.0.0.1:7070", ":7070" = loopback, "[::1]:7070").
Status ParseListen(const std::string& listen, std::string* host, int* port);

}  // namespace rsl::api
