// The API's routing table: each route is a method, a path pattern, who may call it and a named
// handler (routes.h). Router::Dispatch applies what every route shares, once:
//
//   match     the first route whose method and pattern fit the path (HEAD is served by GET
//             routes); none: HttpServer's JSON 404 `no route METHOD PATH` (a path served
//             only under another method is 404 too), no metrics.
//   access    kPublic: no token; kToken: a bearer token (401 UNAUTHENTICATED with
//             `WWW-Authenticate: Bearer` otherwise, saying whether it was missing, unknown,
//             expired or revoked; the refusal is audited and counted against the source
//             address, which gets 429 with Retry-After once over its limit: auth_limit.h);
//             kAdmin: a token with the admin role (403 FORBIDDEN naming the route's action
//             otherwise). Namespace rules stay with the
//             handlers, which know the namespace.
//   render    the handler's Reply as JSON or text, or its Error (every one of
//             RequestContext::errors when set) as the JSON error body with the code's HTTP
//             status; an exception becomes INTERNAL; a handler that set a stream owns the
//             answer.
//   metrics   rsl_api_requests_total{route,code} and rsl_api_request_duration_seconds{route},
//             where `route` is the route's pattern as written, e.g. "/api/v1/workloads/{id}".
//
// Patterns are literal segments and parameters: "/api/v1/namespaces/{ns}/workloads". A
// parameter matches one whole non-empty segment; {ns} only a namespace name ([a-z0-9-]+),
// any other name any characters but '/'. Handlers read them with RequestContext::PathParam.
//
// Threading: routes are added before the server starts; Dispatch is const and runs on many
// workers at once (Services' members are thread-safe).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "api/audit.h"
#include "api/auth.h"
#include "api/auth_limit.h"
#include "api/http_server.h"
#include "api/metrics.h"
#include "api/service.h"
#include "base/status.h"

namespace rsl::api {

//! What the handlers share. Nothing is owned; everything outlives the router.
struct Services {
  Service* service = nullptr;
  TokenStore* tokens = nullptr;
  AuditLog* audit = nullptr;
  Metrics* metrics = nullptr;
  //! The HTTP server's live counts, for GET /metrics (none: zeros).
  std::function<HttpServerStats()> http_stats;
  //! Failed authentications per address (none: no limit).
  FailedAuthLimiter* auth_limiter = nullptr;
};

//! What a handler answers: JSON (default) or text.
struct Reply {
  int status = 200;
  Json body;
  std::string text;
  std::string content_type;  //!< "" = application/json with `body`
};

//! One request as a handler sees it.
struct RequestContext {
  RequestContext(const HttpRequest& request, HttpResponse& response)
      : req(request), res(response) {}

  const HttpRequest& req;
  HttpResponse& res;  //!< for headers and streams; the router writes status and body
  Principal who;      //!< the caller (empty for public routes)
  std::map<std::string, std::string> path_params;  //!< "id" -> "wl-..."
  Errors errors;  //!< a handler failing with several errors (validation) puts all here

  //! The first query value of `key`, "" when absent.
  std::string Query(const std::string& key) const { return req.Param(key); }
  //! The path parameter `name` of the route's pattern, "" when absent.
  std::string PathParam(const std::string& name) const;
};

using Handler = std::function<Result<Reply>(const Services&, RequestContext&)>;

//! Who may call a route.
struct Access {
  enum class Level { kPublic, kToken, kAdmin };
  Level level = Level::kToken;
  std::string action;  //!< kAdmin: what others are refused, e.g. "list nodes"

  static Access Public() { return {Level::kPublic, ""}; }
  static Access Token() { return {Level::kToken, ""}; }
  static Access Admin(std::string action) { return {Level::kAdmin, std::move(action)}; }
};

struct Route {
  std::string method;   //!< "GET" or "POST"
  std::string pattern;  //!< as written; also the metrics label
  Access access;
  Handler handler;
};

class Router {
 public:
  explicit Router(Services services) : services_(std::move(services)) {}

  //! Adds a route; the first added match wins. REQUIRES: a well-formed pattern (starts with
  //! '/', parameters are whole segments "{name}").
  void Get(const std::string& pattern, Access access, Handler handler);
  void Post(const std::string& pattern, Access access, Handler handler);
  void Add(Route route);

  //! Answers one request (see the top of this file).
  void Dispatch(const HttpRequest& req, HttpResponse& res) const;

  //! The route `method path` reaches and its path parameters; nullptr when none.
  const Route* Find(const std::string& method, const std::string& path,
                    std::map<std::string, std::string>* params) const;

  const Services& services() const { return services_; }

 private:
  struct Segment {
    std::string text;  // literal text, or the parameter's name
    bool param = false;
  };
  struct Entry {
    Route route;
    std::vector<Segment> segments;  // of route.pattern, split at '/'
  };

  Services services_;
  std::vector<Entry> entries_;
};

//! 403 for `who` doing `verb` in namespace `ns` ("*" for cluster-wide), with a hint that
//! tells a viewer from a caller outside the namespace.
Error Forbidden(const Principal& who, const std::string& verb, const std::string& ns);

//! A JSON reply.
Result<Reply> JsonReply(Json body, int status = 200);

}  // namespace rsl::api
