#include "serve/replica_set.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <set>

#include "backend/slurm_job.h"
#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "base/http_client.h"
#include "base/strings.h"
#include "serve/gpu_utilization.h"

namespace rsl::serve {
namespace {

//! Lines of a never-ready replica's log that ServingNotReady quotes.
constexpr size_t kLogLines = 10;
constexpr int64_t kLogTailBytes = 64 * 1024;
//! One readiness probe's bound (a replica that hangs is as good as down).
constexpr long kReadinessTimeoutMs = 1'000;
//! After a stop, how long past the grace replicas' exits are waited for.
constexpr int64_t kExitWaitSlackMs = 5'000;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// `host` as a numeric address (HAProxy's runtime `add server` takes no name without a
// resolvers section): itself when numeric or unresolvable, else its first IPv4 address.
std::string NumericHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return host;
  char buf[INET_ADDRSTRLEN] = {};
  const auto* in = reinterpret_cast<const sockaddr_in*>(res->ai_addr);
  std::string out = inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf) ? buf : host;
  freeaddrinfo(res);
  return out;
}

std::string Tail(const std::string& path, size_t lines) {
  auto text = ReadFileIfExists(path, size_t(kLogTailBytes) * 64);
  if (!text.ok() || !*text) return "";
  std::string t = **text;
  if (t.size() > size_t(kLogTailBytes)) t = t.substr(t.size() - size_t(kLogTailBytes));
  std::vector<std::string> ls = Split(t, '\n');
  while (!ls.empty() && ls.back().empty()) ls.pop_back();
  if (ls.size() > lines) ls.erase(ls.begin(), ls.end() - long(lines));
  return Join(ls, "\n");
}

}  // namespace

ReplicaSet::ReplicaSet(backend::Backend* inner, ServeOptions options, backend::LaunchSpec spec,
                       Callbacks callbacks, Begin begin)
    : inner_(inner),
      opts_(std::move(options)),
      spec_(std::move(spec)),
      serving_(spec_.serving.value_or(backend::ServingLaunch{})),
      cb_(std::move(callbacks)),
      begin_(std::move(begin)),
      autoscaler_(serving_.autoscaling),
      node_ports_(inner_->QueuesAttempts()),
      prefix_(ServerPrefix(spec_)),
      record_path_(SetRecordPath(spec_)),
      started_ms_(begin_.adopt ? begin_.adopt->started_ms : Env::Default()->NowMs()) {}

ReplicaSet::~ReplicaSet() {
  RequestStop(opts_.stop_grace_ms, false, false);
  Join();
}

void ReplicaSet::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ReplicaSet::Join() {
  if (thread_.joinable()) thread_.join();
}

void ReplicaSet::RequestStop(int64_t grace_ms, bool timed_out, bool report) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    stop_timed_out_ = timed_out;
    stop_report_ = report;
    stop_grace_ms_ = grace_ms;
  }
  cv_.notify_all();
}

void ReplicaSet::Leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    leave_ = true;
    stop_report_ = false;
  }
  cv_.notify_all();
}

void ReplicaSet::Supersede(const std::string& by) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!supersede_.empty()) return;
    supersede_ = by;
  }
  cv_.notify_all();
}

std::shared_ptr<Frontend> ReplicaSet::frontend() {
  std::lock_guard<std::mutex> lock(mu_);
  return frontend_;
}

void ReplicaSet::OnReplicaExit(const backend::AttemptExit& exit) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    exits_.push_back(exit);
  }
  cv_.notify_all();
}

void ReplicaSet::OnReplicaUsage(const backend::AttemptUsage& usage) {
  std::lock_guard<std::mutex> lock(mu_);
  Rate& rate = usage_[usage.attempt_id];
  int64_t dwall = usage.usage.wall_ms - rate.last.wall_ms;
  if (dwall > 0) {
    rate.cores = double(usage.usage.cpu_ms - rate.last.cpu_ms) / double(dwall);
  }
  rate.last = usage.usage;
}

backend::ServingStatus ReplicaSet::Status() {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

const char* ReplicaSet::StateName(State s) {
  switch (s) {
    case State::kStarting:
      return "Starting";
    case State::kReady:
      return "Ready";
    case State::kNotReady:
      return "NotReady";
    case State::kDraining:
      return "Draining";
    case State::kRestarting:
      return "Restarting";
    case State::kStopping:
      return "Stopping";
  }
  return "?";
}

std::string ReplicaSet::ServerName(const Replica& r) const {
  return prefix_ + "r" + std::to_string(r.index) + "-" + std::to_string(r.generation);
}

int64_t ReplicaSet::NowMs() const { return SteadyMs(); }

void ReplicaSet::Emit(spec::EventReason reason, const std::string& message, bool warning) {
  backend::AttemptEvent e;
  e.attempt_id = spec_.attempt_id;
  e.reason = reason;
  e.message = message;
  e.node = spec_.node;
  e.warning = warning;
  if (cb_.event) cb_.event(e);
}

void ReplicaSet::Fail(const std::string& code, const std::string& message, int64_t grace_ms) {
  backend::AttemptExit e;
  e.attempt_id = spec_.attempt_id;
  e.kind = backend::ExitKind::kFailed;
  e.code = code;
  e.node = spec_.node;
  e.message = message;
  Shutdown(e, grace_ms);
}

void ReplicaSet::Launch(Replica* r, int64_t now) {
  ++r->generation;
  // On its node (Slurm): the job chooses and writes the port; here: a free one of this host.
  auto port = node_ports_ ? Result<int>(0) : FreePort(opts_.replica_host);
  r->port = port.ok() ? *port : 0;
  r->node = node_ports_ ? "" : spec_.node;
  r->host = node_ports_ ? "" : opts_.replica_host;
  backend::LaunchSpec s = ReplicaLaunch(spec_, r->index, r->generation, r->port);
  if (node_ports_) {
    // Anti-affinity: off the nodes that hold its siblings, where the scheduler has another.
    for (const auto& other : replicas_) {
      if (other.get() == r || !other->running || other->node.empty()) continue;
      if (std::find(s.spread_from.begin(), s.spread_from.end(), other->node) ==
          s.spread_from.end()) {
        s.spread_from.push_back(other->node);
      }
    }
    s.env["RSL_PORT"] = backend::slurm::kPortOnNode;  // the job picks it on its node
    r->port_file = backend::slurm::PortFile(s);
    (void)RemoveAll(r->port_file);  // a stale one from an earlier controller
  }
  r->attempt_id = s.attempt_id;
  r->log_path = s.log_path;
  r->state = State::kStarting;
  r->failures = 0;
  r->in_proxy = false;
  r->utilization = 0;
  r->next_probe_ms = now;
  if (cb_.own) cb_.own(s.attempt_id);
  r->running = true;
  rsl::Status st = port.ok() ? inner_->Launch(s) : port.status();
  if (!st.ok()) {
    backend::AttemptExit e;
    e.attempt_id = s.attempt_id;
    e.kind = backend::ExitKind::kFailed;
    e.message = st.error().ToString();
    OnReplicaExit(e);
  }
}

void ReplicaSet::RemoveServer(Replica* r) {
  if (!r->in_proxy) return;
  r->in_proxy = false;
  (void)proxy().SetState(ServerName(*r), "maint");
  to_delete_.push_back(ServerName(*r));
}

void ReplicaSet::HandleExit(const backend::AttemptExit& e, int64_t now) {
  if (cb_.disown) cb_.disown(e.attempt_id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    usage_.erase(e.attempt_id);
  }
  for (size_t k = 0; k < replicas_.size(); ++k) {
    Replica* r = replicas_[k].get();
    if (r->attempt_id != e.attempt_id) continue;
    r->running = false;
    RemoveServer(r);
    if (r->retiring || r->state == State::kStopping) {
      replicas_.erase(replicas_.begin() + long(k));
      return;
    }
    ++r->restarts;
    int64_t backoff = opts_.restart_backoff_ms;
    for (int n = 1; n < r->restarts && backoff < opts_.max_restart_backoff_ms; ++n) backoff *= 2;
    backoff = std::min(backoff, opts_.max_restart_backoff_ms);
    r->state = State::kRestarting;
    r->restart_at_ms = now + backoff;
    std::string how = e.signal ? "killed by signal " + std::to_string(e.signal)
                               : "exited with code " + std::to_string(e.exit_code);
    if (!e.message.empty()) how += " (" + e.message + ")";
    Emit(spec::EventReason::kReplicaRestarted,
         "replica " + std::to_string(r->index) + " " + how + "; restart " +
             std::to_string(r->restarts) + " in " + std::to_string(backoff / 1000.0).substr(0, 4) +
             "s",
         true);
    return;
  }
}

bool ReplicaSet::LearnPort(Replica* r) {
  if (r->port > 0 && !r->host.empty()) return true;
  if (r->port_file.empty()) return false;
  auto text = ReadFileIfExists(r->port_file, 4096);
  if (!text.ok() || !*text) return false;
  int port = 0;
  std::string node;
  for (const auto& line : Split(**text, '\n')) {
    if (StartsWith(line, "port=")) port = std::atoi(line.c_str() + 5);
    if (StartsWith(line, "node=")) node = line.substr(5);
  }
  if (port <= 0 || port > 65535) return false;
  // The node's address as the scheduler knows it (Slurm NodeAddr), else its name.
  std::string host = node.empty() ? opts_.replica_host : node;
  if (!node.empty()) {
    if (auto nodes = inner_->ListNodes(); nodes.ok()) {
      for (const auto& n : *nodes) {
        auto addr = n.labels.find("slurm.address");
        if (n.name == node && addr != n.labels.end() && !addr->second.empty()) host = addr->second;
      }
    }
  }
  r->port = port;
  r->node = node;
  r->host = NumericHost(host);
  return true;
}

void ReplicaSet::Probe(Replica* r, int64_t now) {
  if (!r->running || now < r->next_probe_ms) return;
  if (r->state == State::kDraining || r->state == State::kStopping) return;
  if (!LearnPort(r)) return;  // its job has not started (or not chosen its port) yet
  r->next_probe_ms = now + serving_.readiness.period_ms;
  HttpRequest req;
  int port = serving_.readiness.port ? int(*serving_.readiness.port) : r->port;
  req.url = "http://" + r->host + ":" + std::to_string(port) + serving_.readiness.path;
  req.connect_timeout_ms = kReadinessTimeoutMs;
  req.timeout_ms = std::min<long>(kReadinessTimeoutMs, long(serving_.readiness.period_ms));
  auto resp = HttpSend(req);
  bool ok = resp.ok() && resp->status >= 200 && resp->status < 300;
  if (ok) {
    r->failures = 0;
    if (r->state == State::kReady) return;
    std::string name = ServerName(*r);
    if (!r->in_proxy) {
      rsl::Status s = proxy().AddServer(name, r->host, r->port);
      if (!s.ok()) return;  // tried again at the next probe
      r->in_proxy = true;
    }
    if (proxy().SetState(name, "ready").ok()) r->state = State::kReady;
    return;
  }
  ++r->failures;
  if ((r->state == State::kReady || (r->in_proxy && r->state == State::kStarting)) &&
      r->failures >= serving_.readiness.failure_threshold) {
    (void)proxy().SetState(ServerName(*r), "maint");  // out of rotation
    r->state = State::kNotReady;
  }
}

void ReplicaSet::Drain(Replica* r, int64_t now) {
  r->retiring = true;
  r->state = State::kDraining;
  r->drain_deadline_ms = now + opts_.drain_timeout_ms;
  if (r->in_proxy) (void)proxy().SetState(ServerName(*r), "drain");
}

void ReplicaSet::ProgressDrains(int64_t now) {
  bool any = false;
  for (auto& r : replicas_) any = any || r->state == State::kDraining;
  if (any || !to_delete_.empty()) {
    if (auto stat = proxy().ShowStat(); stat.ok()) {
      sessions_.clear();
      for (const auto& row : *stat) {
        if (row.proxy == kBackendName) sessions_[row.server] = row.scur;
      }
    }
  }
  for (auto& r : replicas_) {
    if (r->state != State::kDraining) continue;
    std::string name = ServerName(*r);
    bool idle = !r->in_proxy || (sessions_.count(name) && sessions_[name] == 0);
    if (!idle && now < r->drain_deadline_ms) continue;
    RemoveServer(r.get());
    r->state = State::kStopping;
    if (r->running) inner_->Stop(r->attempt_id, opts_.stop_grace_ms, false);
  }
  for (size_t k = 0; k < to_delete_.size();) {
    if (proxy().DelServer(to_delete_[k]).ok()) {
      to_delete_.erase(to_delete_.begin() + long(k));
    } else {
      ++k;  // sessions still open: again at the next tick
    }
  }
}

void ReplicaSet::Evaluate(int64_t now) {
  std::map<std::string, Rate> usage;
  {
    std::lock_guard<std::mutex> lock(mu_);
    usage = usage_;
  }
  double request = double(spec_.cpu_millis > 0 ? spec_.cpu_millis : 1000) / 1000.0;
  // GPU replicas: their devices' utilization where nvidia-smi answers (the replicas of a step
  // share the devices the step was given), else their CPU use.
  std::optional<double> gpu;
  if (spec_.gpus > 0 && !opts_.nvidia_smi.empty()) {
    auto by = ProbeGpuUtilization(Env::Default(), opts_.nvidia_smi);
    auto cuda = spec_.env.find("CUDA_VISIBLE_DEVICES");
    if (by.ok() && cuda != spec_.env.end()) {
      gpu = DevicesUtilization(*by, VisibleDevices(cuda->second));
    }
  }
  std::vector<ReplicaSample> samples;
  for (auto& r : replicas_) {
    if (r->retiring) continue;
    auto it = usage.find(r->attempt_id);
    r->utilization = gpu ? *gpu : it == usage.end() ? 0 : it->second.cores / request;
    samples.push_back({r->state == State::kReady, r->utilization});
  }
  ScaleDecision d = autoscaler_.Evaluate(now, desired_, samples,
                                         gpu ? Autoscaler::Metric::kGpu : Autoscaler::Metric::kCpu);
  // The history the status carries: this evaluation's view, with its decision.
  backend::ServingSample point;
  point.time_ms = Env::Default()->NowMs();
  double ready_sum = 0;
  for (const auto& sample : samples) {
    if (!sample.ready) continue;
    ++point.ready_replicas;
    ready_sum += sample.utilization;
  }
  point.utilization = point.ready_replicas ? ready_sum / point.ready_replicas : 0;
  point.desired_replicas = d.desired;
  history_.push_back(point);
  if (history_.size() > kServingHistorySamples) history_.pop_front();
  if (d.desired > desired_) {
    Emit(spec::EventReason::kScaledUp, d.reason);
    desired_ = d.desired;
    std::lock_guard<std::mutex> lock(mu_);
    status_.last_scale_time_ms = Env::Default()->NowMs();
  } else if (d.desired < desired_) {
    // The least useful replica: one not ready, else the newest.
    Replica* victim = nullptr;
    for (auto& r : replicas_) {
      if (r->retiring) continue;
      bool better = !victim || (victim->state == State::kReady && r->state != State::kReady) ||
                    ((victim->state == State::kReady) == (r->state == State::kReady) &&
                     r->index > victim->index);
      if (better) victim = r.get();
    }
    Emit(spec::EventReason::kScaledDown,
         d.reason + (victim ? "; draining replica " + std::to_string(victim->index) : ""));
    desired_ = d.desired;
    if (victim) {
      if (victim->running) {
        Drain(victim, now);
      } else {
        for (size_t k = 0; k < replicas_.size(); ++k) {
          if (replicas_[k].get() == victim) replicas_.erase(replicas_.begin() + long(k));
        }
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    status_.last_scale_time_ms = Env::Default()->NowMs();
  }
  if (auto stat = proxy().ShowStat(); stat.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& row : *stat) {
      if (row.proxy == kFrontendName && row.server == "FRONTEND") {
        status_.requests_total = row.stot;
        status_.request_errors_total = row.hrsp_5xx;
      }
    }
  }
}

std::string ReplicaSet::LastLogLines() const {
  for (auto it = replicas_.rbegin(); it != replicas_.rend(); ++it) {
    std::string t = Tail((*it)->log_path, kLogLines);
    if (!t.empty()) return "replica " + std::to_string((*it)->index) + "'s last log lines:\n" + t;
  }
  return "the replicas wrote no log";
}

void ReplicaSet::Run() {
  start_ms_ = NowMs();
  const auto& as = serving_.autoscaling;
  desired_ = int(as.min_replicas);
  if (begin_.desired > 0)
    desired_ = int(std::clamp<int64_t>(begin_.desired, as.min_replicas, as.max_replicas));
  bool began = begin_.adopt ? AdoptRecord() : begin_.frontend ? JoinFrontend() : StartProxy();
  begin_.frontend.reset();  // held in frontend_ from now on
  if (!began) return;
  takeover_at_ = std::max(desired_, 1);
  next_evaluate_ms_ = start_ms_ + opts_.evaluate_period_ms;
  while (true) {
    std::deque<backend::AttemptExit> exits;
    bool stop = false, timed_out = false;
    int64_t grace = 0;
    std::string superseded_by;
    bool leave = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(opts_.tick_ms),
                   [&] { return stop_ || !exits_.empty() || !supersede_.empty(); });
      exits.swap(exits_);
      stop = stop_;
      timed_out = stop_timed_out_;
      grace = stop_grace_ms_;
      superseded_by = supersede_;
      leave = leave_;
    }
    int64_t now = NowMs();
    if (leave) {
      // Exits seen now stay unhandled: the next controller finds them through adoption.
      Persist();
      std::shared_ptr<Frontend> f;
      {
        std::lock_guard<std::mutex> lock(mu_);
        f.swap(frontend_);
      }
      if (f) {
        f->left_running = true;
        f->proxy->Release();
      }
      return;
    }
    for (const auto& e : exits) HandleExit(e, now);
    if (!stop && !superseded_by.empty()) {
      superseded_by_ = superseded_by;
      Persist();  // a controller that dies now leaves a set that only drains
      int running = 0;
      for (auto& r : replicas_) running += r->running ? 1 : 0;
      Emit(spec::EventReason::kSuperseded,
           superseded_by + " is ready behind " + frontend_->endpoint + ": draining " +
               std::to_string(running) + " replica(s) of this version");
      backend::AttemptExit e;
      e.attempt_id = spec_.attempt_id;
      e.kind = backend::ExitKind::kSucceeded;
      e.exit_code = 0;
      e.node = spec_.node;
      e.message = "superseded by " + superseded_by;
      Shutdown(e, opts_.stop_grace_ms);
      return;
    }
    if (stop) {
      backend::AttemptExit e;
      e.attempt_id = spec_.attempt_id;
      e.kind = timed_out ? backend::ExitKind::kTimedOut : backend::ExitKind::kCancelled;
      e.node = spec_.node;
      e.message = "stopped";
      Shutdown(e, grace);
      return;
    }
    int active = 0;
    for (auto& r : replicas_) active += r->retiring ? 0 : 1;
    while (active < desired_) {
      auto r = std::make_unique<Replica>();
      r->index = next_index_++;
      Launch(r.get(), now);
      replicas_.push_back(std::move(r));
      ++active;
    }
    for (auto& r : replicas_) {
      if (r->state == State::kRestarting && now >= r->restart_at_ms) Launch(r.get(), now);
    }
    for (auto& r : replicas_) Probe(r.get(), now);
    int ready = 0;
    for (auto& r : replicas_) ready += r->state == State::kReady ? 1 : 0;
    if (!serving_ready_ && ready >= serving_.autoscaling.min_replicas) {
      serving_ready_ = true;
      std::string endpoint;
      {
        std::lock_guard<std::mutex> lock(mu_);
        endpoint = status_.endpoint;
      }
      Emit(spec::EventReason::kServingReady, std::to_string(ready) + "/" +
                                                 std::to_string(desired_) +
                                                 " replica(s) ready behind " + endpoint);
    }
    // Rolling update: the older version goes once this one carries what it carried (or
    // readyTimeout passed with at least minReplicas ready).
    if (takeover_at_ > 0 && serving_ready_ &&
        (ready >= takeover_at_ || now - start_ms_ >= serving_.ready_timeout_ms)) {
      takeover_at_ = 0;
      if (cb_.takeover) cb_.takeover();
    }
    if (!serving_ready_ && now - start_ms_ >= serving_.ready_timeout_ms) {
      std::string msg =
          std::to_string(ready) + " of " + std::to_string(serving_.autoscaling.min_replicas) +
          " replica(s) ready after " + std::to_string(serving_.ready_timeout_ms / 1000) +
          "s (readyTimeout); " + LastLogLines();
      Emit(spec::EventReason::kServingNotReady, msg, true);
      Fail(codes::kServingNotReady, msg, opts_.stop_grace_ms);
      return;
    }
    if (now >= next_evaluate_ms_) {
      next_evaluate_ms_ = now + opts_.evaluate_period_ms;
      Evaluate(now);
    }
    ProgressDrains(now);
    backend::ServingStatus st;
    st.desired_replicas = desired_;
    double sum = 0;
    for (auto& r : replicas_) {
      backend::ServingReplica rep;
      rep.index = r->index;
      rep.node = r->node.empty() ? spec_.node : r->node;
      rep.port = r->port;
      rep.state = StateName(r->state);
      rep.restarts = r->restarts;
      rep.utilization = r->utilization;
      st.replicas += r->running ? 1 : 0;
      if (r->state == State::kReady) {
        ++st.ready_replicas;
        sum += r->utilization;
      }
      st.replica_list.push_back(rep);
    }
    st.utilization = st.ready_replicas ? sum / st.ready_replicas : 0;
    st.history.assign(history_.begin(), history_.end());
    std::unique_lock<std::mutex> lock(mu_);
    st.endpoint = status_.endpoint;
    st.last_scale_time_ms = status_.last_scale_time_ms;
    st.requests_total = status_.requests_total;
    st.request_errors_total = status_.request_errors_total;
    status_ = std::move(st);
    lock.unlock();
    Persist();
  }
}

void ReplicaSet::Shutdown(std::optional<backend::AttemptExit> exit, int64_t grace_ms) {
  int64_t now = NowMs();
  if (frontend_) {
    for (auto& r : replicas_) {
      if (r->running && r->state != State::kStopping && r->state != State::kDraining)
        Drain(r.get(), now);
    }
    // Drain within the grace: in-flight requests finish, no new ones arrive.
    int64_t deadline = now + std::min(grace_ms, opts_.drain_timeout_ms);
    for (auto& r : replicas_) r->drain_deadline_ms = std::min(r->drain_deadline_ms, deadline);
    while (true) {
      ProgressDrains(NowMs());
      bool draining = false;
      for (auto& r : replicas_) draining = draining || r->state == State::kDraining;
      if (!draining) break;
      usleep(useconds_t(opts_.tick_ms * 1000));
    }
  }
  for (auto& r : replicas_) {
    if (r->running && r->state != State::kStopping) {
      r->state = State::kStopping;
      inner_->Stop(r->attempt_id, grace_ms, false);
    }
  }
  // Every replica's exit, so that nothing of the step is left when its exit is reported.
  int64_t deadline = NowMs() + grace_ms + kExitWaitSlackMs;
  while (NowMs() < deadline) {
    bool running = false;
    for (auto& r : replicas_) running = running || r->running;
    if (!running) break;
    std::deque<backend::AttemptExit> exits;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(opts_.tick_ms), [&] { return !exits_.empty(); });
      exits.swap(exits_);
    }
    for (const auto& e : exits) {
      if (cb_.disown) cb_.disown(e.attempt_id);
      for (auto& r : replicas_) {
        if (r->attempt_id == e.attempt_id) r->running = false;
      }
    }
  }
  std::shared_ptr<Frontend> frontend;
  if (frontend_) {
    for (auto& r : replicas_) RemoveServer(r.get());
    for (const auto& name : to_delete_) (void)proxy().DelServer(name);
  }
  (void)RemoveAll(record_path_);  // nothing left to adopt
  bool report = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    frontend.swap(frontend_);
    status_.replicas = status_.ready_replicas = 0;
    status_.replica_list.clear();
    report = stop_report_;
  }
  // HAProxy stops here unless a newer version's set shares it.
  frontend.reset();
  if (exit && report && cb_.exit) cb_.exit(*exit);
}

}  // namespace rsl::serve
