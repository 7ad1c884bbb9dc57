// A Backend that runs serving steps (LaunchSpec::serving) as replica sets behind HAProxy
// (replica_set.h) and hands everything else to the backend it wraps. Replicas are attempts
// of the wrapped backend, so they run exactly like batch steps; their exits, events and usage
// samples are routed to their set and never reach the engine. The engine sees one attempt
// per serving step that runs until it is stopped (cancel), fails (never ready) or is
// superseded, plus the set's events (ServingReady, ScaledUp, ScaledDown, ReplicaRestarted,
// ServingNotReady, Superseded).
//
// Services: the sets of one namespace/workload/step are one service. A new version's set
// (a new submission of the name, or a rollback) starts on the running set's frontend with as
// many replicas as it runs; once they are ready the older sets are superseded (they drain
// and end succeeded), so the endpoint never changes and never lacks a ready replica. A new
// version whose spec fixes another port gets its own frontend (the endpoint moves).
//
// Recovery: Adopt reads the set's record (serving_state.h) and adopts its HAProxy and
// replicas; without a record the attempt is reported kNodeLost and the engine starts it again.
// Threading: as Backend (any thread).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "serve/replica_set.h"

namespace rsl::serve {

class ServingBackend : public backend::Backend {
 public:
  ServingBackend(std::unique_ptr<backend::Backend> inner, ServeOptions options);
  //! Stops every replica set (replicas and HAProxy) without reporting their exits, unless
  //! LeaveRunning() let them go first.
  ~ServingBackend() override;
  //! The controller exits for a restart (SIGTERM): every replica set records its state and
  //! lets go of HAProxy and its replicas, which keep serving; the next controller adopts them
  //! (Adopt), as after a crash. Returns once every set let go; the backend runs nothing then.
  void LeaveRunning();

  std::string name() const override { return inner_->name(); }
  Result<std::vector<sched::Node>> ListNodes() override { return inner_->ListNodes(); }
  bool QueuesAttempts() const override { return inner_->QueuesAttempts(); }
  std::vector<std::string> DeclaredCapabilities() override {
    return inner_->DeclaredCapabilities();
  }
  Status Launch(const backend::LaunchSpec& spec) override;
  void Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) override;
  void Adopt(const backend::LaunchSpec& spec) override;
  //! HAProxy installed (SERVING_PROXY_MISSING), a fixed port free or the endpoint of the
  //! running version of the same service (SERVING_PORT_IN_USE).
  Status CheckServing(const spec::Workload& workload, const spec::Step& step) override;
  void RunFinished(const std::string& ns, const std::string& workload,
                   const std::string& run_id) override {
    inner_->RunFinished(ns, workload, run_id);
  }
  std::optional<backend::ServingStatus> Serving(const std::string& attempt_id) override;

  backend::Backend* inner() { return inner_.get(); }

 private:
  struct Entry {
    std::shared_ptr<ReplicaSet> set;
    std::string service;  //!< ServiceKey
  };
  //! "<namespace>/<workload>/<step>".
  static std::string ServiceKey(const std::string& ns, const std::string& workload,
                                const std::string& step);
  std::shared_ptr<ReplicaSet> SetOf(const std::string& attempt_id);
  std::shared_ptr<ReplicaSet> OwnerOf(const std::string& replica_id);
  //! Joins the sets that ended (their thread reported the exit and is returning).
  void ReapFinished();
  //! Builds, registers and starts the set of serving attempt `spec`.
  Status StartSet(const backend::LaunchSpec& spec, ReplicaSet::Begin begin);
  //! Set `id` is ready: every older set of its service is superseded.
  void TakeOver(const std::string& id, const std::string& by);

  std::unique_ptr<backend::Backend> inner_;
  ServeOptions opts_;
  std::mutex mu_;
  std::map<std::string, Entry> sets_;                  // GUARDED_BY(mu_): attempt id
  std::map<std::string, std::string> owner_;           // GUARDED_BY(mu_): replica id -> attempt id
  std::vector<std::shared_ptr<ReplicaSet>> finished_;  // GUARDED_BY(mu_): to join
};

}  // namespace rsl::serve
