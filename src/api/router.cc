#include "api/router.h"

#include <cassert>
#include <chrono>

#include "api/errors.h"
#include "base/codes.h"
#include "base/env.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

// The path's segments after the leading '/', empty ones kept ("/a//b/" -> a, "", b, "").
std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 1;
  while (true) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) {
      parts.push_back(path.substr(start));
      return parts;
    }
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
}

// Whether `value` may stand for parameter `name`: a namespace is [a-z0-9-]+, anything else
// a non-empty segment.
bool ParamFits(const std::string& name, const std::string& value) {
  if (value.empty()) return false;
  if (name != "ns") return true;
  for (char c : value) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

Error Unauthenticated(const AuthOutcome& outcome) {
  std::string why = "unknown token";
  switch (outcome.failure) {
    case AuthFailure::kNoToken:
      why = "no bearer token";
      break;
    case AuthFailure::kExpired:
      why = "token " + outcome.token_id + " expired at " +
            FormatUtc(outcome.when_ms / 1000, "%Y-%m-%dT%H:%M:%SZ");
      break;
    case AuthFailure::kRevoked:
      why = "token " + outcome.token_id + " was revoked at " +
            FormatUtc(outcome.when_ms / 1000, "%Y-%m-%dT%H:%M:%SZ");
      break;
    case AuthFailure::kCertificate:
      return Error(codes::kUnauthenticated, outcome.detail)
          .Hint(
              "the client certificate's subject needs CN=<subject> and O=<namespace>:<role> "
              "(docs/security.md), or pass a bearer token");
    case AuthFailure::kUnknown:
    case AuthFailure::kNone:
      break;
  }
  return Error(codes::kUnauthenticated, why)
      .Hint(
          "pass --token or set SEEDCTL_TOKEN; create one with `seedctl token create --state-dir "
          "DIR --namespace NS --role viewer|editor|admin`");
}

const char* FailureName(AuthFailure f) {
  switch (f) {
    case AuthFailure::kNoToken:
      return "no token";
    case AuthFailure::kExpired:
      return "expired token";
    case AuthFailure::kRevoked:
      return "revoked token";
    case AuthFailure::kCertificate:
      return "client certificate";
    default:
      return "unknown token";
  }
}

// A refused token is audited (who tried what, from where; never the token) and counted
// against its address. Returns the 401.
Error RefuseToken(const Services& services, const HttpRequest& req, const AuthOutcome& outcome) {
  const std::string from = req.remote_addr.empty() ? "an unknown address" : req.remote_addr;
  bool now_limited = services.auth_limiter &&
                     services.auth_limiter->Failed(req.remote_addr, Env::Default()->MonotonicMs());
  if (services.audit) {
    AuditEntry e;
    e.subject = "anonymous";
    e.verb = "authenticate";
    e.resource = outcome.failure == AuthFailure::kCertificate ? "certificates" : "tokens";
    e.object_id = outcome.token_id;
    e.result = codes::kUnauthenticated;
    e.message = std::string(FailureName(outcome.failure)) + " from " + from + " for " + req.method +
                " " + req.path;
    if (!outcome.detail.empty()) e.message += ": " + outcome.detail;
    if (now_limited) {
      e.message += "; " + std::to_string(kMaxFailedAuths) + " failures: address limited for " +
                   std::to_string(kFailedAuthWindowMs / 1000) + "s";
    }
    (void)services.audit->Append(e);  // the 401 stands even if the audit write fails
  }
  return Unauthenticated(outcome);
}

// Who is calling: the bearer token when one is sent, else the verified client certificate of
// a mutual-TLS connection, else nobody (kNoToken).
AuthOutcome Authenticate(const Services& services, const HttpRequest& req) {
  std::string auth = req.Header("Authorization");
  std::string token;
  if (StartsWith(auth, "Bearer ")) token = std::string(Trim(auth.substr(7)));
  if (!token.empty() || !req.client_cert) return services.tokens->Check(token);
  const ClientCertificate& cert = *req.client_cert;
  AuthOutcome out;
  auto who = PrincipalFromCertificate(cert.common_name, cert.organizations, cert.fingerprint);
  if (who.ok()) {
    out.who = *who;
    out.token_id = who->token_id;
  } else {
    out.failure = AuthFailure::kCertificate;
    out.token_id = CertificateId(cert.fingerprint);
    out.detail = who.error().message;
  }
  return out;
}

}  // namespace

std::string RequestContext::PathParam(const std::string& name) const {
  auto it = path_params.find(name);
  return it == path_params.end() ? "" : it->second;
}

Error Forbidden(const Principal& who, const std::string& verb, const std::string& ns) {
  return Error(codes::kForbidden, "subject " + Quote(who.subject) + " (role " + RoleName(who.role) +
                                      ") cannot " + verb + " in namespace " + Quote(ns))
      .Value(ns)
      .Hint(who.role == Role::kViewer && who.InNamespace(ns)
                ? "viewers read only; ask for an editor token"
                : "ask an admin for a token with a role in this namespace");
}

Result<Reply> JsonReply(Json body, int status) {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

void Router::Get(const std::string& pattern, Access access, Handler handler) {
  Add({"GET", pattern, std::move(access), std::move(handler)});
}

void Router::Post(const std::string& pattern, Access access, Handler handler) {
  Add({"POST", pattern, std::move(access), std::move(handler)});
}

void Router::Add(Route route) {
  assert(!route.pattern.empty() && route.pattern[0] == '/');
  Entry entry;
  for (std::string& part : SplitPath(route.pattern)) {
    bool param = part.size() > 2 && part.front() == '{' && part.back() == '}';
    assert(param || part.find_first_of("{}") == std::string::npos);
    entry.segments.push_back({param ? part.substr(1, part.size() - 2) : std::move(part), param});
  }
  entry.route = std::move(route);
  entries_.push_back(std::move(entry));
}

const Route* Router::Find(const std::string& method, const std::string& path,
                          std::map<std::string, std::string>* params) const {
  if (path.empty() || path[0] != '/') return nullptr;
  std::string want = method == "HEAD" ? "GET" : method;
  std::vector<std::string> parts = SplitPath(path);
  for (const Entry& e : entries_) {
    if (e.route.method != want || e.segments.size() != parts.size()) continue;
    std::map<std::string, std::string> found;
    bool match = true;
    for (size_t i = 0; match && i < parts.size(); ++i) {
      const Segment& s = e.segments[i];
      if (s.param) {
        match = ParamFits(s.text, parts[i]);
        if (match) found[s.text] = parts[i];
      } else {
        match = s.text == parts[i];
      }
    }
    if (!match) continue;
    if (params) *params = std::move(found);
    return &e.route;
  }
  return nullptr;
}

void Router::Dispatch(const HttpRequest& req, HttpResponse& res) const {
  std::map<std::string, std::string> params;
  const Route* route = Find(req.method, req.path, &params);
  if (!route) {
    res.status = 404;
    res.SetContent(
        JsonText(ErrorToJson(Error(codes::kNotFound, "no route " + req.method + " " + req.path)
                                 .Hint("see docs/api.md for the routes"))),
        "application/json");
    return;
  }

  auto start = std::chrono::steady_clock::now();
  RequestContext ctx(req, res);
  ctx.path_params = std::move(params);
  Result<Reply> reply = Reply{};
  if (route->access.level != Access::Level::kPublic) {
    std::optional<int64_t> wait;
    if (services_.auth_limiter) {
      wait = services_.auth_limiter->RetryAfter(req.remote_addr, Env::Default()->MonotonicMs());
    }
    AuthOutcome outcome;
    if (!wait) outcome = Authenticate(services_, req);
    const std::optional<Principal>& who = outcome.who;
    if (wait) {
      res.SetHeader("Retry-After", std::to_string(*wait));
      reply =
          Error(codes::kTooManyRequests, "too many failed authentications from " + req.remote_addr)
              .Hint("retry after " + std::to_string(*wait) + "s with a valid token");
    } else if (!who) {
      res.SetHeader("WWW-Authenticate", "Bearer realm=\"rsl\"");
      reply = RefuseToken(services_, req, outcome);
    } else if (route->access.level == Access::Level::kAdmin && !who->IsClusterAdmin()) {
      reply = Forbidden(*who, route->access.action, "*");
    } else {
      ctx.who = *who;
    }
  }
  if (reply.ok()) {
    try {
      reply = route->handler(services_, ctx);
    } catch (const std::exception& e) {
      reply = Error(codes::kInternal, std::string("unexpected failure: ") + e.what());
    }
  }
  if (!reply.ok()) {
    const Error& e = reply.error();
    res.status = HttpStatusFor(e.code);
    res.stream.reset();
    res.SetContent(JsonText(ErrorsToJson(ctx.errors.empty() ? Errors{e} : ctx.errors)),
                   "application/json");
  } else if (res.stream) {
    // the handler set a stream: it is the answer
  } else {
    res.status = reply->status;
    if (!reply->content_type.empty()) {
      res.SetContent(reply->text, reply->content_type);
    } else {
      res.SetContent(JsonText(reply->body), "application/json");
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  services_.metrics->Add("rsl_api_requests_total",
                         {{"route", route->pattern}, {"code", std::to_string(res.status)}});
  services_.metrics->Observe("rsl_api_request_duration_seconds", {{"route", route->pattern}}, secs);
}

}  // namespace rsl::api
