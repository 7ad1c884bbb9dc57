#include "k8s/backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "backend/slurm_job.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "image/reference.h"
#include "k8s/backend_internal.h"
#include "k8s/codes.h"
#include "k8s/names.h"
#include "k8s/pod_status.h"
#include "k8s/render.h"
#include "spec/names.h"

namespace rsl::k8s {

using backend::AttemptEvent;
using backend::AttemptExit;
using backend::ExitKind;
using backend::LaunchSpec;
using nlohmann::json;

namespace {

constexpr char kSelector[] = "app.kubernetes.io/managed-by=rsl";

bool LabelsMatch(const json& pod, const LaunchSpec& s) {
  const json want = AttemptLabels(s);
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->contains("labels")) return false;
  const json& have = (*meta)["labels"];
  for (const auto& [k, v] : want.items()) {
    if (!have.contains(k) || have[k] != v) return false;
  }
  return true;
}

Status CopyTree(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::filesystem::create_directories(to, ec);
  if (ec) return Error(codes::kIoError, "cannot create " + to + ": " + ec.message());
  if (!std::filesystem::exists(from, ec)) return Status::Ok();  // the step wrote nothing
  std::filesystem::copy(
      from, to,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing,
      ec);
  if (ec) return Error(codes::kIoError, "cannot copy " + from + " to " + to + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Status CheckK8sOptions(const K8sBackendOptions& o) {
  const std::string& p = o.staging_prefix;
  if (p.empty()) {
    return Error(codes::kInvalidArgument, "the k8s backend needs a staging prefix")
        .Path("--k8s-staging")
        .Hint(
            "pods do not share the controller's disk: --k8s-staging s3://bucket/prefix, or "
            "file:///dir for a directory every node mounts at the same path");
  }
  if (IsFileUri(p)) {
    if (FilePath(p).empty() || FilePath(p)[0] != '/') {
      return Error(codes::kInvalidArgument, "file:// staging needs an absolute path")
          .Path("--k8s-staging")
          .Value(p)
          .Hint("file:///shared/rsl-staging");
    }
    return Status::Ok();
  }
  if (p.find("://") == std::string::npos) {
    return Error(codes::kInvalidArgument, "staging prefix " + Quote(p) + " has no scheme")
        .Path("--k8s-staging")
        .Value(p)
        .Hint("s3://bucket/prefix or file:///dir");
  }
  if (!o.fetch_staging) {
    return Error(codes::kInvalidArgument,
                 "staging prefix " + Quote(p) + ": no object-store client for its scheme")
        .Path("--k8s-staging")
        .Value(p)
        .Hint("use s3://... (AWS_ENDPOINT_URL and keys, or a registered datasource) or file://");
  }
  return Status::Ok();
}

std::string RunOwnerName(const std::string& workload, const std::string& run_id) {
  return DnsLabel("rsl-" + workload + "-" + run_id);
}

std::string AttemptPodName(const std::string& workload, const std::string& run_id,
                           const std::string& step, int attempt) {
  return DnsLabel("rsl-" + workload + "-" + run_id + "-" + step + "-" + std::to_string(attempt));
}

std::string AttemptStagingUri(const std::string& prefix, const std::string& rsl_namespace,
                              const std::string& run_id, const std::string& step, int attempt) {
  std::string p = prefix;
  while (!p.empty() && p.back() == '/') p.pop_back();
  std::string uri = p + "/" + rsl_namespace + "/" + run_id + "/staging/" + step;
  if (attempt > 1) uri += "." + std::to_string(attempt);
  return IsFileUri(uri) ? FilePath(uri) : uri;
}

K8sBackend::K8sBackend(K8sBackendOptions options)
    : opts_(std::move(options)), client_(opts_.connection, opts_.retry) {
  reconciler_ = std::thread([this] { ReconcileLoop(); });
}

K8sBackend::~K8sBackend() {
  stopping_ = true;
  cv_.notify_all();
  if (reconciler_.joinable()) reconciler_.join();
  std::vector<FinisherThread> finishers;
  std::map<std::string, std::unique_ptr<Watcher>> watchers;
  std::map<std::string, std::unique_ptr<Attempt>> attempts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishers.swap(finishers_);
    watchers.swap(watchers_);
    attempts.swap(attempts_);
  }
  for (auto& [id, a] : attempts) a->log_stop = true;
  for (auto& f : finishers) f.thread.join();
  for (auto& [id, a] : attempts) {
    if (a->log_thread.joinable()) a->log_thread.join();
  }
  for (auto& [ns, w] : watchers) {
    if (w->thread.joinable()) w->thread.join();
  }
}

std::vector<std::string> K8sBackend::DeclaredCapabilities() {
  std::set<std::string> caps;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& n : nodes_) caps.insert(n.capabilities.begin(), n.capabilities.end());
  return {caps.begin(), caps.end()};
}

Result<std::vector<sched::Node>> K8sBackend::ListNodes() {
  auto nodes = k8s::ListNodes(&client_, opts_.label_capabilities);
  if (!nodes.ok()) return nodes.error();
  std::lock_guard<std::mutex> lock(mu_);
  nodes_ = *nodes;
  nodes_known_ = true;
  nodes_read_ms_ = NowMs();
  return nodes;
}

Status K8sBackend::EnsureRunObjects(const LaunchSpec& spec, const std::string& ns,
                                    std::string* owner_uid) {
  const std::string owner = RunOwnerName(spec.workload_name, spec.run_id);
  const std::string key = ns + "/" + owner;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = owner_uids_.find(key); it != owner_uids_.end()) {
      *owner_uid = it->second;
      return Status::Ok();
    }
  }
  json labels = {{kLabelManagedBy, kManagedByValue},
                 {kLabelWorkload, LabelValue(spec.workload_name)},
                 {kLabelNamespace, LabelValue(spec.namespace_)},
                 {kLabelRun, LabelValue(spec.run_id)}};
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", owner}, {"namespace", ns}, {"labels", labels}}},
             {"data",
              {{"workload", spec.workload_name},
               {"namespace", spec.namespace_},
               {"run", spec.run_id},
               {"workloadId", spec.version_id}}}};
  const std::string path = "/api/v1/namespaces/" + ns + "/configmaps";
  auto made = client_.Create(path, cm);
  json obj;
  if (made.ok()) {
    obj = *made;
  } else if (made.error().code == codes::kConflict) {
    auto got = client_.Get(path + "/" + owner);
    if (!got.ok()) return got.error();
    obj = *got;
  } else {
    return made.error();
  }
  std::string uid = Str(obj.value("metadata", json::object()), "uid");
  std::lock_guard<std::mutex> lock(mu_);
  owner_uids_[key] = uid;
  *owner_uid = uid;
  return Status::Ok();
}

Status K8sBackend::Launch(const LaunchSpec& spec) {
  for (const auto& d : spec.make_dirs) RSL_RETURN_IF_ERROR(MakeDirs(d));
  for (const auto& f : {spec.log_path, spec.exit_file}) {
    auto slash = f.find_last_of('/');
    if (slash != std::string::npos && slash > 0) RSL_RETURN_IF_ERROR(MakeDirs(f.substr(0, slash)));
  }
  const std::string ns = KubeNs(opts_.namespaces, spec.namespace_);
  if (spec.serving) return LaunchServing(spec, ns);
  EnsureWatcher(PodsPath(ns));
  std::string owner_uid;
  RSL_RETURN_IF_ERROR(EnsureRunObjects(spec, ns, &owner_uid));
  auto pod = PodFor(spec, owner_uid);
  if (!pod.ok()) return pod.error();
  const std::string name = (*pod)["metadata"]["name"];
  RSL_RETURN_IF_ERROR(CreateAttemptSecret(spec, ns, name, (*pod)["metadata"]["ownerReferences"]));
  auto a = std::make_unique<Attempt>();
  a->spec = spec;
  a->ns = ns;
  a->pod = name;
  a->staging = AttemptStagingUri(opts_.staging_prefix, spec.namespace_, spec.run_id, spec.step,
                                 spec.attempt);
  a->started_ms = NowMs();
  if (IsFileUri(opts_.staging_prefix)) RSL_RETURN_IF_ERROR(MakeDirs(a->staging));
  auto made = client_.Create(PodsPath(ns), *pod);
  bool adopted = false;
  if (!made.ok()) {
    if (made.error().code != codes::kConflict) return made.error();
    adopted = true;  // a retried create, or this attempt's Pod from before a restart
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_[spec.attempt_id] = std::move(a);
  }
  if (on_event) {
    on_event({spec.attempt_id, spec::EventReason::kSubmitted,
              (adopted ? "pod " + ns + "/" + name + " already exists: adopted"
                       : "created pod " + ns + "/" + name),
              "", false});
  }
  cv_.notify_all();
  return Status::Ok();
}

Status K8sBackend::CreateAttemptSecret(const LaunchSpec& spec, const std::string& ns,
                                       const std::string& name, const json& owner_refs) {
  // The secret values the Pod reads through secretKeyRef: a Secret of the attempt.
  json secret_data = json::object();
  std::set<std::string> secrets(spec.secret_values.begin(), spec.secret_values.end());
  for (const auto& [k, v] : spec.env) {
    if (!v.empty() && secrets.count(v)) secret_data[k] = v;
  }
  if (secret_data.empty()) return Status::Ok();
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"type", "Opaque"},
                 {"metadata",
                  {{"name", name},
                   {"namespace", ns},
                   {"labels", AttemptLabels(spec)},
                   {"ownerReferences", owner_refs}}},
                 {"stringData", secret_data}};
  auto made = client_.Create("/api/v1/namespaces/" + ns + "/secrets", secret);
  if (!made.ok() && made.error().code != codes::kConflict) {
    return made.error();  // the API's message names the object, never its data
  }
  return Status::Ok();
}

void K8sBackend::Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) {
  std::string ns, pod;
  bool serving = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = attempts_.find(attempt_id);
    if (it == attempts_.end() || it->second->ended) return;
    it->second->stop_requested = true;
    it->second->timed_out = timed_out;
    ns = it->second->ns;
    pod = it->second->pod;
    serving = it->second->serving;
  }
  bool sent = false;
  if (serving) {
    // Only while the objects are still this attempt's: a newer version may hold them now.
    json deploy;
    if (Informer* inf = InformerFor(DeploymentsPath(ns)); inf != nullptr && inf->synced()) {
      auto snap = inf->Snapshot();
      if (auto d = snap.find(pod); d != snap.end()) deploy = d->second;
    }
    const std::string holder = deploy.is_null() ? attempt_id : AttemptAnnotation(deploy);
    const std::string previous = deploy.is_null() ? "" : Annotation(deploy, kAnnotationPrevious);
    if (holder == attempt_id && !previous.empty()) {
      // Cancelled while rolling out: back to the version that still serves.
      auto back = RollBackServing(ns, pod, attempt_id);
      if (back.ok() && back->empty()) {
        sent = DeleteServingObjects(ns, pod, grace_ms);
      } else {
        sent = back.ok() || back.error().code == codes::kConflict;  // conflict: not ours now
      }
    } else if (holder == attempt_id) {
      sent = DeleteServingObjects(ns, pod, grace_ms);
    } else {
      if (previous == attempt_id) {
        // The version a rollout would go back to is cancelled: nothing to go back to.
        json patch = {
            {"metadata",
             {{"annotations", {{kAnnotationPrevious, nullptr}, {kAnnotationRollback, nullptr}}},
              {"resourceVersion", deploy["metadata"].value("resourceVersion", "")}}}};
        (void)client_.MergePatch(DeploymentsPath(ns) + "/" + pod, patch);
      }
      sent = true;
    }
  } else {
    DeleteOptions del;
    del.grace_period_seconds = std::max<int64_t>(0, (grace_ms + 999) / 1000);
    auto r = client_.Delete(PodsPath(ns) + "/" + pod, del);
    sent = r.ok() || r.error().code == codes::kNotFound;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(attempt_id);
  if (it == attempts_.end()) return;
  it->second->delete_sent = sent;
  cv_.notify_all();
}

void K8sBackend::Adopt(const LaunchSpec& spec) {
  const std::string ns = KubeNs(opts_.namespaces, spec.namespace_);
  auto a = std::make_unique<Attempt>();
  if (spec.serving) {
    // The Deployment (found by name, checked by its attempt annotation) is watched again;
    // nothing is created.
    EnsureWatcher(DeploymentsPath(ns));
    a->serving = true;
    a->pod = ServingObjectName(spec.namespace_, ns, spec.workload_name, spec.step);
    a->status.endpoint =
        "http://" + a->pod + "." + ns + ".svc:" + std::to_string(ServingPort(spec));
    if (auto svc = client_.Get(ServicesPath(ns) + "/" + a->pod); svc.ok()) {
      std::string ip = Str(svc->value("spec", json::object()), "clusterIP");
      if (ip != "None") a->cluster_ip = ip;
    }
  } else {
    EnsureWatcher(PodsPath(ns));
    a->pod = AttemptPodName(spec.workload_name, spec.run_id, spec.step, spec.attempt);
  }
  a->spec = spec;
  a->ns = ns;
  a->staging = AttemptStagingUri(opts_.staging_prefix, spec.namespace_, spec.run_id, spec.step,
                                 spec.attempt);
  a->adopted = true;
  a->started_ms = NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  attempts_[spec.attempt_id] = std::move(a);
  cv_.notify_all();
}

void K8sBackend::RunFinished(const std::string& rsl_namespace, const std::string& workload,
                             const std::string& run_id) {
  const std::string ns = KubeNs(opts_.namespaces, rsl_namespace);
  const std::string owner = RunOwnerName(workload, run_id);
  DeleteOptions del;
  del.propagation_policy = "Background";
  auto r = client_.Delete("/api/v1/namespaces/" + ns + "/configmaps/" + owner, del);
  {
    std::lock_guard<std::mutex> lock(mu_);
    owner_uids_.erase(ns + "/" + owner);
    for (auto it = succeeded_staging_.begin(); it != succeeded_staging_.end();) {
      it = StartsWith(it->first, run_id + "/") ? succeeded_staging_.erase(it) : std::next(it);
    }
  }
  if (!r.ok() && r.error().code != codes::kNotFound && on_event) {
    // No attempt to name: the engine drops events of unknown attempts; say it on stderr.
    fprintf(stderr, "k8s: could not delete run %s's objects (%s): %s\n", run_id.c_str(),
            owner.c_str(), r.error().message.c_str());
  }
}

void K8sBackend::EnsureWatcher(const std::string& collection) {
  std::lock_guard<std::mutex> lock(mu_);
  if (watchers_.count(collection) || stopping_) return;
  auto w = std::make_unique<Watcher>();
  w->informer = std::make_unique<Informer>(&client_, collection, kSelector,
                                           [this](const Informer::Change&) { cv_.notify_all(); });
  w->informer->set_watch_timeout_seconds(opts_.watch_timeout_s);
  Informer* inf = w->informer.get();
  w->thread = std::thread([this, inf] {
    while (!stopping_) {
      Status s = inf->Run(&stopping_, 1 << 30, 200);
      if (stopping_) break;
      if (!s.ok()) fprintf(stderr, "k8s: watch: %s\n", s.ToString().c_str());
      // The first LIST failed (forbidden, no such namespace, unreachable): try again slowly.
      for (int i = 0; i < 20 && !stopping_; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
  watchers_[collection] = std::move(w);
}

Informer* K8sBackend::InformerFor(const std::string& collection) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = watchers_.find(collection);
  return it == watchers_.end() ? nullptr : it->second->informer.get();
}

void K8sBackend::RefreshNodes(bool force) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!force && NowMs() - nodes_read_ms_ < opts_.node_refresh_ms) return;
    nodes_read_ms_ = NowMs();
  }
  auto nodes = k8s::ListNodes(&client_, opts_.label_capabilities);
  if (!nodes.ok()) return;  // not allowed to read nodes, or not now: no node-loss decisions
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_ = *nodes;
    nodes_known_ = true;
  }
  if (on_nodes) on_nodes(*nodes);
}

bool K8sBackend::NodeLost(const std::string& node) {  // mu_ held
  if (node.empty() || !nodes_known_ || nodes_.empty()) return false;
  for (const auto& n : nodes_) {
    if (n.name == node) {
      return n.state == spec::NodeState::kDown || n.state == spec::NodeState::kNotReady;
    }
  }
  return true;  // the node is gone
}

void K8sBackend::ReconcileLoop() {
  while (!stopping_) {
    RefreshNodes(false);
    ReconcileOnce();
    std::vector<FinisherThread> done;  // threads that reported: joined off the lock
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = finishers_.begin(); it != finishers_.end();) {
        if (*it->done) {
          done.push_back(std::move(*it));
          it = finishers_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& f : done) f.thread.join();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(opts_.reconcile_ms));
  }
}

void K8sBackend::ReconcileOnce() {
  // Each collection's cache, read without the backend lock (the informer has its own).
  std::map<std::string, Informer*> informers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [collection, w] : watchers_) informers[collection] = w->informer.get();
  }
  std::map<std::string, std::map<std::string, json>> snaps;
  for (auto& [collection, inf] : informers) {
    if (inf->synced()) snaps[collection] = inf->Snapshot();
  }
  std::vector<AttemptEvent> events;
  std::vector<std::pair<std::string, std::string>> deletes;  // blocked pods: ns, name
  std::vector<std::pair<std::string, json>> patches;         // serving takeovers: path, patch
  {
    std::lock_guard<std::mutex> lock(mu_);
    // FinishLocked erases the attempt it ends from attempts_: step past it first.
    for (auto next = attempts_.begin(); next != attempts_.end();) {
      const std::string id = next->first;
      Attempt* a = (next++)->second.get();
      if (a->ended) continue;
      auto snap = snaps.find(a->serving ? DeploymentsPath(a->ns) : PodsPath(a->ns));
      if (snap == snaps.end()) continue;  // not synced yet
      if (a->serving) {
        if (a->synced_ms == 0) a->synced_ms = NowMs();
        ReconcileServing(a, snap->second, &events, &patches);
        continue;
      }
      if (a->synced_ms == 0) a->synced_ms = NowMs();
      const json* pod = nullptr;
      if (auto p = snap->second.find(a->pod); p != snap->second.end()) {
        pod = &p->second;
      } else {
        for (const auto& [name, obj] : snap->second) {
          if (LabelsMatch(obj, a->spec)) {
            pod = &obj;
            a->pod = name;
            break;
          }
        }
      }
      if (pod == nullptr) {
        if (a->stop_requested && (a->seen || a->delete_sent)) {
          AttemptExit e;
          e.attempt_id = id;
          e.kind = a->timed_out ? ExitKind::kTimedOut : ExitKind::kCancelled;
          e.message = a->timed_out ? "time limit reached: pod deleted" : "cancelled: pod deleted";
          FinishLocked(a, e);
        } else if (a->seen) {
          AttemptExit e;
          e.attempt_id = id;
          e.kind = ExitKind::kNodeLost;
          e.message = "pod " + a->ns + "/" + a->pod + " was deleted outside RSL";
          FinishLocked(a, e);
        } else if (a->adopted && NowMs() - a->synced_ms > opts_.adopt_grace_ms) {
          // After a restart, the synced cache does not hold it: it is gone.
          AttemptExit e;
          e.attempt_id = id;
          e.kind = ExitKind::kNodeLost;
          e.message = "pod " + a->ns + "/" + a->pod + " not found after a controller restart";
          FinishLocked(a, e);
        }
        continue;
      }
      a->seen = true;
      const std::string node = Str(pod->value("spec", json::object()), "nodeName");
      PodOutcome o = ClassifyPod(*pod, NodeLost(node));
      if (o.state == PodOutcome::State::kRunning || o.state == PodOutcome::State::kEnded) {
        if (!a->running_reported && o.state == PodOutcome::State::kRunning) {
          a->running_reported = true;
          events.push_back({id, spec::EventReason::kRunning,
                            "pod " + a->ns + "/" + a->pod + " running on " + node, node, false});
        }
        StartLog(a);
      }
      if (o.state == PodOutcome::State::kEnded || o.state == PodOutcome::State::kBlocked) {
        AttemptExit e = o.exit;
        e.attempt_id = id;
        e.node = node;
        if (a->stop_requested && e.kind != ExitKind::kSucceeded) {
          e.kind = a->timed_out ? ExitKind::kTimedOut : ExitKind::kCancelled;
        }
        bool lost = e.kind == ExitKind::kNodeLost;
        if (o.state == PodOutcome::State::kBlocked || lost) deletes.push_back({a->ns, a->pod});
        FinishLocked(a, e);
      }
    }
  }
  for (const auto& e : events) {
    if (on_event) on_event(e);
  }
  for (const auto& [ns, name] : deletes) {
    DeleteOptions del;
    del.grace_period_seconds = 0;
    (void)client_.Delete(PodsPath(ns) + "/" + name, del);
  }
  // A conflict (the Deployment changed since it was read) is decided again on a later pass.
  for (const auto& [path, patch] : patches) (void)client_.MergePatch(path, patch);
}

void K8sBackend::StartLog(Attempt* a) {  // mu_ held
  if (a->log_thread.joinable() || a->spec.log_path.empty()) return;
  a->log_thread = std::thread([this, a] { LogLoop(a); });
}

void K8sBackend::LogLoop(Attempt* a) {
  std::FILE* f = std::fopen(a->spec.log_path.c_str(), "ab");
  if (f == nullptr) {
    a->log_done = true;
    return;
  }
  backend::slurm::LogMasker masker(a->spec.secret_values);
  int64_t received = 0;  // a re-read stream starts at the beginning: skip what was written
  for (int tries = 0; tries < 50 && !a->log_stop; ++tries) {
    int64_t offset = 0;
    Status s = StreamPodLog(
        &client_, a->ns, a->pod, "", true,
        [&](std::string_view data) {
          if (offset + int64_t(data.size()) <= received) {
            offset += int64_t(data.size());
            return true;
          }
          size_t skip = offset < received ? size_t(received - offset) : 0;
          std::string out = masker.Feed(data.substr(skip));
          offset += int64_t(data.size());
          received = offset;
          if (!out.empty()) {
            std::fwrite(out.data(), 1, out.size(), f);
            std::fflush(f);
          }
          return true;
        },
        &a->log_stop);
    if (s.ok()) break;  // the container ended (or we were told to stop)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::string rest = masker.Finish();
  if (!rest.empty()) std::fwrite(rest.data(), 1, rest.size(), f);
  std::fclose(f);
  a->log_done = true;
}

void K8sBackend::FinishLocked(Attempt* a, AttemptExit exit) {
  a->ended = true;
  auto it = attempts_.find(exit.attempt_id);
  if (it == attempts_.end()) return;
  std::unique_ptr<Attempt> owned = std::move(it->second);
  attempts_.erase(it);
  if (exit.kind == ExitKind::kSucceeded) {
    succeeded_staging_[owned->spec.run_id + "/" + owned->spec.step] = owned->staging;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  finishers_.push_back({std::thread([this, p = owned.release(), exit, done]() mutable {
                          Finisher(std::unique_ptr<Attempt>(p), exit);
                          *done = true;
                        }),
                        done});
}

Status K8sBackend::FetchStaging(const std::string& uri, const std::string& dir) {
  if (IsFileUri(opts_.staging_prefix)) return CopyTree(uri, dir);
  if (!opts_.fetch_staging) {
    return Error(codes::kInvalidArgument, "no object-store client for staging " + uri);
  }
  return opts_.fetch_staging(uri, dir);
}

void K8sBackend::Finisher(std::unique_ptr<Attempt> a, AttemptExit exit) {
  if (a->end_objects) {
    // Never ready: back to the version that kept serving, or (a first version) nothing left.
    auto back = RollBackServing(a->ns, a->pod, a->spec.attempt_id);
    if (back.ok() && back->empty()) {
      (void)DeleteServingObjects(a->ns, a->pod, 0);
    } else if (back.ok()) {
      exit.message += "; deployment " + a->ns + "/" + a->pod + " rolled back to " + *back +
                      ", which keeps serving";
    } else if (back.error().code != codes::kConflict) {
      exit.message +=
          "; rolling deployment " + a->ns + "/" + a->pod + " back failed: " + back.error().message;
    }
  }
  // Before the exit: the engine drops the events of an attempt that ended.
  for (const auto& e : a->last_events) {
    if (on_event && !stopping_) on_event(e);
  }
  // The Pod ended: its log stream ends too; wait for it (bounded), then report.
  if (a->log_thread.joinable()) {
    bool natural = exit.kind == ExitKind::kSucceeded || exit.kind == ExitKind::kFailed ||
                   exit.kind == ExitKind::kOomKilled;
    if (!natural) a->log_stop = true;  // deleted or lost: no end of stream to wait for
    int64_t until = NowMs() + opts_.log_drain_ms;
    while (!a->log_done && NowMs() < until && !stopping_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    a->log_stop = true;
    a->log_thread.join();
  }
  if (exit.kind == ExitKind::kSucceeded) {
    auto local = a->spec.env.find("RSL_OUTPUT");
    if (local != a->spec.env.end()) {
      Status s = FetchStaging(a->staging, local->second);
      if (!s.ok()) {
        exit.kind = ExitKind::kFailed;
        exit.exit_code = 0;
        exit.code = s.code();
        exit.message = "the pod succeeded but its outputs could not be fetched from " + a->staging +
                       ": " + s.error().message;
      }
    }
  }
  if (stopping_) return;  // the controller goes away: the next one adopts the Pod
  if (on_exit) on_exit(exit);
}

}  // namespace rsl::k8s
