#pragma once

// The Kubernetes backend (docs/backends/k8s.md): each attempt of a batch step is a Pod; each
// attempt of a serving step a Deployment, a Service and (when it scales) an HPA.
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
//   Serving Launch of a serving attempt creates (owned by the run's owner ConfigMap) the
//           Deployment rsl-<workload>-<step> (rsl-<namespace>-<workload>-<step>-<hash> where
//           the RSL namespace is mapped onto another Kubernetes namespace: render.h's
//           ServingObjectName), replicas = minReplicas, RollingUpdate with maxUnavailable 0,
//           readinessProbe from the spec, RSL_PORT the container port, RSL_REPLICA the Pod's
//           name through the downward API), the Service of the same name (ClusterIP, the
//           endpoint) and, when maxReplicas > minReplicas, an autoscaling/v2
//           HorizontalPodAutoscaler. The name has no run in it: a new version of the workload
//           (a later run's attempt) finds them there and rolls them out in place (merge
//           patch: template, labels, owners), recording on the Deployment the attempt that
//           still serves (rsl.dev/previous-attempt-id) and what its objects were
//           (rsl.dev/rollback); both runs own the objects meanwhile. The older attempt serves
//           on until the new one is ready (its template's Pods: observedGeneration, updated
//           and ready replicas); then the new one drops the annotations and its owner, and the
//           older, seeing that, ends succeeded ("superseded"). A new version never ready
//           (readyTimeout) or cancelled mid-rollout re-applies the rollback: the older one
//           keeps serving, not superseded. A watch of the Deployments reports ServingReady
//           (ready replicas of the attempt's template >= minReplicas, with the Service's
//           endpoint), ScaledUp / ScaledDown (spec.replicas changed: the HPA's decisions),
//           ServingNotReady (ready replicas below minReplicas; never ready within
//           readyTimeout fails the attempt SERVING_NOT_READY). The attempt runs until Stop,
//           which deletes the three objects and reports kCancelled. Serving() reports
//           replicas, ready replicas and the endpoint. Adopt finds the Deployment by name and
//           attempt annotation and watches it again (nothing is created).
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
#include <optional>
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
  std::optional<backend::ServingStatus> Serving(const std::string& attempt_id) override;

  //! The Deployment, Service and (when it scales) HorizontalPodAutoscaler Launch creates for
  //! serving attempt `spec`, in that order. Errors: as PodFor; K8S_NOT_REPRESENTABLE for a
  //! scale-down delay over the HPA's longest stabilization window (1h).
  Result<std::vector<nlohmann::json>> ServingObjectsFor(const backend::LaunchSpec& spec,
                                                        const std::string& owner_uid);

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
    bool seen = false;  // the Pod (serving: the Deployment) was in the informer's cache once
    bool running_reported = false;
    bool stop_requested = false;
    bool timed_out = false;
    bool delete_sent = false;
    bool ended = false;
    int64_t started_ms = 0;
    int64_t synced_ms = 0;  // when the reconciler first had its namespace's synced cache
    // Serving attempts: `pod` is the Deployment's (and Service's, HPA's) name.
    bool serving = false;
    bool ready_reported = false;  // ServingReady said (and not taken back since)
    bool ever_ready = false;      // readyTimeout no longer applies
    int last_desired = -1;        // spec.replicas last seen
    std::string cluster_ip;       // the Service's, when assigned
    // Never ready: before reporting, the finisher rolls the objects back to the version that
    // still serves (a rollout), or deletes them (a first version).
    bool end_objects = false;
    std::string rollout_to;   // this version still serves while this newer attempt rolls out
    int64_t takeover_ms = 0;  // when this (ready) version last asked to drop the older one
    std::vector<backend::AttemptEvent> last_events;  // the finisher's, before the exit
    backend::ServingStatus status;                   // what Serving() answers
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

  //! Launch of a serving attempt (spec.serving set).
  Status LaunchServing(const backend::LaunchSpec& spec, const std::string& ns);
  //! Creates the attempt's Secret of secret environment values (none: nothing).
  Status CreateAttemptSecret(const backend::LaunchSpec& spec, const std::string& ns,
                             const std::string& name, const nlohmann::json& owner_refs);
  //! One reconciler pass over serving attempt `a` (mu_ held); `deploys` the namespace's cache.
  //! Merge patches to send once the lock is released go to `patches` (path, patch).
  void ReconcileServing(Attempt* a, const std::map<std::string, nlohmann::json>& deploys,
                        std::vector<backend::AttemptEvent>* events,
                        std::vector<std::pair<std::string, nlohmann::json>>* patches);
  //! Rolls serving attempt `attempt_id`'s objects back to the version that served before it
  //! took them over (the rollback annotation: labels, owners, spec; an HPA re-created or
  //! deleted as it was), no lock held. Returns that version's attempt id, "" when there is
  //! none (a first version: nothing to go back to), CONFLICT when the objects are not this
  //! attempt's, or the API's error.
  Result<std::string> RollBackServing(const std::string& ns, const std::string& name,
                                      const std::string& attempt_id);
  //! Deletes a serving attempt's Deployment, Service and HPA (no lock held). True when the
  //! Deployment is gone (deleted now, or absent).
  bool DeleteServingObjects(const std::string& ns, const std::string& name, int64_t grace_ms);
  Status EnsureRunObjects(const backend::LaunchSpec& spec, const std::string& ns,
                          std::string* owner_uid);
  std::string InputUriFor(const backend::LaunchSpec& spec, const std::string& dep_step,
                          const std::string& ns);
  //! Starts the list+watch of `collection` (PodsPath / DeploymentsPath of a namespace).
  void EnsureWatcher(const std::string& collection);
  Informer* InformerFor(const std::string& collection);
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
  std::map<std::string, std::unique_ptr<Watcher>> watchers_;  // GUARDED_BY(mu_): by collection
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
