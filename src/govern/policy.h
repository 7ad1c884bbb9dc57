// Cost policies (seed 003 ch.5): rules with a name, a condition in the `when` language over
// live step metrics, and actions.
//
//   # cost-policy.yaml
//   metadata: {name: training-cost}          # optional; default: the file's stem
//   rules:
//   - name: high-cost-fallback
//     condition: "loss_plateau_duration > 1800 && gpu_util_avg < 0.3"
//     action: "scale_down_to_1_node; notify_finance_team"
//     keepOutputs: true                      # a `stop` ends the step as a success
//   notify:
//     finance_team: {url: "http://finance.example/hook", retries: 3}
//   metrics: {lossTolerance: 0.001, gpuUtilWindow: 5m}
//
// Actions: stop | stop_as_success | scale_down_to_<N>_node(s) | scale_down_to_<N>_replica(s)
// | notify_<webhook>. Conditions may use the derived metrics below, or `metrics.<key>` for
// the latest value of any key the step writes.
//
// Metrics: a step appends JSON lines to $RSL_METRICS_STREAM, e.g.
//   {"loss": 0.42, "gpu_util": 0.25, "ts": 1718000000.5}
// `ts` (unix seconds) is optional: lines without it are stamped when read.
//   loss_plateau_duration  seconds since the loss last improved by more than lossTolerance
//   gpu_util_avg           mean gpu_util over the last gpuUtilWindow (0..1; >1 read as %)
//   loss, best_loss, gpu_util, step_elapsed (seconds since the first line)
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "expr/expr.h"

namespace rsl::govern {

class CostStore;  // govern/cost.h

inline constexpr double kDefaultLossTolerance = 1e-3;
inline constexpr double kDefaultGpuUtilWindowS = 300;
inline constexpr int kDefaultWebhookRetries = 3;

struct PolicyAction {
  enum class Kind { kStop, kScaleDown, kNotify };
  Kind kind = Kind::kStop;
  bool as_success = false;  //!< kStop: keep outputs, end SUCCEEDED
  int64_t replicas = 1;     //!< kScaleDown
  std::string webhook;      //!< kNotify: name in `notify`
  std::string text;         //!< as written
};

struct PolicyRule {
  std::string name;
  std::string condition;
  std::optional<expr::Expr> expr;
  std::vector<PolicyAction> actions;
  SourcePos pos;
};

struct Webhook {
  std::string url;
  int retries = kDefaultWebhookRetries;
};

struct Policy {
  std::string name;
  std::string source;  //!< file
  std::vector<PolicyRule> rules;
  std::map<std::string, Webhook> webhooks;
  double loss_tolerance = kDefaultLossTolerance;
  double gpu_util_window_s = kDefaultGpuUtilWindowS;
};

//! Parses and checks a policy file: every rule has a unique name, a condition that parses
//! and references only known metrics, and actions that parse and name declared webhooks.
//! All errors are returned (file:line:col, path, value, hint). EXPRESSION_INVALID for
//! conditions, SPEC_INVALID for the rest, SPEC_PARSE_ERROR for YAML.
struct PolicyParse {
  Policy policy;
  Errors errors;
  bool ok() const { return errors.empty(); }
};
PolicyParse ParsePolicy(const std::string& yaml, const std::string& file);

//! Derives the policy metrics from a step's metrics stream. Not thread-safe.
class MetricsWindow {
 public:
  MetricsWindow(double loss_tolerance, double gpu_util_window_s)
      : tolerance_(loss_tolerance), window_s_(gpu_util_window_s) {}
  //! Feeds one line; `now_s` stamps it when it has no `ts`. Malformed lines are counted and
  //! skipped (a step's stray print must not stop accounting).
  void Feed(const std::string& line, double now_s);
  //! The derived metrics at `now_s` (only those known so far).
  std::map<std::string, double> Snapshot(double now_s) const;
  //! The latest value of every numeric key.
  const std::map<std::string, double>& latest() const { return latest_; }
  int64_t malformed_lines() const { return malformed_; }

 private:
  double tolerance_, window_s_;
  std::optional<double> best_loss_;
  double last_improvement_s_ = 0;
  std::optional<double> first_s_;
  std::deque<std::pair<double, double>> gpu_;  // (time, util 0..1)
  std::map<std::string, double> latest_;
  int64_t malformed_ = 0;
};

//! Evaluates a rule's condition over a snapshot (+ latest values as metrics.<key>).
//! Unknown (not yet derived) metrics make the condition false, not an error.
bool ConditionHolds(const PolicyRule& rule, const std::map<std::string, double>& snapshot,
                    const std::map<std::string, double>& latest, std::string* why);

//! The applied policies, in the state directory's database.
Status StorePolicy(const std::string& state_dir, const Policy& policy, const std::string& yaml);
struct StoredPolicy {
  std::string name, source, yaml;
  int64_t applied_at_ms = 0;
};
Result<std::vector<StoredPolicy>> ListPolicies(const std::string& state_dir);
//! The same from an open store (one query; a caller that reads them often keeps it open).
Result<std::vector<StoredPolicy>> ListPolicies(CostStore* store);
//! Parses every stored policy again (they were valid when applied).
Result<std::vector<Policy>> LoadPolicies(const std::string& state_dir);
Result<std::vector<Policy>> ParseStoredPolicies(const std::vector<StoredPolicy>& stored);

//! The derived metric names conditions may use bare.
const std::vector<std::string>& PolicyMetricNames();

}  // namespace rsl::govern
