// The real Service: the store (reads), the engine (submit, cancel, rollback), the backend
// (nodes) and, when built with the data layer, the datasource catalog (cluster status).
//
// Threading: thread-safe; the parsed-snapshot cache has its own mutex.
// Memory: bounded whatever the history: finished runs are read from the store when asked for;
// only a bounded cache of parsed versions is kept (rsl_api_cached_snapshots in /metrics).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/service.h"
#include "backend/backend.h"
#include "engine/engine.h"
#include "govern/cost.h"
#include "spec/workload.h"
#include "store/store.h"

namespace rsl::api {

class ControllerService : public Service {
 public:
  //! Nothing is owned; everything must outlive the service.
  ControllerService(store::Store* store, engine::Engine* engine, backend::Backend* backend,
                    Metrics* metrics, std::string state_dir);

  Result<Json> Submit(const std::string& yaml, const std::string& source_name,
                      const std::string& base_dir, const NamespaceDecider& decide,
                      const std::string& subject, Errors* errors,
                      const AcceptedWrite& also) override;
  Result<Json> GetWorkload(const std::string& id) override;
  //! Reads only the page (store::StepPageQuery), the counts by phase (store::CountSteps) and,
  //! when the page is not every step, the steps that need attention and the current step:
  //! the cost of a page of a 100,000-step run does not grow with the run.
  Result<Json> GetWorkloadView(const std::string& id, const StepsView& view) override;
  Result<std::string> NamespaceOf(const std::string& id) override;
  Result<Json> ListWorkloads(const std::vector<std::string>& namespaces,
                             const std::string& name) override;
  //! One page read from the store's index per namespace (store::RunPageQuery), then only the
  //! page's versions and steps: a page costs the same at any depth of 100,000 workloads.
  Result<Json> ListWorkloadsPage(const WorkloadListQuery& query) override;
  Result<Json> Describe(const std::string& id) override;
  Result<Json> DescribeView(const std::string& id, const StepsView& view) override;
  Result<Json> Events(const std::string& id) override;
  Result<Json> EventsSince(const std::string& id, int64_t after_seq) override;
  Result<Json> LastEvents(const std::string& id, int64_t limit) override;
  //! The store's last event sequence number: every phase change records an event.
  int64_t ChangeSeq() override;
  Result<std::vector<std::unique_ptr<StepLog>>> OpenLogs(const std::string& id,
                                                         const std::vector<std::string>& steps,
                                                         std::optional<int> replica) override;
  Result<Json> Lineage(const std::string& id, const std::string& format) override;
  Result<Json> Cancel(const std::string& id, const std::string& subject) override;
  Result<Json> Rollback(const std::string& id, const std::string& subject) override;
  Result<Json> ListNodes(const std::string& capability) override;
  Result<Json> ClusterStatus() override;
  Status PutConfigMap(const std::string& ns, const std::string& name,
                      const std::map<std::string, std::string>& data) override;
  Result<Json> ListConfigMaps(const std::string& ns) override;
  Status PutSecret(const std::string& ns, const std::string& name,
                   const std::map<std::string, std::string>& data,
                   std::vector<std::string>* warnings) override;
  Result<Json> ListSecrets(const std::string& ns) override;
  Result<Json> ListDatasources() override;
  Result<Json> ListEnvironments() override;
  void CollectMetrics(Metrics* metrics) override;

 private:
  //! The parsed snapshot of a version (cached: versions are immutable); null if unparsable.
  std::shared_ptr<const spec::Workload> Snapshot(const store::WorkloadVersion& version);
  //! Caches `w` as the snapshot of version `version_id` (null: unparsable).
  void RememberSnapshot(const std::string& version_id, std::shared_ptr<const spec::Workload> w);
  //! The snapshot without its steps (cached too): with a page's steps, the spec a page of a
  //! big run is described with.
  std::shared_ptr<const spec::Workload> SpecSkeleton(const store::WorkloadVersion& version);
  //! Version `id` (store::Store::GetVersion), from a cache of versions without their spec
  //! text (versions are immutable) when it was read before: then spec_json is "".
  Result<store::WorkloadVersion> VersionOf(const std::string& id);
  //! Every secret value of a namespace (for masking).
  std::vector<std::string> SecretValues(const std::string& ns);
  //! An EventList of `events` of a run in namespace `ns`, secret values masked.
  Json EventList(const std::vector<store::Event>& events, const std::string& ns);
  //! The engine's latest usage sample of each step whose attempt is live.
  void AddLiveUsage(std::vector<store::Step>* steps);
  //! The Workload object with the steps of `view` (every step for the default view).
  Result<Json> Object(const std::string& id, const StepsView& view = {});
  //! RunCostJson of run `run_id` from the cost records in the state directory (null when
  //! there are none or they cannot be read).
  Json RunCost(const std::string& run_id);
  //! rsl_serving_* of the running serving steps, from the backend's replica sets.
  void CollectServingMetrics(const std::vector<store::Run>& runs, Metrics* metrics);

  store::Store* store_;
  engine::Engine* engine_;
  backend::Backend* backend_;
  Metrics* metrics_;
  std::string state_dir_;

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const spec::Workload>> snapshots_;  // GUARDED_BY(mu_)
  std::map<std::string, std::shared_ptr<const spec::Workload>> skeletons_;  // GUARDED_BY(mu_)
  std::map<std::string, store::WorkloadVersion> versions_;  // GUARDED_BY(mu_), no spec_json
  std::unique_ptr<govern::CostStore> costs_;  // GUARDED_BY(mu_), opened at the first read
};

//! The secret values of namespace `ns`, longest first (so a secret that contains another is
//! masked whole): what logs and describe output mask (controller_logs.cc).
std::vector<std::string> SecretValuesOf(store::Store* store, const std::string& ns);

}  // namespace rsl::api
