#include "fake_apiserver.h"

#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <regex>

namespace rsl::k8stest {

namespace {

using json = nlohmann::json;

bool Openssl(const std::string& dir, const std::string& args, std::string* err) {
  std::string cmd = "cd '" + dir + "' && openssl " + args + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    *err = "failed: " + cmd;
    return false;
  }
  return true;
}

std::string Now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string KindOf(const std::string& resource) {
  if (resource == "pods") return "Pod";
  if (resource == "secrets") return "Secret";
  if (resource == "configmaps") return "ConfigMap";
  if (resource == "services") return "Service";
  if (resource == "deployments") return "Deployment";
  if (resource == "horizontalpodautoscalers") return "HorizontalPodAutoscaler";
  return "Node";
}

std::string ApiVersionOf(const std::string& resource) {
  if (resource == "deployments") return "apps/v1";
  if (resource == "horizontalpodautoscalers") return "autoscaling/v2";
  return "v1";
}

json StatusObject(int code, const std::string& reason, const std::string& message,
                  const std::string& name = "", const std::string& kind = "") {
  json s = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Failure"}, {"message", message}, {"reason", reason},
            {"code", code}};
  if (!name.empty()) s["details"] = {{"name", name}, {"kind", kind}};
  return s;
}

// "a=b,c" against labels.
bool Matches(const json& object, const std::string& selector) {
  if (selector.empty()) return true;
  const json& labels = object["metadata"].value("labels", json::object());
  size_t start = 0;
  while (start <= selector.size()) {
    size_t comma = selector.find(',', start);
    std::string term =
        selector.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = term.find('=');
    std::string key = term.substr(0, eq);
    if (!labels.contains(key)) return false;
    if (eq != std::string::npos) {
      std::string want = term.substr(term[eq + 1] == '=' ? eq + 2 : eq + 1);
      if (labels[key] != want) return false;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

struct Event {
  int64_t rv;
  std::string type;
  std::string resource;
  std::string ns;
  json object;
};

}  // namespace

bool MakePki(const std::string& dir, std::string* err) {
  {
    std::ofstream ext(dir + "/server.ext");
    ext << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  }
  return Openssl(dir,
                 "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "
                 "/CN=k8s-test-ca",
                 err) &&
         Openssl(dir,
                 "req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt "
                 "-days 2 -subj /CN=other-ca",
                 err) &&
         Openssl(dir,
                 "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "
                 "/CN=kube-apiserver",
                 err) &&
         Openssl(dir,
                 "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out "
                 "server.crt -days 2 -extfile server.ext",
                 err) &&
         Openssl(dir,
                 "req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "
                 "/CN=rsl-test/O=system:masters",
                 err) &&
         Openssl(dir,
                 "x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out "
                 "client.crt -days 2",
                 err) &&
         Openssl(dir,
                 "req -newkey rsa:2048 -nodes -keyout stranger.key -out stranger.csr -subj "
                 "/CN=stranger",
                 err) &&
         Openssl(dir,
                 "x509 -req -in stranger.csr -CA other-ca.crt -CAkey other-ca.key "
                 "-CAcreateserial -out stranger.crt -days 2",
                 err);
}

struct FakeApiServer::Impl {
  Options options;
  std::unique_ptr<httplib::SSLServer> server;
  std::thread thread;
  int port = 0;

  std::mutex mu;
  std::condition_variable changed;
  bool stopping = false;
  int64_t rv = 100;
  int64_t compacted_rv = 0;  // watches from an RV below this get 410
  int64_t uid_counter = 0;
  std::map<std::string, json> objects;  // resource/ns/name -> object
  std::vector<Event> history;
  std::map<std::string, std::string> logs;  // ns/name -> text
  std::vector<Fault> faults;
  int cut_after = -1;
  std::string malformed;
  bool gone_as_event = false;
  std::vector<std::pair<std::string, std::string>> seen;  // method, path?query
  json last_delete = json::object();
  std::vector<std::string> auths;

  static std::string Key(const std::string& r, const std::string& ns, const std::string& n) {
    return r + "/" + ns + "/" + n;
  }

  // REQUIRES: mu held.
  json Store(const std::string& type, const std::string& resource, const std::string& ns,
             json object) {
    object["metadata"]["resourceVersion"] = std::to_string(++rv);
    const std::string name = object["metadata"]["name"];
    if (type == "DELETED") {
      objects.erase(Key(resource, ns, name));
    } else {
      objects[Key(resource, ns, name)] = object;
    }
    history.push_back({rv, type, resource, ns, object});
    changed.notify_all();
    return object;
  }

  // REQUIRES: mu held.
  json Create(const std::string& resource, const std::string& ns, json object) {
    object["kind"] = KindOf(resource);
    object["apiVersion"] = ApiVersionOf(resource);
    if (!ns.empty()) object["metadata"]["namespace"] = ns;
    char uid[40];
    std::snprintf(uid, sizeof uid, "3f0c1a2b-0000-4000-8000-%012lld",
                  static_cast<long long>(++uid_counter));
    object["metadata"]["uid"] = uid;
    object["metadata"]["creationTimestamp"] = Now();
    if (resource == "pods" && !object.contains("status")) {
      object["status"] = {{"phase", "Pending"}, {"qosClass", "Guaranteed"}};
    }
    if (resource == "services" && object.contains("spec") &&
        !object["spec"].contains("clusterIP")) {
      object["spec"]["clusterIP"] = "10.96.0." + std::to_string(10 + uid_counter % 200);
    }
    if (resource == "deployments") {
      // No controller runs the Deployment: its Pods are not made; the test sets the status
      // (SetDeploymentReplicas) as the ReplicaSet controller and the kubelets would.
      object["metadata"]["generation"] = 1;
      object["status"] = {{"observedGeneration", 1},
                          {"replicas", 0},
                          {"readyReplicas", 0},
                          {"updatedReplicas", 0},
                          {"availableReplicas", 0}};
    }
    return Store("ADDED", resource, ns, std::move(object));
  }

  void Reply(httplib::Response& res, int code, const json& body) {
    res.status = code;
    res.set_content(body.dump(), "application/json");
  }

  // A fault for this request, if one is armed (consumes one of its times).
  bool TakeFault(const httplib::Request& req, httplib::Response& res) {
    std::string target = req.path + (req.has_param("watch") ? "?watch" : "");
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back({req.method, target});
    for (auto it = faults.begin(); it != faults.end(); ++it) {
      if ((!it->method.empty() && it->method != req.method) ||
          target.find(it->path_contains) == std::string::npos) {
        continue;
      }
      Reply(res, it->status, StatusObject(it->status, it->reason, "injected " + it->reason));
      if (!it->retry_after.empty()) res.set_header("Retry-After", it->retry_after);
      if (--it->times <= 0) faults.erase(it);
      return true;
    }
    return false;
  }

  bool Authorized(const httplib::Request& req, httplib::Response& res) {
    std::string auth = req.get_header_value("Authorization");
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!auth.empty()) auths.push_back(auth);
    }
    if (options.token.empty() || auth == "Bearer " + options.token) return true;
    Reply(res, 401, StatusObject(401, "Unauthorized", "Unauthorized"));
    return false;
  }

  void List(const httplib::Request& req, httplib::Response& res, const std::string& resource,
            const std::string& ns) {
    std::string selector = req.get_param_value("labelSelector");
    json list = {{"kind", KindOf(resource) + "List"}, {"apiVersion", "v1"}};
    json items = json::array();
    std::lock_guard<std::mutex> lock(mu);
    std::string prefix = Key(resource, ns, "");
    for (const auto& [key, obj] : objects) {
      if (key.rfind(prefix, 0) == 0 && Matches(obj, selector)) items.push_back(obj);
    }
    list["metadata"] = {{"resourceVersion", std::to_string(rv)}};
    list["items"] = items;
    Reply(res, 200, list);
  }

  void Watch(const httplib::Request& req, httplib::Response& res, const std::string& resource,
             const std::string& ns) {
    std::string selector = req.get_param_value("labelSelector");
    int64_t from = std::atoll(req.get_param_value("resourceVersion").c_str());
    int timeout_s = req.has_param("timeoutSeconds")
                        ? std::atoi(req.get_param_value("timeoutSeconds").c_str())
                        : 1800;
    int cut = -1;
    std::string bad;
    bool gone_event = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (from < compacted_rv) {
        std::string msg = "too old resource version: " + std::to_string(from) + " (" +
                          std::to_string(compacted_rv) + ")";
        if (!gone_as_event) {
          Reply(res, 410, StatusObject(410, "Expired", msg));
          return;
        }
        gone_event = true;
      }
      cut = cut_after;
      cut_after = -1;
      bad = malformed;
      malformed.clear();
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    auto cursor = std::make_shared<int64_t>(from);
    auto sent = std::make_shared<int>(0);
    res.set_chunked_content_provider(
        "application/json", [this, resource, ns, selector, deadline, cursor, sent, cut, bad,
                             gone_event](size_t, httplib::DataSink& sink) {
          if (gone_event) {
            json e = {{"type", "ERROR"},
                      {"object", StatusObject(410, "Expired", "too old resource version")}};
            std::string line = e.dump() + "\n";
            sink.write(line.data(), line.size());
            sink.done();
            return true;
          }
          if (!bad.empty()) {
            std::string line = bad + "\n";
            sink.write(line.data(), line.size());
            return false;  // and the stream ends abruptly
          }
          std::unique_lock<std::mutex> lock(mu);
          std::vector<std::string> lines;
          for (const auto& ev : history) {
            if (ev.rv <= *cursor) continue;
            *cursor = ev.rv;
            if (ev.resource != resource || ev.ns != ns || !Matches(ev.object, selector)) continue;
            lines.push_back(json({{"type", ev.type}, {"object", ev.object}}).dump() + "\n");
          }
          if (lines.empty()) {
            if (stopping || std::chrono::steady_clock::now() >= deadline) {
              json bm = {{"type", "BOOKMARK"},
                         {"object",
                          {{"kind", KindOf(resource)},
                           {"apiVersion", "v1"},
                           {"metadata", {{"resourceVersion", std::to_string(*cursor)}}}}}};
              lock.unlock();
              std::string line = bm.dump() + "\n";
              sink.write(line.data(), line.size());
              sink.done();
              return true;
            }
            changed.wait_for(lock, std::chrono::milliseconds(50));
            return true;
          }
          lock.unlock();
          for (const auto& line : lines) {
            if (cut >= 0 && *sent >= cut) {
              // Cut mid-line: half of the next event, then the connection closes.
              sink.write(line.data(), line.size() / 2);
              return false;
            }
            if (!sink.write(line.data(), line.size())) return false;
            ++*sent;
          }
          return true;
        });
  }

  void PodLog(const httplib::Request& req, httplib::Response& res, const std::string& ns,
              const std::string& name) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!objects.count(Key("pods", ns, name))) {
        Reply(res, 404,
              StatusObject(404, "NotFound", "pods \"" + name + "\" not found", name, "pods"));
        return;
      }
    }
    bool follow = req.get_param_value("follow") == "true";
    auto offset = std::make_shared<size_t>(0);
    std::string key = ns + "/" + name;
    std::string pod_key = Key("pods", ns, name);
    res.set_chunked_content_provider(
        "text/plain", [this, follow, offset, key, pod_key](size_t, httplib::DataSink& sink) {
          std::unique_lock<std::mutex> lock(mu);
          const std::string& text = logs[key];
          if (*offset < text.size()) {
            std::string part = text.substr(*offset);
            *offset = text.size();
            lock.unlock();
            return sink.write(part.data(), part.size());
          }
          auto it = objects.find(pod_key);
          std::string phase =
              it == objects.end() ? "" : it->second["status"].value("phase", std::string());
          if (!follow || stopping || phase == "Succeeded" || phase == "Failed" || phase.empty()) {
            sink.done();
            return true;
          }
          changed.wait_for(lock, std::chrono::milliseconds(50));
          return true;
        });
  }

  void Route() {
    auto& s = *server;
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!Authorized(req, res) || TakeFault(req, res)) {
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    const std::string coll =
        R"(/(?:api/v1|apis/apps/v1|apis/autoscaling/v2)/namespaces/([^/]+)/)"
        R"((pods|secrets|configmaps|services|deployments|horizontalpodautoscalers))";
    const std::string item = coll + R"(/([^/]+))";
    auto list_or_watch = [this](const httplib::Request& req, httplib::Response& res,
                                const std::string& resource, const std::string& ns) {
      if (req.get_param_value("watch") == "1" || req.get_param_value("watch") == "true") {
        Watch(req, res, resource, ns);
      } else {
        List(req, res, resource, ns);
      }
    };
    s.Get(coll, [list_or_watch](const httplib::Request& req, httplib::Response& res) {
      list_or_watch(req, res, req.matches[2], req.matches[1]);
    });
    s.Get("/api/v1/nodes", [list_or_watch](const httplib::Request& req, httplib::Response& res) {
      list_or_watch(req, res, "nodes", "");
    });
    s.Post(coll, [this](const httplib::Request& req, httplib::Response& res) {
      std::string resource = req.matches[2], ns = req.matches[1];
      json obj = json::parse(req.body, nullptr, false);
      if (!obj.is_object()) {
        Reply(res, 400, StatusObject(400, "BadRequest", "the body is not a JSON object"));
        return;
      }
      std::string name = obj["metadata"].is_object() ? obj["metadata"].value("name", "") : "";
      if (name.empty()) {
        Reply(res, 422,
              StatusObject(422, "Invalid",
                           KindOf(resource) +
                               " \"\" is invalid: metadata.name: Required value: name or "
                               "generateName is required",
                           "", resource));
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      if (objects.count(Key(resource, ns, name))) {
        Reply(res, 409,
              StatusObject(409, "AlreadyExists", resource + " \"" + name + "\" already exists",
                           name, resource));
        return;
      }
      Reply(res, 201, Create(resource, ns, std::move(obj)));
    });
    auto get_item = [this](const httplib::Request& req, httplib::Response& res,
                           const std::string& resource, const std::string& ns,
                           const std::string& name) {
      std::lock_guard<std::mutex> lock(mu);
      auto it = objects.find(Key(resource, ns, name));
      if (it == objects.end()) {
        Reply(res, 404,
              StatusObject(404, "NotFound", resource + " \"" + name + "\" not found", name,
                           resource));
        return;
      }
      (void)req;
      Reply(res, 200, it->second);
    };
    s.Get(item, [get_item](const httplib::Request& req, httplib::Response& res) {
      get_item(req, res, req.matches[2], req.matches[1], req.matches[3]);
    });
    s.Get(R"(/api/v1/nodes/([^/]+))",
          [get_item](const httplib::Request& req, httplib::Response& res) {
            get_item(req, res, "nodes", "", req.matches[1]);
          });
    s.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/log)",
          [this](const httplib::Request& req, httplib::Response& res) {
            PodLog(req, res, req.matches[1], req.matches[2]);
          });
    s.Delete(item, [this](const httplib::Request& req, httplib::Response& res) {
      std::string resource = req.matches[2], ns = req.matches[1], name = req.matches[3];
      std::lock_guard<std::mutex> lock(mu);
      last_delete = json::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
      auto it = objects.find(Key(resource, ns, name));
      if (it == objects.end()) {
        Reply(res, 404,
              StatusObject(404, "NotFound", resource + " \"" + name + "\" not found", name,
                           resource));
        return;
      }
      Reply(res, 200, Store("DELETED", resource, ns, it->second));
    });
    s.Patch(item, [this](const httplib::Request& req, httplib::Response& res) {
      std::string resource = req.matches[2], ns = req.matches[1], name = req.matches[3];
      if (req.get_header_value("Content-Type") != "application/merge-patch+json") {
        Reply(res, 415,
              StatusObject(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format"));
        return;
      }
      json patch = json::parse(req.body, nullptr, false);
      if (!patch.is_object()) {
        Reply(res, 400, StatusObject(400, "BadRequest", "the patch is not a JSON object"));
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      auto it = objects.find(Key(resource, ns, name));
      if (it == objects.end()) {
        Reply(res, 404,
              StatusObject(404, "NotFound", resource + " \"" + name + "\" not found", name,
                           resource));
        return;
      }
      if (patch.contains("metadata") && patch["metadata"].contains("resourceVersion") &&
          patch["metadata"]["resourceVersion"] != it->second["metadata"]["resourceVersion"]) {
        Reply(res, 409,
              StatusObject(409, "Conflict",
                           "Operation cannot be fulfilled on " + resource + " \"" + name +
                               "\": the object has been modified; please apply your changes "
                               "to the latest version and try again",
                           name, resource));
        return;
      }
      json obj = it->second;
      obj.merge_patch(patch);
      if (resource == "deployments" && patch.contains("spec")) {
        obj["metadata"]["generation"] = obj["metadata"].value("generation", 1) + 1;
      }
      Reply(res, 200, Store("MODIFIED", resource, ns, std::move(obj)));
    });
  }
};

FakeApiServer::FakeApiServer(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

FakeApiServer::~FakeApiServer() {
  if (impl_->server) {
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      impl_->stopping = true;
      impl_->changed.notify_all();
    }
    impl_->server->stop();
    if (impl_->thread.joinable()) impl_->thread.join();
  }
}

bool FakeApiServer::Start() {
  const std::string d = impl_->options.pki_dir;
  const std::string ca = d + "/ca.crt";
  impl_->server = std::make_unique<httplib::SSLServer>(
      (d + "/server.crt").c_str(), (d + "/server.key").c_str(),
      impl_->options.require_client_cert ? ca.c_str() : nullptr);
  if (!impl_->server->is_valid()) return false;
  impl_->Route();
  impl_->port = impl_->server->bind_to_any_port("127.0.0.1");
  if (impl_->port <= 0) return false;
  impl_->thread = std::thread([this] { impl_->server->listen_after_bind(); });
  for (int i = 0; i < 200 && !impl_->server->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return impl_->server->is_running();
}

std::string FakeApiServer::url() const {
  return "https://127.0.0.1:" + std::to_string(impl_->port);
}

json FakeApiServer::Add(const std::string& resource, const std::string& ns, json object) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Create(resource, ns, std::move(object));
}

json FakeApiServer::Get(const std::string& resource, const std::string& ns,
                        const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->objects.find(Impl::Key(resource, ns, name));
  return it == impl_->objects.end() ? json() : it->second;
}

bool FakeApiServer::Has(const std::string& resource, const std::string& ns,
                        const std::string& name) {
  return !Get(resource, ns, name).is_null();
}

std::vector<json> FakeApiServer::List(const std::string& resource, const std::string& ns) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<json> out;
  const std::string prefix = Impl::Key(resource, ns, "");
  for (const auto& [key, obj] : impl_->objects) {
    if (key.compare(0, prefix.size(), prefix) == 0) out.push_back(obj);
  }
  return out;
}

void FakeApiServer::SetPodPhase(const std::string& ns, const std::string& name, PodPhase phase,
                                const std::string& node, int exit_code) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->objects.find(Impl::Key("pods", ns, name));
  if (it == impl_->objects.end()) return;
  json pod = it->second;
  std::string container = "main";
  std::string image = "registry.example/team/train:v1";
  if (pod.contains("spec") && pod["spec"].contains("containers") &&
      !pod["spec"]["containers"].empty()) {
    container = pod["spec"]["containers"][0].value("name", container);
    image = pod["spec"]["containers"][0].value("image", image);
  }
  const std::string t0 = Now();
  auto cs = [&](json state, bool ready, int restarts = 0) {
    return json::array({{{"name", container},
                         {"image", image},
                         {"imageID", ""},
                         {"ready", ready},
                         {"started", ready},
                         {"restartCount", restarts},
                         {"state", state},
                         {"lastState", json::object()}}});
  };
  auto terminated = [&](int code, const std::string& reason) {
    return json{{"terminated",
                 {{"exitCode", code},
                  {"reason", reason},
                  {"startedAt", t0},
                  {"finishedAt", t0},
                  {"containerID", "containerd://0123abcd"}}}};
  };
  json status = {{"qosClass", "Guaranteed"}, {"hostIP", "10.0.0.7"}, {"startTime", t0}};
  pod["spec"]["nodeName"] = node;
  switch (phase) {
    case PodPhase::kPending:
      status["phase"] = "Pending";
      status["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "True"}}});
      status["containerStatuses"] = cs({{"waiting", {{"reason", "ContainerCreating"}}}}, false);
      break;
    case PodPhase::kRunning:
      status["phase"] = "Running";
      status["podIP"] = "10.244.1.9";
      status["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
      status["containerStatuses"] = cs({{"running", {{"startedAt", t0}}}}, true);
      break;
    case PodPhase::kSucceeded:
      status["phase"] = "Succeeded";
      status["containerStatuses"] = cs(terminated(0, "Completed"), false);
      break;
    case PodPhase::kFailed:
      status["phase"] = "Failed";
      status["containerStatuses"] = cs(terminated(exit_code, "Error"), false);
      break;
    case PodPhase::kOomKilled:
      status["phase"] = "Failed";
      status["containerStatuses"] = cs(terminated(137, "OOMKilled"), false);
      break;
    case PodPhase::kEvicted:
      status["phase"] = "Failed";
      status["reason"] = "Evicted";
      status["message"] =
          "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91Mi. ";
      status["containerStatuses"] = cs(terminated(137, "ContainerStatusUnknown"), false);
      break;
    case PodPhase::kDisrupted:
      status["phase"] = "Failed";
      status["conditions"] = json::array(
          {{{"type", "DisruptionTarget"},
            {"status", "True"},
            {"reason", "PreemptionByScheduler"},
            {"message", "Kubernetes Scheduler: preempting to accommodate a higher priority pod"}}});
      status["containerStatuses"] = cs(terminated(143, "Error"), false);
      break;
    case PodPhase::kDeadlineExceeded:
      status["phase"] = "Failed";
      status["reason"] = "DeadlineExceeded";
      status["message"] = "Pod was active on the node longer than the specified deadline";
      break;
    case PodPhase::kImagePullBackOff:
      status["phase"] = "Pending";
      status["containerStatuses"] =
          cs({{"waiting",
               {{"reason", "ImagePullBackOff"},
                {"message", "Back-off pulling image \"" + image + "\""}}}},
             false);
      break;
  }
  pod["status"] = status;
  impl_->Store("MODIFIED", "pods", ns, std::move(pod));
}

void FakeApiServer::SetDeploymentReplicas(const std::string& ns, const std::string& name,
                                          int desired, int ready) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->objects.find(Impl::Key("deployments", ns, name));
  if (it == impl_->objects.end()) return;
  json d = it->second;
  d["spec"]["replicas"] = desired;
  d["status"] = {{"observedGeneration", d["metadata"].value("generation", 1)},
                 {"replicas", desired},
                 {"readyReplicas", ready},
                 {"updatedReplicas", desired},
                 {"availableReplicas", ready}};
  impl_->Store("MODIFIED", "deployments", ns, std::move(d));
}

void FakeApiServer::SetDeploymentStatus(const std::string& ns, const std::string& name,
                                        json status) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->objects.find(Impl::Key("deployments", ns, name));
  if (it == impl_->objects.end()) return;
  json d = it->second;
  status["observedGeneration"] = d["metadata"].value("generation", 1);
  d["status"] = std::move(status);
  impl_->Store("MODIFIED", "deployments", ns, std::move(d));
}

void FakeApiServer::DeleteObject(const std::string& resource, const std::string& ns,
                                 const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->objects.find(Impl::Key(resource, ns, name));
  if (it != impl_->objects.end()) impl_->Store("DELETED", resource, ns, it->second);
}

void FakeApiServer::AppendPodLog(const std::string& ns, const std::string& name,
                                 const std::string& text) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->logs[ns + "/" + name] += text;
  impl_->changed.notify_all();
}

void FakeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->compacted_rv = impl_->rv;
}

int64_t FakeApiServer::resource_version() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->rv;
}

void FakeApiServer::InjectFault(Fault fault) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->faults.push_back(std::move(fault));
}

void FakeApiServer::ClearFaults() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->faults.clear();
}

void FakeApiServer::CutNextWatchAfter(int events) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cut_after = events;
}

void FakeApiServer::SendMalformedInNextWatch(const std::string& line) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->malformed = line;
}

void FakeApiServer::set_gone_as_event(bool v) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->gone_as_event = v;
}

int FakeApiServer::requests(const std::string& method, const std::string& path_contains) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  int n = 0;
  for (const auto& [m, p] : impl_->seen) {
    if ((method.empty() || m == method) && p.find(path_contains) != std::string::npos) ++n;
  }
  return n;
}

json FakeApiServer::last_delete_options() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last_delete;
}

std::vector<std::string> FakeApiServer::authorizations() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->auths;
}

}  // namespace rsl::k8stest
