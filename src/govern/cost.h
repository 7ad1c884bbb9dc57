// Cost accounting (seed 003 ch.1 and ch.5): what one step attempt cost, the store of those
// records in the state directory's database, reports grouped by label, cost per metric
// improvement, and the strategy comparison table.
//
// Allocation follows OpenCost: a resource's allocation is max(request, measured use), so an
// idle reservation costs what it reserves and an overrun costs what it used.
//   cost = gpus x hours x device price + max(cpu request, cpu used) x hours x core price
//          + max(memory request, peak memory) x hours x GiB price
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/sqlite.h"
#include "base/status.h"
#include "govern/price.h"

namespace rsl::govern {

//! Workload annotations that price its steps: the pricing kind (on-demand | spot | reserved)
//! and the device model to price GPUs as when the node does not say.
inline constexpr char kPricingAnnotation[] = "rsl.cost/pricing";
inline constexpr char kDeviceAnnotation[] = "rsl.cost/device-model";

struct StepUsage {
  int64_t gpus = 0;
  std::string device_model;  //!< as the node reports it; matched against the price table
  std::string pricing = kOnDemand;
  int64_t wall_ms = 0;
  int64_t cpu_request_millis = 0;
  int64_t cpu_used_ms = 0;  //!< user + system CPU time
  int64_t memory_request_bytes = 0;
  int64_t peak_memory_bytes = 0;
};

struct StepCost {
  double hours = 0;
  double cpu_cores = 0;   //!< allocated: max(request, average use)
  double memory_gib = 0;  //!< allocated: max(request, peak)
  double gpus = 0;
  std::string device_model;  //!< the price table's model ("default" when unknown)
  std::string gpu_pricing;   //!< the kind the GPUs were priced at (on-demand on fallback)
  double gpu_cost = 0, cpu_cost = 0, memory_cost = 0, total = 0;
};

//! Pure. Errors: the price table has no price for the device/kind (INVALID_ARGUMENT).
Result<StepCost> ComputeStepCost(const StepUsage& usage, const PriceTable& prices);

//! One stored record (a step attempt).
struct CostRecord {
  int64_t ended_at_ms = 0;
  std::string run_id, workload_id, workload, namespace_, step;
  int attempt = 1;
  std::map<std::string, std::string> labels;  //!< team/project/model/stage and the rest
  std::string pricing, exit_kind, currency = "USD";
  std::string metrics_json = "{}";
  StepCost cost;
};

//! The govern component's tables in <state-dir>/rsl.db. Thread-safe (one connection,
//! guarded by a mutex).
class CostStore {
 public:
  //! Opens the database (a connection of its own) and applies the govern migrations.
  //! Errors: IO_ERROR / INTERNAL.
  static Result<std::unique_ptr<CostStore>> Open(const std::string& state_dir);
  //! The step costs' writer: through the process's shared connection to the state database
  //! (SharedDb, the store's writer), each record committed with the store's next commit
  //! (SharedDb::WriteWithNextCommit). A record is made while the engine builds the turn that
  //! ends its step, so it is durable, or lost, with the step end it prices. Before, a record
  //! on a connection of its own was a transaction of its own, and emptied the store's page
  //! cache. A record that fails to be written later goes to `failed`.
  using Failed = std::function<void(const CostRecord&, const Error&)>;
  static Result<std::unique_ptr<CostStore>> OpenShared(const std::string& state_dir, Failed failed);

  //! Written now, or for a store opened with OpenShared, queued for the store's next commit.
  Status Record(const CostRecord& r);
  //! Records that ended at or after `since_ms`, oldest first.
  Result<std::vector<CostRecord>> List(int64_t since_ms);
  //! The records of run `run_id` (every attempt of its steps), oldest first.
  Result<std::vector<CostRecord>> ListRun(const std::string& run_id);

  Db* db() { return db_->db(); }  // REQUIRES: mu() held where the connection is shared
  std::mutex& mu() { return db_->mu(); }

 private:
  explicit CostStore(std::shared_ptr<SharedDb> db) : db_(std::move(db)) {}
  std::shared_ptr<SharedDb> db_;
  Failed failed_;  // set by OpenShared: records are queued
};

//! The govern component's migrations (also used by the policy store).
const std::vector<std::string>& GovernMigrations();

struct CostGroup {
  std::string key;  //!< label value ("<none>" when unset)
  int64_t steps = 0;
  double gpu_hours = 0, cpu_core_hours = 0, memory_gib_hours = 0;
  double gpu_cost = 0, cpu_cost = 0, memory_cost = 0, total = 0;
};

//! Groups by a label (team|project|model|stage) or by namespace|workload|run.
//! Errors: INVALID_ARGUMENT for another `by` (with a did-you-mean hint).
Result<std::vector<CostGroup>> GroupCosts(const std::vector<CostRecord>& records,
                                          const std::string& by);

//! Cost per 0.01 of a metric's improvement between consecutive runs of each workload
//! (the seed's "$ per 0.01 BLEU").
struct MetricCostRow {
  std::string workload, run_id, previous_run_id;
  double run_cost = 0;
  double metric = 0, previous_metric = 0;
  bool has_previous = false;
  bool improved = false;
  double cost_per_hundredth = 0;  //!< run_cost / ((metric - previous) / 0.01), when improved
};
std::vector<MetricCostRow> CostPerMetric(const std::vector<CostRecord>& records,
                                         const std::string& metric, bool lower_is_better);

//! One strategy of `seedctl cost compare`: what a workload holds per hour.
struct Strategy {
  std::string name;  //!< metadata.name
  std::string file;
  int64_t gpus = 0;
  std::string device_model;
  std::string pricing = kOnDemand;
  double cpu_cores = 0, memory_gib = 0;
};

//! Reads an AIWorkload file's footprint: metadata.name, spec.resources (cpu, memory, gpu
//! count and capabilities; the widest step when steps override them), and the annotations
//! rsl.cost/pricing and rsl.cost/device-model. Errors: SPEC_PARSE_ERROR, INVALID_ARGUMENT.
Result<Strategy> ReadStrategy(const std::string& path);

struct StrategyCost {
  Strategy strategy;
  //! The kind the GPUs were priced at: strategy.pricing, or on-demand when the table has no
  //! such price for the device (a fallback, as for CPU and memory).
  std::string gpu_pricing;
  double hourly = 0, hours = 0, total = 0;
};
Result<StrategyCost> PriceStrategy(const Strategy& s, double hours, const PriceTable& prices);

//! "7d", "12h", "30m" -> ms. Errors: INVALID_ARGUMENT.
Result<int64_t> ParseSince(const std::string& text);

}  // namespace rsl::govern
