#pragma once

// The Kubernetes backend (docs/backends/k8s.md): each attempt of a batch step is a Pod.
//
//   Launch  creates, on the run's first launch, the run's owner ConfigMap (every other object
//           names it in ownerReferences); then per attempt a Secret holding the step's secret
//           environment values (the Pod reads them through secretKeyRef; they never appear in
//           the Pod, a log or an error) and the Pod (restartPolicy Never, requests = limits,
//           capabilities as required node affinity, activeDeadlineSeconds from the timeout).
//           409 AlreadyExists for the attempt's Pod (a retried create, a relaunch after a
//           restart) adopts the Pod that is there. QueuesAttempts(): the Kubernetes scheduler
//           places Pods; the attempt is reported kRunning with its node once the Pod runs.
//   State   list+watch of the Pods labelled app.kubernetes.io/managed-by=rsl per Kubernetes
//           namespace (watch.h), classified by pod_status.h; a node NotReady or gone (nodes
//           read every node_refresh_ms) ends its attempts kNodeLost, as Slurm's down nodes do.
//   Logs    pods/log?follow=true into LaunchSpec.log_path, secret values masked (***).
//   Stop    DELETE with gracePeriodSeconds; reported kCancelled (kTimedOut when asked so).
//   Adopt   after a controller restart the attempt's Pod is found by its labels (run, step,
//           attempt): running -> watched again; ended -> its outcome; absent -> kNodeLost.
//   Data    Pods do not share the controller's disk. RSL_OUTPUT in the Pod is the attempt's
//           staging URI <staging>/<namespace>/<run>/staging/<step>[.N]; a dependency's
//           RSL_INPUT_<DEP> the staging URI of its succeeded attempt. When a Pod succeeds the
//           backend copies its staging prefix into the engine's local staging directory (what
//           LaunchSpec.env["RSL_OUTPUT"] was) BEFORE it reports the exit, so the engine's
//           commit is unchanged. file:// staging is a directory every node mounts at the same
//           path (the Pod gets a hostPath volume there; RSL_OUTPUT is a plain path); any
//           other scheme (s3://) goes through options.fetch_staging.
//   Cleanup RunFinished deletes the owner ConfigMap (propagation Background): Kubernetes'
//           garbage collector deletes the run's Pods and Secrets.
//
// Threading: public methods from any thread; callbacks from the backend's reconciler or
// finisher threads with no backend lock held.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "k8s/api_client.h"
#include "k8s/capability_labels.h"
#include "k8s/kubeconfig.h"
#include "k8s/nodes.h"
#include "k8s/watch.h"

namespace rsl::k8s {

struct K8sBackendOptions {
  Connection connection;
  RetryPolicy retry;
  //! RSL namespace -> Kubernetes namespace (a namespace not listed: the same name).
  std::map<std::string, std::string> namespaces;
  //! Where Pods write their outputs: file:///shared/dir or s3://bucket/prefix. "" = refused.
  std::string staging_prefix;
  CapabilityLabels capability_labels = CapabilityLabels::Defaults();
  LabelCapabilities label_capabilities = DefaultLabelCapabilities();
  std::string default_image = "docker.io/library/python:3.12-slim";
  int64_t default_cpu_millis = 1000;
  int64_t default_memory_bytes = int64_t{1} << 30;
  //! Copies everything below staging URI `uri` into local directory `dir` (non-file schemes;
  //! the runtime supplies it from data/storage). Unset: only file:// staging works.
  std::function<Status(const std::string& uri, const std::string& dir)> fetch_staging;
  int64_t node_refresh_ms = 2000;
  int64_t reconcile_ms = 100;  //!< the reconciler's pass when nothing wakes it
  int watch_timeout_s = 60;
  //! After a restart (Adopt), how long a synced cache may lack the attempt's Pod before it
  //! counts as gone (kNodeLost).
  int64_t adopt_grace_ms = 2000;
  //! How long the finisher waits for a Pod's log stream to end after the Pod ended.
  int64_t log_drain_ms = 10'000;
};

//! Validates the options (staging prefix scheme, connection) without contacting the cluster.
//! Errors: INVALID_ARGUMENT naming the flag.
Status CheckK8sOptions(const K8sBackendOptions& options);

//! The deterministic name of an attempt's Pod (and of its Secret).
std::string AttemptPodName(const std::string& workload, const std::string& run_id,
                           const std::string& step, int attempt);
//! The run's owner ConfigMap name (as render.h's RunObjectName).
std::string RunOwnerName(const std::string& workload, const std::string& run_id);
//! The staging URI (or, for file://, the plain path) of an attempt's outputs.
std::string AttemptStagingUri(const std::string& prefix, const std::string& rsl_namespace,
                              const std::string& run_id, const std::string& step, int attempt);

class K8sBackend : public backend::Backend {
 public:
  explicit K8sBackend(K8sBackendOptions options);
  ~K8sBackend() override;

  std::string name() const override { return "k8s"; }
  bool QueuesAttempts() const override { return true; }
  std::vector<std::string> DeclaredCapabilities() override;
  Result<std::vector<sched::Node>> ListNodes() override;
  Status Launch(const backend::LaunchSpec& spec) override;
  void Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) override;
  void Adopt(const backend::LaunchSpec& spec) override;
  Status CheckServing(const spec::Workload& workload, const spec::Step& step) override;
  void RunFinished(const std::string& rsl_namespace, const std::string& workload,
                   const std::string& run_id) override;

  //! The Pod JSON Launch would create for `spec` (tests, `describe`): secret values replaced
  //! by secretKeyRefs. `owner_uid` fills the ownerReference.
  Result<nlohmann::json> PodFor(const backend::LaunchSpec& spec, const std::string& owner_uid);
  ApiClient* client() { return &client_; }

 private:
  struct Attempt {
    backend::LaunchSpec spec;
    std::string ns;   // Kubernetes namespace
    std::string pod;  // Pod name
    std::string staging;
    bool adopted = false;
    bool seen = false;  // the Pod was in the informer's cache once
    bool running_reported = false;
    bool stop_requested = false;
    bool timed_out = false;
    bool delete_sent = false;
    bool ended = false;
    int64_t started_ms = 0;
    int64_t synced_ms = 0;  // when the reconciler first had its namespace's synced cache
    std::atomic<bool> log_stop{false};
    std::atomic<bool> log_done{false};
    std::thread log_thread;
  };
  struct FinisherThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  struct Watcher {
    std::unique_ptr<Informer> informer;
    std::thread thread;
  };

  Status EnsureRunObjects(const backend::LaunchSpec& spec, const std::string& ns,
                          std::string* owner_uid);
  std::string InputUriFor(const backend::LaunchSpec& spec, const std::string& dep_step,
                          const std::string& ns);
  void EnsureWatcher(const std::string& ns);
  Informer* InformerFor(const std::string& ns);
  void ReconcileLoop();
  void ReconcileOnce();
  void RefreshNodes(bool force);
  bool NodeLost(const std::string& node);
  void StartLog(Attempt* a);
  void LogLoop(Attempt* a);
  //! Ends `a` (lock held): a finisher thread fetches outputs, drains the log and reports.
  void FinishLocked(Attempt* a, backend::AttemptExit exit);
  void Finisher(std::unique_ptr<Attempt> a, backend::AttemptExit exit);
  Status FetchStaging(const std::string& uri, const std::string& dir);

  K8sBackendOptions opts_;
  ApiClient client_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::unique_ptr<Attempt>> attempts_;  // GUARDED_BY(mu_)
  std::map<std::string, std::unique_ptr<Watcher>> watchers_;  // GUARDED_BY(mu_): by namespace
  std::map<std::string, std::string> owner_uids_;             // GUARDED_BY(mu_): ns/owner
  //! "<run>/<step>" -> the staging URI of its succeeded attempt.
  std::map<std::string, std::string> succeeded_staging_;  // GUARDED_BY(mu_)
  std::vector<sched::Node> nodes_;                        // GUARDED_BY(mu_)
  bool nodes_known_ = false;                              // GUARDED_BY(mu_)
  int64_t nodes_read_ms_ = 0;                             // GUARDED_BY(mu_)
  std::vector<FinisherThread> finishers_;                 // GUARDED_BY(mu_)
  std::thread reconciler_;
};

}  // namespace rsl::k8s
