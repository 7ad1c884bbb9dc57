// A Backend that runs serving steps (LaunchSpec::serving) as replica sets behind HAProxy
// (replica_set.h) and hands everything else to the backend it wraps. Replicas are attempts
// of the wrapped backend, so they run exactly like batch steps; their exits, events and usage
// samples are routed to their set and never reach the engine. The engine sees one attempt
// per serving step that runs until it is stopped (cancel) or fails (never ready), plus the
// set's events (ServingReady, ScaledUp, ScaledDown, ReplicaRestarted, ServingNotReady).
//
// Recovery: a serving attempt is not adopted; Adopt reports it kNodeLost so that the engine
// starts it again (HAProxy died with the process that ran it).
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
  //! Stops every replica set (replicas and HAProxy) without reporting their exits.
  ~ServingBackend() override;

  std::string name() const override { return inner_->name(); }
  Result<std::vector<sched::Node>> ListNodes() override { return inner_->ListNodes(); }
  bool QueuesAttempts() const override { return inner_->QueuesAttempts(); }
  std::vector<std::string> DeclaredCapabilities() override {
    return inner_->DeclaredCapabilities();
  }
  Status Launch(const backend::LaunchSpec& spec) override;
  void Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) override;
  void Adopt(const backend::LaunchSpec& spec) override;
  //! HAProxy installed (SERVING_PROXY_MISSING), a fixed port free (SERVING_PORT_IN_USE).
  Status CheckServing(const spec::Step& step) override;
  std::optional<backend::ServingStatus> Serving(const std::string& attempt_id) override;

  backend::Backend* inner() { return inner_.get(); }

 private:
  std::shared_ptr<ReplicaSet> SetOf(const std::string& attempt_id);
  std::shared_ptr<ReplicaSet> OwnerOf(const std::string& replica_id);
  //! Joins the sets that ended (their thread reported the exit and is returning).
  void ReapFinished();

  std::unique_ptr<backend::Backend> inner_;
  ServeOptions opts_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<ReplicaSet>> sets_;  // GUARDED_BY(mu_): attempt id
  std::map<std::string, std::string> owner_;           // GUARDED_BY(mu_): replica id -> attempt id
  std::vector<std::shared_ptr<ReplicaSet>> finished_;  // GUARDED_BY(mu_): to join
};

}  // namespace rsl::serve
