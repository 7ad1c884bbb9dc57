// A replica set's frontend: the HAProxy it starts or joins (one per serving step, shared by the
// attempts of its versions), and the record that lets the next controller adopt it all.
#include "serve/replica_set.h"

#include <sys/stat.h>

#include <set>

#include "backend/slurm_job.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::serve {

Frontend::~Frontend() {
  if (left_running) return;  // HAProxy, its socket and directory stay for the next controller
  if (proxy) proxy->Stop();  // the frontend goes with it
  if (!socket_dir.empty()) (void)RemoveAll(socket_dir);
}

bool ReplicaSet::StartProxy() {
  int port = 0;
  if (serving_.port) {
    port = int(*serving_.port);
  } else {
    auto p = FreePort(opts_.replica_host);
    if (!p.ok()) {
      Fail(p.error().code, p.error().ToString());
      return false;
    }
    port = *p;
  }
  // A short private directory: a unix socket path holds at most 107 bytes.
  char tmpl[] = "/tmp/rsl-serve-XXXXXX";
  if (!mkdtemp(tmpl)) {
    Fail(codes::kIoError, "cannot make HAProxy's socket directory");
    return false;
  }
  ProxyConfig config;
  config.bind_host = opts_.bind_host;
  config.port = port;
  config.socket_path = std::string(tmpl) + "/admin.sock";
  auto proxy = HaproxyProcess::Start(opts_.haproxy, spec_.exit_file + ".proxy", config);
  if (!proxy.ok()) {
    (void)RemoveAll(tmpl);
    Fail(proxy.error().code, proxy.error().ToString());
    return false;
  }
  std::string endpoint = "http://" + opts_.replica_host + ":" + std::to_string(port);
  auto f = std::make_shared<Frontend>(std::move(*proxy), port, endpoint, tmpl);
  {
    std::lock_guard<std::mutex> lock(mu_);
    frontend_ = f;
    status_.endpoint = endpoint;
  }
  Emit(spec::EventReason::kRunning, "endpoint " + endpoint + " (HAProxy pid " +
                                        std::to_string(f->proxy->pid()) + "), starting " +
                                        std::to_string(desired_) + " replica(s)");
  return true;
}

bool ReplicaSet::JoinFrontend() {
  std::shared_ptr<Frontend> f = begin_.frontend;
  {
    std::lock_guard<std::mutex> lock(mu_);
    frontend_ = f;
    status_.endpoint = f->endpoint;
  }
  Emit(spec::EventReason::kRunning,
       "endpoint " + f->endpoint + " (HAProxy pid " + std::to_string(f->proxy->pid()) +
           ", serving the running version until this one is ready: rolling update), starting " +
           std::to_string(desired_) + " replica(s)");
  return true;
}

bool ReplicaSet::AdoptRecord() {
  const SetRecord& rec = *begin_.adopt;
  // Its servers are named as the record says, whatever ServerPrefix gives today.
  if (!rec.server_prefix.empty()) prefix_ = rec.server_prefix;
  std::shared_ptr<Frontend> f = begin_.frontend;  // a sibling set adopted it already
  std::string how = "HAProxy shared with the other version";
  if (!f) {
    auto p = HaproxyProcess::Adopt(pid_t(rec.proxy_pid), rec.proxy_dir, rec.socket);
    how = "HAProxy pid " + std::to_string(rec.proxy_pid) + " adopted";
    if (!p.ok()) {
      // It died with the controller (or since): a new one on the same port and socket.
      std::string socket_dir = rec.socket.substr(0, rec.socket.rfind('/'));
      (void)MakeDirs(socket_dir);
      ::chmod(socket_dir.c_str(), 0700);
      ProxyConfig config;
      config.bind_host = opts_.bind_host;
      config.port = rec.port;
      config.socket_path = rec.socket;
      p = HaproxyProcess::Start(opts_.haproxy, rec.proxy_dir, config);
      if (!p.ok()) {
        Fail(p.error().code,
             "cannot restart HAProxy for the adopted replicas: " + p.error().ToString());
        return false;
      }
      how = "HAProxy restarted on the same port (pid " + std::to_string((*p)->pid()) + ")";
    }
    f = std::make_shared<Frontend>(std::move(*p), rec.port, rec.endpoint,
                                   rec.socket.substr(0, rec.socket.rfind('/')));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    frontend_ = f;
    status_.endpoint = f->endpoint;
  }
  desired_ = rec.desired;
  next_index_ = rec.next_index;
  serving_ready_ = rec.serving_ready;
  std::set<std::string> servers;
  if (auto stat = proxy().ShowStat(); stat.ok()) {
    for (const auto& row : *stat) {
      if (row.proxy == kBackendName && StartsWith(row.server, prefix_)) servers.insert(row.server);
    }
  }
  int64_t now = NowMs();
  for (const auto& rep : rec.replicas) {
    auto r = std::make_unique<Replica>();
    r->index = rep.index;
    r->generation = rep.generation;
    r->port = rep.port;
    r->restarts = rep.restarts;
    r->retiring = rep.retiring;
    r->node = rep.node;
    r->host = rep.host.empty() && !node_ports_ ? opts_.replica_host : rep.host;
    backend::LaunchSpec s = ReplicaLaunch(spec_, r->index, r->generation, r->port);
    if (node_ports_) r->port_file = backend::slurm::PortFile(s);
    r->attempt_id = s.attempt_id;
    r->log_path = s.log_path;
    r->running = true;
    r->in_proxy = servers.erase(ServerName(*r)) > 0;
    r->state = r->retiring ? State::kDraining : State::kStarting;
    r->drain_deadline_ms = now + opts_.drain_timeout_ms;
    r->next_probe_ms = now;
    if (cb_.own) cb_.own(s.attempt_id);
    inner_->Adopt(s);  // its exit, if it ended while nobody watched, comes back as one
    replicas_.push_back(std::move(r));
  }
  for (const auto& name : servers) {  // of replicas that are gone
    (void)proxy().SetState(name, "maint");
    to_delete_.push_back(name);
  }
  Emit(spec::EventReason::kRecovered, "adopted " + std::to_string(rec.replicas.size()) +
                                          " replica(s) behind " + f->endpoint + " (" + how + ")");
  if (!rec.superseded_by.empty()) Supersede(rec.superseded_by);
  return true;
}

void ReplicaSet::Persist() {
  if (!frontend_) return;
  SetRecord rec;
  rec.proxy_pid = frontend_->proxy->pid();
  rec.proxy_dir = frontend_->proxy->dir();
  rec.socket = frontend_->runtime().socket_path();
  rec.port = frontend_->port;
  rec.endpoint = frontend_->endpoint;
  rec.server_prefix = prefix_;
  rec.desired = desired_;
  rec.next_index = next_index_;
  rec.serving_ready = serving_ready_;
  rec.started_ms = started_ms_;
  rec.superseded_by = superseded_by_;
  for (const auto& r : replicas_) {
    if (!r->running && r->state != State::kRestarting) continue;
    rec.replicas.push_back({r->index, r->generation, r->port, r->node, r->host, r->restarts,
                            r->retiring || r->state == State::kStopping});
  }
  std::string text = SetRecordToJson(rec);
  if (text == last_record_) return;
  if (WriteFileAtomic(record_path_, text).ok()) last_record_ = std::move(text);
}

}  // namespace rsl::serve
