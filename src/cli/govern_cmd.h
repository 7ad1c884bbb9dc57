// seedctl advise | cost | policy | k8s (docs/govern.md): the flags of each command and the
// function that runs it. govern_cmd.cc holds advise, cost and policy; govern_k8s_cmd.cc the
// Kubernetes audits.
//
// Audits (k8s *, advise precision) print findings as a table, JSON (-o json) or SARIF 2.1.0
// (-o sarif) and end with exit 0 clean, 1 error (the tool failed), 2 warnings/notes only with
// --strict, 3 findings at error severity. Functions print to stdout/stderr and end a command
// that does not exit 0 by throwing Exit (cli.h). An input with an unexpected shape (a field of
// the wrong type deep inside a manifest) may throw a JSON or YAML exception: the commands are
// bound through BindSafely, which turns it into INVALID_ARGUMENT.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"
#include "govern/qos.h"

namespace rsl::cli {

// ---- audits ------------------------------------------------------------------------------

//! The flags every audit has.
struct AuditFlags {
  std::vector<std::string> files;  //!< manifests, JSON dumps or directories of them
  std::string output = "table";    //!< table | json | sarif
  bool strict = false;             //!< exit 2 when only warnings or notes are found
};

struct K8sQosFlags : AuditFlags {
  double ratio = govern::kDefaultRatioThreshold;  //!< flag limit/request ratios above this
  std::string node_memory = "8Gi";                //!< for Burstable oom_score_adj
};
//! QoS class, oom_score_adj, eviction risk and seedance.qos/* annotations per workload.
void RunK8sQos(const K8sQosFlags& flags);

//! Missing requests/limits/probes and autoscaling mistakes.
void RunK8sLint(const AuditFlags& flags);

struct K8sQosRulesFlags {
  std::string for_duration = "5m";  //!< how long a violation lasts before it fires
};
//! Prints the Prometheus alerting rules (always exit 0).
void RunK8sQosRules(const K8sQosRulesFlags& flags);

struct K8sQosCheckFlags : AuditFlags {
  std::string metrics;  //!< JSON file of /api/v1/query responses
};
void RunK8sQosCheck(const K8sQosCheckFlags& flags);

struct K8sCrdDiffFlags : AuditFlags {
  std::string old_path;
  std::string new_path;
};
//! Breaking changes between two versions of CRDs (`files` is unused).
void RunK8sCrdDiff(const K8sCrdDiffFlags& flags);

struct K8sShadowPodsFlags : AuditFlags {
  std::string now;  //!< RFC 3339; "" = the current time
  std::string terminating_limit = "10m";
};
void RunK8sShadowPods(const K8sShadowPodsFlags& flags);

struct K8sCrdAuditFlags : AuditFlags {
  std::string log;   //!< kube-apiserver log file
  std::string crds;  //!< kubectl get crd -o json, or YAML manifests
};
//! Accesses to unregistered custom resources (`files` is unused).
void RunK8sCrdAudit(const K8sCrdAuditFlags& flags);

//! Custom resources pointing into other namespaces, checked against that namespace.
void RunK8sTenancy(const AuditFlags& flags);

// ---- advise ------------------------------------------------------------------------------

struct AdviseMemoryFlags {
  double params = 0;
  int64_t gpus = 1, gpus_per_node = 8;
  int zero = -1;  //!< -1: every stage
  std::string offload = "none", precision = "fp16", output = "table", emit, recompute = "none";
  double largest_layer = 0;
  bool zero_init = false;
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, micro_batch = 0;
};
//! Memory per GPU and per node for ZeRO stages 0-3 (or the DeepSpeed config with --emit).
void RunAdviseMemory(const AdviseMemoryFlags& flags);

//! Checks each file's precision_policy block (an audit).
void RunAdvisePrecision(const AuditFlags& flags);

// ---- cost, policy ------------------------------------------------------------------------

struct CostReportFlags {
  std::string state_dir;  //!< "" = $RSL_STATE_DIR, else ~/.local/state/rsl
  std::string by = "team";
  std::string since;       //!< e.g. 7d, 12h; "" = every attempt
  std::string per_metric;  //!< cost per 0.01 improvement of this metric instead of groups
  bool lower_is_better = false;
  std::string output = "table";  //!< table | json
};
void RunCostReport(const CostReportFlags& flags);

struct CostCompareFlags {
  std::vector<std::string> files;  //!< one AIWorkload per strategy
  std::vector<double> hours;       //!< per file, or one for all
  std::string prices_file;         //!< "" = <state-dir>/prices.yaml
  std::string state_dir;
  std::string output = "table";  //!< table | json
};
void RunCostCompare(const CostCompareFlags& flags);

struct PolicyApplyFlags {
  std::string file;
  std::string state_dir;
};
void RunPolicyApply(const PolicyApplyFlags& flags);

struct PolicyListFlags {
  std::string state_dir;
  std::string output = "table";  //!< table | json
};
void RunPolicyList(const PolicyListFlags& flags);

// ---- shared by the govern command files ----------------------------------------------------

//! Runs `body`; a JSON or YAML exception it throws becomes FailWith(INVALID_ARGUMENT).
void RunSafely(const std::function<void()>& body);

//! Bind (cli.h) through RunSafely.
template <typename Flags>
void BindSafely(CLI::App* cmd, std::shared_ptr<Flags> flags, void (*run)(const Flags&)) {
  cmd->callback([flags = std::move(flags), run] { RunSafely([&] { run(*flags); }); });
}

//! Adds -f (required unless `files_required` is false), -o, --strict and the exit-code footer.
void AddAuditFlags(CLI::App* cmd, AuditFlags* flags, bool files_required = true);
//! Every object of every file (directories recursively); fails on a missing path or a file
//! that does not load; warns on stderr when nothing was loaded.
std::vector<govern::K8sObject> LoadAll(const std::vector<std::string>& files);
//! Prints the report in the chosen format and throws Exit with its exit code unless 0.
void Finish(govern::Report& report, const AuditFlags& flags);

void RegisterK8sCommands(CLI::App& app);  // govern_k8s_cmd.cc

}  // namespace rsl::cli
