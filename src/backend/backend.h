// The Backend interface: the only place that knows how a step becomes a running thing
// (a local process group, a Slurm job, later a Kubernetes Pod). The engine decides (what to
// run, when, where); a backend carries the decision out and reports what happened.
//
// The Slurm backend implements it too. Extend it if needed; do not break what other
// backends rely on.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "sched/node.h"
#include "spec/workload.h"

namespace rsl::backend {

//! What a serving step's attempt needs beyond a batch step's (spec.md "Serving steps"): the
//! attempt is then a set of replicas behind one endpoint, run until it is stopped.
struct ServingLaunch {
  spec::Autoscaling autoscaling;  //!< min/max replicas, target, scale-down delay
  spec::ReadinessProbe readiness;
  std::optional<int64_t> port;  //!< the endpoint's port; unset: allocated
  int64_t ready_timeout_ms = 300'000;
};

//! A registry login from spec.imagePullSecrets (keys USERNAME, PASSWORD).
struct PullCredential {
  std::string username;
  std::string password;  //!< a secret: never in messages, logs or the launch record
};

//! Everything needed to start one attempt of one step.
struct LaunchSpec {
  std::string attempt_id;  //!< unique per attempt: <run_id>/<step>/<attempt>
  std::string run_id;
  std::string version_id;  //!< the workload version the run runs (wl-...)
  std::string workload_name;
  std::string namespace_;
  std::string step;
  int attempt = 1;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  //!< complete environment (not inherited)
  std::vector<std::string> secret_values;  //!< to mask (***) in captured logs
  std::string workdir;  //!< the backend creates it (mkdir -p) before the step starts
  //! Further directories the backend creates (mkdir -p) before the step starts: its
  //! RSL_OUTPUT staging. The engine creates nothing per attempt itself (directory creation
  //! is slow on some file systems and belongs off the engine's loop thread).
  std::vector<std::string> make_dirs;
  //! Directories the step may read where isolation "namespace" (identity.h) hides the state
  //! and runs directories: its dependencies' outputs.
  std::vector<std::string> read_dirs;
  //! The backend creates the parent directories of log_path and exit_file when missing (the
  //! step's RSL_METRICS_FILE and RSL_PROGRESS_FILE live beside them).
  std::string log_path;   //!< stdout+stderr of the step
  std::string exit_file;  //!< the backend writes the exit record here (crash recovery)
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;  //!< 0 = no limit
  int64_t gpus = 0;
  std::vector<std::string> capabilities;
  std::optional<int64_t> timeout_ms;  //!< the backend may enforce it too (Slurm --time)
  std::string node;                   //!< placement chosen by the engine; "" = the backend decides
  //! Nodes that already hold replicas of the same serving step: a backend that places
  //! attempts itself (Slurm) keeps this one off them when another node can take it now
  //! (anti-affinity, best effort: never a reason to wait).
  std::vector<std::string> spread_from;
  std::map<std::string, std::string> labels;  //!< namespace/team/... for accounting
  //! Set for a serving step: a backend that serves (serve::ServingBackend) runs replicas.
  std::optional<ServingLaunch> serving;
  //! For a step with an image: the logins of spec.imagePullSecrets by registry, as references
  //! spell it ("127.0.0.1:5000", "docker.io"), for a backend that pulls the image. Never
  //! written to the launch record (the passwords are in secret_values too).
  std::map<std::string, PullCredential> pull_credentials;
};

//! How an attempt ended.
enum class ExitKind {
  kSucceeded,  //!< exit 0
  kFailed,     //!< non-zero exit or killed by a signal (not ours)
  kOomKilled,  //!< exceeded its memory limit
  kTimedOut,   //!< killed by a time limit (ours or the scheduler's)
  kCancelled,  //!< killed because we asked
  kNodeLost,   //!< the node went away: not the step's fault
};
const char* ExitKindName(ExitKind kind);

struct Usage {
  int64_t wall_ms = 0;
  int64_t cpu_ms = 0;  //!< user + system
  int64_t peak_memory_bytes = 0;
  //! The highest CPU rate over one usage sample interval (rsl-shim: 1 s), or the average when
  //! higher; 1000 = one core busy. 0: not sampled (Slurm).
  int64_t peak_cpu_millicores = 0;
};

struct AttemptExit {
  std::string attempt_id;
  ExitKind kind = ExitKind::kFailed;
  int exit_code = -1;   //!< when it exited
  int signal = 0;       //!< when a signal ended it
  std::string node;     //!< where it ran
  std::string message;  //!< e.g. "memory limit 64Mi exceeded (cgroup v1)"
  //! A failure's stable code when the backend knows better than the exit kind (a serving
  //! step never ready: SERVING_NOT_READY); "" = from the kind (STEP_FAILED, ...).
  std::string code;
  Usage usage;
  //! The backend saw the attempt's working directory empty when it ended (the local
  //! supervisor looks, to keep the directory as a spare): the step left no file there, so
  //! RSL_METRICS_FILE and RSL_PROGRESS_FILE, which are in it, need not be looked for.
  bool workdir_empty = false;
};

//! Something worth an event while an attempt runs (e.g. "Started", which limit mechanism was
//! used, Slurm's job id, the node it landed on).
struct AttemptEvent {
  std::string attempt_id;
  spec::EventReason reason = spec::EventReason::kStarted;
  std::string message;
  std::string node;
  bool warning = false;  //!< recorded as a Warning event
};

//! One replica of a serving attempt, as `seedctl workload status` shows it.
struct ServingReplica {
  int index = 0;
  std::string node;
  int port = 0;
  std::string state;  //!< Starting | Ready | NotReady | Draining | Restarting
  int restarts = 0;
  double utilization = 0;  //!< fraction of its request (1.0 = 100 %)
};

//! One point of a serving attempt's recent history: at each autoscaler evaluation.
struct ServingSample {
  int64_t time_ms = 0;     //!< wall clock
  double utilization = 0;  //!< average over ready replicas, fraction of the request
  int ready_replicas = 0;
  int desired_replicas = 0;  //!< after that evaluation's decision
};

//! A serving attempt's state now (kept in memory by the backend that serves it).
struct ServingStatus {
  std::string endpoint;  //!< http://host:port
  int replicas = 0;      //!< running (any state)
  int ready_replicas = 0;
  int desired_replicas = 0;
  double utilization = 0;  //!< average over ready replicas, fraction of the request
  int64_t last_scale_time_ms = 0;
  int64_t requests_total = 0;        //!< HAProxy's frontend counter
  int64_t request_errors_total = 0;  //!< 5xx answered by the frontend
  std::vector<ServingReplica> replica_list;
  //! The latest evaluations, oldest first (at most serve's kServingHistorySamples).
  std::vector<ServingSample> history;
};

//! A live sample of a running attempt's resource use so far (backends that can: the local
//! one, about every second from the attempt's cgroup, else from /proc of its process group).
struct AttemptUsage {
  std::string attempt_id;
  Usage usage;  //!< wall time, CPU time and peak memory so far
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  //! Node inventory (with current use where the backend knows it).
  virtual Result<std::vector<sched::Node>> ListNodes() = 0;

  //! True for a backend that hands attempts to a scheduler with a queue of its own (Slurm):
  //! a launched attempt waits there until the backend reports it running (an AttemptEvent
  //! with reason kRunning and its node), and the scheduler, not the engine, decides where
  //! and when it runs.
  virtual bool QueuesAttempts() const { return false; }

  //! Capabilities the backend's nodes declare beyond the built-in catalog's (Slurm Features
  //! such as `cpu_only`), as last seen, without asking anyone: spec validation accepts them
  //! (admission then checks them against the inventory). Default: none.
  virtual std::vector<std::string> DeclaredCapabilities() { return {}; }

  //! Starts an attempt; returns once it is launched (or queued, on a scheduler). The exit
  //! is reported later through the exit callback. Errors: the attempt could not be started.
  virtual Status Launch(const LaunchSpec& spec) = 0;

  //! Asks an attempt to stop: SIGTERM (or scancel) now, SIGKILL after `grace_ms`. Reported as
  //! kCancelled, or kTimedOut when `timed_out` is set.
  virtual void Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) = 0;

  //! After a controller restart: is this attempt (launched by an earlier process) still alive?
  //! If so the backend watches it again and reports its exit as usual. If it ended while we
  //! were away, the backend reports its recorded exit (from spec.exit_file) if any, or kNodeLost.
  virtual void Adopt(const LaunchSpec& spec) = 0;

  //! Whether this backend can run serving step `step` of `workload` now (a proxy to front
  //! it, its port free, or held by the running version of the same workload that it will
  //! take over). Default: it cannot (SPEC_INVALID naming the backend).
  virtual Status CheckServing(const spec::Workload& /*workload*/, const spec::Step& step) {
    return Error("SPEC_INVALID",
                 "the " + name() + " backend cannot run serving step '" + step.name + "'")
        .Hint("run it through rsl-controller or seedctl run, which front replicas with HAProxy");
  }
  //! The run ended (whatever its outcome) and its outputs are committed or discarded: a
  //! backend that made cluster objects for it (Kubernetes) deletes them. Default: nothing.
  virtual void RunFinished(const std::string& /*namespace_*/, const std::string& /*workload*/,
                           const std::string& /*run_id*/) {}
  //! A serving attempt's status, or nothing (unknown attempt, batch attempt, not serving).
  virtual std::optional<ServingStatus> Serving(const std::string& /*attempt_id*/) {
    return std::nullopt;
  }

  //! Callbacks, called from backend threads. Set before the first Launch.
  std::function<void(const AttemptExit&)> on_exit;
  std::function<void(const AttemptEvent&)> on_event;
  //! Optional: live samples of running attempts, from a backend thread, before the exit.
  std::function<void(const AttemptUsage&)> on_usage;
  //! Optional: the node inventory anew, from a backend thread, whenever the backend read it
  //! (a scheduler's nodes change state and use while the engine runs).
  std::function<void(const std::vector<sched::Node>&)> on_nodes;
};

}  // namespace rsl::backend
