#include "api/server.h"

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <regex>

#include "api/errors.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

constexpr int64_t kMaxAuditLimit = 10000;
constexpr size_t kMaxAuditIdChars = 128;  // an id from a path is recorded, but not a huge one

const std::regex kIdPattern("wl-[0-9]{8}-[0-9a-f]{8}");

//! What a handler answers: JSON (default) or text.
struct Reply {
  int status = 200;
  Json body;
  std::string text;
  std::string content_type;  // "" = application/json
};

struct Ctx {
  const HttpRequest& req;
  HttpResponse& res;
  Principal who;
  Errors errors;  // when a handler fails with several errors (validation), all of them
  std::string Param(const std::string& key) const { return req.Param(key); }
  std::string Match(size_t i) const { return i < req.matches.size() ? req.matches[i] : ""; }
};

using Handler = std::function<Result<Reply>(Ctx&)>;

Error Forbidden(const Principal& who, const std::string& verb, const std::string& ns) {
  return Error(codes::kForbidden, "subject " + Quote(who.subject) + " (role " + RoleName(who.role) +
                                      ") cannot " + verb + " in namespace " + Quote(ns))
      .Value(ns)
      .Hint(who.role == Role::kViewer && who.InNamespace(ns)
                ? "viewers read only; ask for an editor token"
                : "ask an admin for a token with a role in this namespace");
}

Error NotFoundId(const std::string& id) {
  return Error(codes::kNotFound, "workload " + Quote(id) + " not found")
      .Value(id)
      .Hint("list workloads with `seedctl workload list`; ids look like wl-YYYYMMDD-<8 hex>");
}

// The namespace written in the YAML's metadata, if any ("" when absent or unreadable: the
// service's parser reports YAML errors with positions).
std::string YamlNamespace(const std::string& yaml) {
  try {
    YAML::Node root = YAML::Load(yaml);
    if (root.IsMap() && root["metadata"] && root["metadata"].IsMap() &&
        root["metadata"]["namespace"] && root["metadata"]["namespace"].IsScalar()) {
      return root["metadata"]["namespace"].as<std::string>();
    }
  } catch (const YAML::Exception&) {
  }
  return "";
}

Result<std::map<std::string, std::string>> ParseData(const Json& body) {
  std::map<std::string, std::string> data;
  if (!body.contains("data") || !body["data"].is_object()) {
    return Error(codes::kInvalidArgument, "body needs a `data` object of string values")
        .Path("data")
        .Hint("send {\"name\": \"...\", \"data\": {\"KEY\": \"VALUE\"}}");
  }
  for (const auto& [k, v] : body["data"].items()) {
    if (!v.is_string()) {
      return Error(codes::kInvalidArgument, "value of " + Quote(k) + " is not a string")
          .Path("data." + k);
    }
    data[k] = v.get<std::string>();
  }
  return data;
}

Status CheckName(const std::string& name, const std::string& what) {
  bool ok = !name.empty() && name.size() <= 253;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
  }
  if (!ok) {
    return Error(codes::kInvalidArgument, "invalid " + what + " name " + Quote(name))
        .Value(name)
        .Hint("a DNS-1123 subdomain: a-z, 0-9, '-', '.'");
  }
  return Status::Ok();
}

// GET .../logs as a stream: each step's log in order (with "==> step <==" headers when there
// are several), read piece by piece on the server's stream thread, so memory is bounded by a
// piece whatever the log's size. Without follow a step's log ends where it is now (a running
// step's partial last line is left out); with follow each step is read until it ends.
class LogStream : public StreamSource {
 public:
  LogStream(std::vector<std::unique_ptr<StepLog>> logs, bool headers, bool follow)
      : logs_(std::move(logs)), headers_(headers), follow_(follow) {}

  State Next(size_t max_bytes, std::string* out) override {
    while (index_ < logs_.size()) {
      StepLog& log = *logs_[index_];
      if (headers_ && !header_sent_) {
        *out += "==> " + log.step() + " <==\n";
        header_sent_ = true;
      }
      auto chunk = log.Next(static_cast<int64_t>(max_bytes));
      if (!chunk.ok()) {
        *out += "error: " + chunk.error().ToString() + "\n";
        return State::kDone;
      }
      if (!chunk->data.empty()) {
        step_bytes_ += chunk->data.size();
        last_byte_ = chunk->data.back();
        *out += chunk->data;
        if (!chunk->finished) return State::kMore;
      }
      if (!chunk->finished && follow_) return State::kWait;  // the step runs: poll again
      // The step's log ends here. Without follow, a header never ends up mid-line.
      if (!follow_ && headers_ && step_bytes_ > 0 && last_byte_ != '\n') *out += "\n";
      logs_[index_++].reset();  // closes its file
      header_sent_ = false;
      step_bytes_ = 0;
      if (out->size() >= max_bytes) return State::kMore;
    }
    return State::kDone;
  }

 private:
  std::vector<std::unique_ptr<StepLog>> logs_;
  bool headers_;
  bool follow_;
  size_t index_ = 0;
  bool header_sent_ = false;
  size_t step_bytes_ = 0;
  char last_byte_ = '\n';
};

}  // namespace

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

ApiServer::ApiServer(Service* service, TokenStore* tokens, AuditLog* audit, Metrics* metrics,
                     HttpServerOptions options)
    : service_(service),
      tokens_(tokens),
      audit_(audit),
      metrics_(metrics),
      http_(std::make_unique<HttpServer>(std::move(options))) {
  RegisterRoutes();
}

ApiServer::~ApiServer() { Stop(); }

Status ApiServer::Start(const std::string& host, int port) {
  RSL_RETURN_IF_ERROR(Listen(host, port));
  Serve();
  return Status::Ok();
}

Status ApiServer::Listen(const std::string& host, int port) { return http_->Listen(host, port); }

void ApiServer::Serve() { http_->Start(); }

void ApiServer::Stop() { http_->Stop(); }

void ApiServer::RegisterRoutes() {
  HttpServer& s = *http_;

  // Wraps a handler: authentication, JSON errors, audit-free metrics per route.
  auto wrap = [this](const std::string& route, bool need_auth, Handler h) {
    return [this, route, need_auth, h](const HttpRequest& req, HttpResponse& res) {
      auto start = std::chrono::steady_clock::now();
      Ctx ctx{req, res, Principal{}, {}};
      Result<Reply> reply = Reply{};
      Errors errors;
      if (need_auth) {
        std::string auth = req.Header("Authorization");
        std::string token;
        if (StartsWith(auth, "Bearer ")) token = std::string(Trim(auth.substr(7)));
        auto who = tokens_->Authenticate(token);
        if (!who) {
          res.SetHeader("WWW-Authenticate", "Bearer realm=\"rsl\"");
          reply = Error(codes::kUnauthenticated,
                        token.empty() ? "no bearer token" : "unknown or revoked token")
                      .Hint(
                          "pass --token or set SEEDCTL_TOKEN; create one with `seedctl token "
                          "create --state-dir DIR --namespace NS --role viewer|editor|admin`");
        } else {
          ctx.who = *who;
        }
      }
      if (reply.ok()) {
        try {
          reply = h(ctx);
        } catch (const std::exception& e) {
          reply = Error(codes::kInternal, std::string("unexpected failure: ") + e.what());
        }
      }
      if (!reply.ok()) {
        const Error& e = reply.error();
        res.status = HttpStatusFor(e.code);
        res.stream.reset();
        res.SetContent(ErrorsToJson(ctx.errors.empty() ? Errors{e} : ctx.errors).dump(),
                       "application/json");
      } else if (res.stream) {
        // a stream set its own response
      } else {
        res.status = reply->status;
        if (!reply->content_type.empty()) {
          res.SetContent(reply->text, reply->content_type);
        } else {
          res.SetContent(reply->body.dump(), "application/json");
        }
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      metrics_->Add("rsl_api_requests_total",
                    {{"route", route}, {"code", std::to_string(res.status)}});
      metrics_->Observe("rsl_api_request_duration_seconds", {{"route", route}}, secs);
    };
  };
  auto audit = [this](const Principal& who, const std::string& verb, const std::string& resource,
                      const std::string& ns, const std::string& id, const Status& result,
                      const std::string& message) {
    AuditEntry e;
    e.subject = who.subject;
    e.verb = verb;
    e.resource = resource;
    e.namespace_ = ns;
    e.object_id = id;
    e.result = result.ok() ? "OK" : result.code();
    e.message = message;
    (void)audit_->Append(std::move(e));  // a failing audit write must not hide the answer
  };
  // The namespace a request is about: ?namespace= or the token's default.
  auto request_ns = [](Ctx& c) {
    std::string ns = c.Param("namespace");
    return ns.empty() ? c.who.DefaultNamespace() : ns;
  };
  // Loads a workload by id and checks the caller may see it (404 otherwise).
  auto visible = [this](Ctx& c, const std::string& id) -> Result<Json> {
    if (!std::regex_match(id, kIdPattern)) return NotFoundId(id);
    auto w = service_->GetWorkload(id);
    if (!w.ok()) return w.error();
    std::string ns = (*w)["metadata"].value("namespace", std::string());
    if (!c.who.CanRead(ns)) return NotFoundId(id);
    return w;
  };
  auto ok_json = [](Json j, int status = 200) {
    Reply r;
    r.status = status;
    r.body = std::move(j);
    return Result<Reply>(std::move(r));
  };

  s.Get("/healthz", wrap("/healthz", false, [](Ctx&) -> Result<Reply> {
          Reply r;
          r.text = "ok\n";
          r.content_type = "text/plain";
          return r;
        }));
  s.Get("/version", wrap("/version", false, [ok_json](Ctx&) {
          return ok_json({{"controller", kControllerVersion}, {"apiVersion", kApiVersion}});
        }));
  s.Get("/metrics", wrap("/metrics", true, [this](Ctx& c) -> Result<Reply> {
          if (!c.who.IsClusterAdmin()) return Forbidden(c.who, "read metrics", "*");
          service_->CollectMetrics(metrics_);
          HttpServerStats stats = http_->stats();
          metrics_->Set("rsl_api_open_connections", {}, stats.connections);
          metrics_->Set("rsl_api_open_streams", {}, stats.streams);
          Reply r;
          r.text = metrics_->Render();
          r.content_type = "text/plain; version=0.0.4";
          return r;
        }));
  s.Get("/api/v1/whoami", wrap("/api/v1/whoami", true, [ok_json](Ctx& c) {
          return ok_json({{"subject", c.who.subject},
                          {"role", RoleName(c.who.role)},
                          {"namespaces", c.who.namespaces},
                          {"defaultNamespace", c.who.DefaultNamespace()}});
        }));

  // --- workloads ---------------------------------------------------------------------------
  auto submit = [this, audit, ok_json](Ctx& c, std::string ns) -> Result<Reply> {
    std::string yaml_ns = YamlNamespace(c.req.body);
    if (!ns.empty() && !yaml_ns.empty() && ns != yaml_ns) {
      return Error(codes::kInvalidArgument, "the namespace from the provided object " +
                                                Quote(yaml_ns) + " does not match the namespace " +
                                                Quote(ns))
          .Path("metadata.namespace")
          .Hint("drop -n/--namespace or make it match metadata.namespace");
    }
    if (ns.empty()) ns = yaml_ns.empty() ? c.who.DefaultNamespace() : yaml_ns;
    if (!c.who.CanWrite(ns)) {
      Error e = Forbidden(c.who, "submit workloads", ns);
      audit(c.who, "submit", "workloads", ns, "", e, "");
      return e;
    }
    Errors errors;
    std::string source = c.req.Header("X-Rsl-Source");
    if (source.empty() || source.size() > 255) source = "workload.yaml";
    std::string base_dir = c.req.Header("X-Rsl-Base-Dir");  // of relative data URIs
    auto w = service_->Submit(c.req.body, source, base_dir, ns, c.who.subject, &errors);
    if (!w.ok()) {
      if (errors.empty()) errors.push_back(w.error());
      audit(c.who, "submit", "workloads", ns, "", w.error(), "");
      c.errors = errors;
      return Error(errors.front());
    }
    std::string id = (*w)["metadata"].value("id", std::string());
    audit(c.who, "submit", "workloads", ns, id, Status::Ok(),
          (*w)["metadata"].value("name", std::string()));
    return ok_json(*w, 201);
  };
  s.Post("/api/v1/workloads", wrap("/api/v1/workloads", true,
                                   [submit](Ctx& c) { return submit(c, c.Param("namespace")); }));
  s.Post(R"(/api/v1/namespaces/([a-z0-9-]+)/workloads)",
         wrap("/api/v1/namespaces/{ns}/workloads", true,
              [submit](Ctx& c) { return submit(c, c.Match(1)); }));

  auto list = [this, ok_json](Ctx& c, std::vector<std::string> namespaces) -> Result<Reply> {
    for (const auto& ns : namespaces) {
      if (!c.who.CanRead(ns)) return Forbidden(c.who, "list workloads", ns);
    }
    auto l = service_->ListWorkloads(namespaces, c.Param("name"));
    if (!l.ok()) return l.error();
    return ok_json(*l);
  };
  s.Get("/api/v1/workloads", wrap("/api/v1/workloads", true, [list, request_ns](Ctx& c) {
          if (c.Param("allNamespaces") == "true") {
            std::vector<std::string> nss = c.who.namespaces;
            bool all =
                c.who.IsClusterAdmin() || std::find(nss.begin(), nss.end(), "*") != nss.end();
            return list(c, all ? std::vector<std::string>{} : nss);
          }
          return list(c, {request_ns(c)});
        }));
  s.Get(R"(/api/v1/namespaces/([a-z0-9-]+)/workloads)",
        wrap("/api/v1/namespaces/{ns}/workloads", true,
             [list](Ctx& c) { return list(c, {c.Match(1)}); }));

  const std::string id_re = R"(/api/v1/workloads/([^/]+))";
  s.Get(id_re, wrap("/api/v1/workloads/{id}", true, [visible, ok_json](Ctx& c) -> Result<Reply> {
          auto w = visible(c, c.Match(1));
          if (!w.ok()) return w.error();
          return ok_json(*w);
        }));
  auto by_id = [visible, ok_json](std::function<Result<Json>(const std::string&)> f) {
    return [visible, ok_json, f](Ctx& c) -> Result<Reply> {
      auto w = visible(c, c.Match(1));
      if (!w.ok()) return w.error();
      auto j = f(c.Match(1));
      if (!j.ok()) return j.error();
      return ok_json(*j);
    };
  };
  s.Get(id_re + "/describe",
        wrap("/api/v1/workloads/{id}/describe", true,
             by_id([this](const std::string& id) { return service_->Describe(id); })));
  s.Get(id_re + "/events",
        wrap("/api/v1/workloads/{id}/events", true,
             by_id([this](const std::string& id) { return service_->Events(id); })));
  s.Get(id_re + "/lineage", wrap("/api/v1/workloads/{id}/lineage", true,
                                 [this, visible, ok_json](Ctx& c) -> Result<Reply> {
                                   auto w = visible(c, c.Match(1));
                                   if (!w.ok()) return w.error();
                                   auto j = service_->Lineage(c.Match(1), c.Param("format"));
                                   if (!j.ok()) return j.error();
                                   return ok_json(*j);
                                 }));
  auto change = [this, visible, audit, ok_json](const std::string& verb) {
    return [this, visible, audit, ok_json, verb](Ctx& c) -> Result<Reply> {
      auto w = visible(c, c.Match(1));
      if (!w.ok()) {
        // A write answered 404 is a denied write too. It is recorded under the object's own
        // namespace when the object exists (its readers see who tried; the caller learns
        // nothing), else under none (admins see it).
        std::string owner;
        if (std::regex_match(c.Match(1), kIdPattern)) {
          auto o = service_->GetWorkload(c.Match(1));
          if (o.ok()) owner = (*o)["metadata"].value("namespace", std::string());
        }
        audit(c.who, verb, "workloads", owner, c.Match(1).substr(0, kMaxAuditIdChars), w.error(),
              owner.empty() ? "no such workload" : "outside the caller's namespaces");
        return w.error();
      }
      std::string ns = (*w)["metadata"].value("namespace", std::string());
      if (!c.who.CanWrite(ns)) {
        Error e = Forbidden(c.who, verb + " workloads", ns);
        audit(c.who, verb, "workloads", ns, c.Match(1), e, "");
        return e;
      }
      auto r = verb == "cancel" ? service_->Cancel(c.Match(1), c.who.subject)
                                : service_->Rollback(c.Match(1), c.who.subject);
      if (!r.ok()) {
        audit(c.who, verb, "workloads", ns, c.Match(1), r.error(), "");
        return r.error();
      }
      if (verb == "rollback") {
        std::string new_id = (*r)["metadata"].value("id", std::string());
        audit(c.who, verb, "workloads", ns, new_id, Status::Ok(), "rolled back from " + c.Match(1));
        return ok_json(*r, 201);
      }
      audit(c.who, verb, "workloads", ns, c.Match(1), Status::Ok(), "");
      return ok_json(*r);
    };
  };
  s.Post(id_re + "/cancel", wrap("/api/v1/workloads/{id}/cancel", true, change("cancel")));
  s.Post(id_re + "/rollback", wrap("/api/v1/workloads/{id}/rollback", true, change("rollback")));

  s.Get(id_re + "/logs",
        wrap("/api/v1/workloads/{id}/logs", true, [this, visible](Ctx& c) -> Result<Reply> {
          auto w = visible(c, c.Match(1));
          if (!w.ok()) return w.error();
          std::string id = c.Match(1);
          std::string step = c.Param("step");
          std::vector<std::string> steps;
          for (const auto& st : (*w)["status"].value("steps", Json::array())) {
            steps.push_back(st.value("name", std::string()));
          }
          if (!step.empty() && std::find(steps.begin(), steps.end(), step) == steps.end()) {
            std::string close = ClosestMatch(step, steps);
            return Error(codes::kNotFound, "workload " + id + " has no step " + Quote(step))
                .Value(step)
                .Hint(close.empty() ? "steps: " + Join(steps, ", ")
                                    : "did you mean '" + close + "'?");
          }
          bool follow = c.Param("follow") == "true";
          bool headers = step.empty() && steps.size() > 1;
          auto logs = service_->OpenLogs(id, step.empty() ? steps : std::vector<std::string>{step});
          if (!logs.ok()) return logs.error();
          c.res.SetStream("text/plain; charset=utf-8",
                          std::make_shared<LogStream>(std::move(*logs), headers, follow));
          return Reply{};
        }));

  // --- cluster-wide ------------------------------------------------------------------------
  s.Get("/api/v1/nodes", wrap("/api/v1/nodes", true, [this, ok_json](Ctx& c) -> Result<Reply> {
          if (!c.who.IsClusterAdmin()) return Forbidden(c.who, "list nodes", "*");
          auto j = service_->ListNodes(c.Param("capability"));
          if (!j.ok()) return j.error();
          return ok_json(*j);
        }));
  s.Get("/api/v1/cluster/status",
        wrap("/api/v1/cluster/status", true, [this, ok_json](Ctx& c) -> Result<Reply> {
          if (!c.who.IsClusterAdmin()) return Forbidden(c.who, "read cluster status", "*");
          auto j = service_->ClusterStatus();
          if (!j.ok()) return j.error();
          return ok_json(*j);
        }));
  s.Get("/api/v1/datasources",
        wrap("/api/v1/datasources", true, [this, ok_json](Ctx& c) -> Result<Reply> {
          if (!c.who.IsClusterAdmin()) return Forbidden(c.who, "list datasources", "*");
          auto j = service_->ListDatasources();
          if (!j.ok()) return j.error();
          return ok_json(*j);
        }));
  s.Get("/api/v1/environments",
        wrap("/api/v1/environments", true, [this, ok_json](Ctx&) -> Result<Reply> {
          auto j = service_->ListEnvironments();
          if (!j.ok()) return j.error();
          return ok_json(*j);
        }));
  s.Get(
      "/api/v1/audit", wrap("/api/v1/audit", true, [this, ok_json](Ctx& c) -> Result<Reply> {
        AuditQuery q;
        q.object_id = c.Param("id");
        std::string ns = c.Param("namespace");
        std::string limit = c.Param("limit");
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
        auto entries = audit_->List(q);
        if (!entries.ok()) return entries.error();
        Json items = Json::array();
        for (const auto& e : *entries) {
          items.push_back({{"seq", e.seq},
                           {"timeMs", e.time_ms},
                           {"subject", e.subject},
                           {"verb", e.verb},
                           {"resource", e.resource},
                           {"namespace", e.namespace_},
                           {"objectId", e.object_id},
                           {"result", e.result},
                           {"message", e.message}});
        }
        return ok_json({{"apiVersion", kApiVersion}, {"kind", "AuditEntryList"}, {"items", items}});
      }));

  // --- configmaps and secrets --------------------------------------------------------------
  auto put_kv = [this, audit, ok_json](const std::string& kind) {
    return [this, audit, ok_json, kind](Ctx& c) -> Result<Reply> {
      std::string ns = c.Match(1);
      std::string resource = kind == "Secret" ? "secrets" : "configmaps";
      if (!c.who.CanWrite(ns)) {
        Error e = Forbidden(c.who, "create " + resource, ns);
        audit(c.who, "create", resource, ns, "", e, "");
        return e;
      }
      auto body = Json::parse(c.req.body, nullptr, false);
      if (!body.is_object()) {
        return Error(codes::kInvalidArgument, "body is not a JSON object")
            .Hint("send {\"name\": \"...\", \"data\": {\"KEY\": \"VALUE\"}}");
      }
      std::string name = body.value("name", std::string());
      RSL_RETURN_IF_ERROR(CheckName(name, kind == "Secret" ? "secret" : "configmap"));
      auto data = ParseData(body);
      if (!data.ok()) return data.error();
      std::vector<std::string> warnings;  // e.g. a secret value too short to be masked
      Status st = kind == "Secret" ? service_->PutSecret(ns, name, *data, &warnings)
                                   : service_->PutConfigMap(ns, name, *data);
      std::vector<std::string> keys;
      for (const auto& [k, v] : *data) keys.push_back(k);
      audit(c.who, "create", resource, ns, name, st, "keys: " + Join(keys, ","));
      if (!st.ok()) return st.error();
      Json obj = {{"apiVersion", kApiVersion},
                  {"kind", kind},
                  {"metadata", {{"name", name}, {"namespace", ns}}}};
      if (kind == "Secret") {
        obj["keys"] = keys;  // write-only: never the values
        if (!warnings.empty()) obj["warnings"] = warnings;
      } else {
        obj["data"] = *data;
      }
      return ok_json(obj, 201);
    };
  };
  auto list_kv = [this, ok_json](const std::string& kind) {
    return [this, ok_json, kind](Ctx& c) -> Result<Reply> {
      std::string ns = c.Match(1);
      if (!c.who.CanRead(ns)) return Forbidden(c.who, "list", ns);
      auto j = kind == "Secret" ? service_->ListSecrets(ns) : service_->ListConfigMaps(ns);
      if (!j.ok()) return j.error();
      return ok_json(*j);
    };
  };
  const std::string ns_re = R"(/api/v1/namespaces/([a-z0-9-]+))";
  s.Post(ns_re + "/configmaps",
         wrap("/api/v1/namespaces/{ns}/configmaps", true, put_kv("ConfigMap")));
  s.Get(ns_re + "/configmaps",
        wrap("/api/v1/namespaces/{ns}/configmaps", true, list_kv("ConfigMap")));
  s.Post(ns_re + "/secrets", wrap("/api/v1/namespaces/{ns}/secrets", true, put_kv("Secret")));
  s.Get(ns_re + "/secrets", wrap("/api/v1/namespaces/{ns}/secrets", true, list_kv("Secret")));
  // Anything else: HttpServer's JSON 404 that names the path.
}

}  // namespace rsl::api
