#include "serve/serving_backend.h"

#include <unistd.h>

#include <algorithm>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::serve {

ServingBackend::ServingBackend(std::unique_ptr<backend::Backend> inner, ServeOptions options)
    : inner_(std::move(inner)), opts_(std::move(options)) {
  inner_->on_exit = [this](const backend::AttemptExit& e) {
    if (auto set = OwnerOf(e.attempt_id)) return set->OnReplicaExit(e);
    if (on_exit) on_exit(e);
  };
  inner_->on_event = [this](const backend::AttemptEvent& e) {
    if (OwnerOf(e.attempt_id)) return;  // a replica's own (LimitsApplied ...): not the step's
    if (on_event) on_event(e);
  };
  inner_->on_usage = [this](const backend::AttemptUsage& u) {
    if (auto set = OwnerOf(u.attempt_id)) return set->OnReplicaUsage(u);
    if (on_usage) on_usage(u);
  };
  inner_->on_nodes = [this](const std::vector<sched::Node>& n) {
    if (on_nodes) on_nodes(n);
  };
}

ServingBackend::~ServingBackend() {
  std::map<std::string, Entry> sets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sets = sets_;
  }
  for (auto& [id, e] : sets) e.set->RequestStop(opts_.stop_grace_ms, false, /*report=*/false);
  for (auto& [id, e] : sets) e.set->Join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    sets_.clear();
  }
  ReapFinished();
  // The wrapped backend goes first, while this one still stands: its threads may call the
  // callbacks above until it has joined them (clearing them instead would race those calls).
  inner_.reset();
}

void ServingBackend::LeaveRunning() {
  std::map<std::string, Entry> sets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sets.swap(sets_);
    owner_.clear();
  }
  for (auto& [id, e] : sets) e.set->Leave();
  for (auto& [id, e] : sets) e.set->Join();
  ReapFinished();
}

std::shared_ptr<ReplicaSet> ServingBackend::SetOf(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(attempt_id);
  return it == sets_.end() ? nullptr : it->second.set;
}

std::string ServingBackend::ServiceKey(const std::string& ns, const std::string& workload,
                                       const std::string& step) {
  return ns + "/" + workload + "/" + step;
}

std::shared_ptr<ReplicaSet> ServingBackend::OwnerOf(const std::string& replica_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owner_.find(replica_id);
  if (it == owner_.end()) return nullptr;
  auto set = sets_.find(it->second);
  return set == sets_.end() ? nullptr : set->second.set;
}

void ServingBackend::ReapFinished() {
  std::vector<std::shared_ptr<ReplicaSet>> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(finished_);
  }
  for (auto& set : done) set->Join();
}

Status ServingBackend::Launch(const backend::LaunchSpec& spec) {
  ReapFinished();
  if (!spec.serving) return inner_->Launch(spec);
  // A running version of the same service: share its endpoint, start with its replica count.
  ReplicaSet::Begin begin;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string key = ServiceKey(spec.namespace_, spec.workload_name, spec.step);
    int64_t newest = -1;
    for (auto& [id, e] : sets_) {
      if (e.service != key) continue;
      begin.desired = std::max(begin.desired, e.set->Status().desired_replicas);
      auto f = e.set->frontend();
      bool same_port = !spec.serving->port || (f && f->port == int(*spec.serving->port));
      if (f && same_port && e.set->started_ms() > newest) {
        newest = e.set->started_ms();
        begin.frontend = f;
      }
    }
  }
  return StartSet(spec, std::move(begin));
}

Status ServingBackend::StartSet(const backend::LaunchSpec& spec, ReplicaSet::Begin begin) {
  const std::string id = spec.attempt_id;
  const std::string by = spec.version_id.empty() ? spec.run_id : spec.version_id;
  ReplicaSet::Callbacks cb;
  cb.event = [this](const backend::AttemptEvent& e) {
    if (on_event) on_event(e);
  };
  cb.exit = [this, id](const backend::AttemptExit& e) {
    // On the set's own thread, its last act: forgotten before the engine hears of the exit,
    // joined later (ReapFinished) by another thread.
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = sets_.find(id);
      if (it != sets_.end()) {
        finished_.push_back(it->second.set);
        sets_.erase(it);
      }
    }
    if (on_exit) on_exit(e);
  };
  cb.own = [this, id](const std::string& replica) {
    std::lock_guard<std::mutex> lock(mu_);
    owner_[replica] = id;
  };
  cb.disown = [this](const std::string& replica) {
    std::lock_guard<std::mutex> lock(mu_);
    owner_.erase(replica);
  };
  cb.takeover = [this, id, by] { TakeOver(id, by); };
  auto set =
      std::make_shared<ReplicaSet>(inner_.get(), opts_, spec, std::move(cb), std::move(begin));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sets_.count(id)) {
      return Error(codes::kConflict, "serving attempt " + Quote(id) + " is running already");
    }
    sets_[id] = {set, ServiceKey(spec.namespace_, spec.workload_name, spec.step)};
  }
  set->Start();
  return Status::Ok();
}

void ServingBackend::TakeOver(const std::string& id, const std::string& by) {
  std::vector<std::shared_ptr<ReplicaSet>> older;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto self = sets_.find(id);
    if (self == sets_.end()) return;
    for (auto& [other, e] : sets_) {
      if (other == id || e.service != self->second.service) continue;
      if (e.set->started_ms() <= self->second.set->started_ms()) older.push_back(e.set);
    }
  }
  for (auto& set : older) set->Supersede(by);
}

void ServingBackend::Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) {
  if (auto set = SetOf(attempt_id)) return set->RequestStop(grace_ms, timed_out);
  inner_->Stop(attempt_id, grace_ms, timed_out);
}

void ServingBackend::Adopt(const backend::LaunchSpec& spec) {
  if (!spec.serving) return inner_->Adopt(spec);
  auto text = ReadFileIfExists(SetRecordPath(spec), 1 << 20);
  auto record = text.ok() && *text ? SetRecordFromJson(**text)
                                   : Result<SetRecord>(Error(codes::kNotFound, "no record"));
  if (record.ok()) {
    ReplicaSet::Begin begin;
    {
      // Two versions of a service in the middle of a rolling update share one HAProxy.
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, e] : sets_) {
        auto f = e.set->frontend();
        if (f && f->proxy->dir() == record->proxy_dir) begin.frontend = f;
      }
    }
    begin.adopt = std::move(*record);
    if (StartSet(spec, std::move(begin)).ok()) return;
  }
  backend::AttemptExit e;
  e.attempt_id = spec.attempt_id;
  e.kind = backend::ExitKind::kNodeLost;
  e.node = spec.node;
  e.message = "the serving step's replica set left no record to adopt";
  if (on_exit) on_exit(e);
}

Status ServingBackend::CheckServing(const spec::Workload& workload, const spec::Step& step) {
  if (access(opts_.haproxy.c_str(), X_OK) != 0) {
    return Error(codes::kServingProxyMissing, "serving step " + Quote(step.name) +
                                                  " needs HAProxy, and " + opts_.haproxy +
                                                  " is not installed")
        .Value(opts_.haproxy)
        .Hint("install Debian's haproxy (scripts/install-deps.sh)");
  }
  bool ours = false;  // the endpoint of the version this one will take over
  if (step.port) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string key = ServiceKey(workload.namespace_, workload.name, step.name);
    for (auto& [id, e] : sets_) {
      auto f = e.service == key ? e.set->frontend() : nullptr;
      ours = ours || (f && f->port == int(*step.port));
    }
  }
  if (step.port && !ours && !PortFree(int(*step.port))) {
    return Error(codes::kServingPortInUse, "port " + std::to_string(*step.port) +
                                               " of serving step " + Quote(step.name) +
                                               " is in use")
        .Value(std::to_string(*step.port))
        .Hint("choose another port, or leave port: unset and RSL allocates one");
  }
  return Status::Ok();
}

std::optional<backend::ServingStatus> ServingBackend::Serving(const std::string& attempt_id) {
  if (auto set = SetOf(attempt_id)) return set->Status();
  return std::nullopt;
}

}  // namespace rsl::serve
