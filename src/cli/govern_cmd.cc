// seedctl advise | cost | policy | k8s: the governance toolkit (docs/govern.md).
//
// Audits (k8s *, advise precision) print findings as a table, JSON (-o json) or SARIF 2.1.0
// (-o sarif) and exit 0 clean, 1 error (the tool failed), 2 warnings/notes only with
// --strict, 3 findings at error severity.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
#include <functional>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/table.h"
#include "govern/cost.h"
#include "govern/crd_audit.h"
#include "govern/crd_diff.h"
#include "govern/lint.h"
#include "govern/memory.h"
#include "govern/policy.h"
#include "govern/precision.h"
#include "govern/qos.h"
#include "govern/qos_rules.h"
#include "govern/shadow_pods.h"
#include "govern/tenancy.h"

namespace rsl::cli {
namespace {

using nlohmann::json;
using namespace rsl::govern;  // NOLINT

constexpr char kExitCodesHelp[] =
    "Exit codes: 0 clean (warnings and notes allowed), 1 the tool failed, 2 warnings or notes "
    "with --strict, 3 findings at error severity.";

std::string StateDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("RSL_STATE_DIR");
  if (env != nullptr && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.local/state/rsl";
}

void AddStateDir(CLI::App* cmd, std::string* state_dir) {
  cmd->add_option("--state-dir", *state_dir,
                  "state directory (default: $RSL_STATE_DIR or ~/.local/state/rsl)");
}

// Wraps a command's body: an input with an unexpected shape (a field of the wrong type deep
// inside a manifest or policy) becomes an INVALID_ARGUMENT error, never a crash.
template <typename F>
std::function<void()> Safely(F body) {
  return [body] {
    try {
      body();
    } catch (const nlohmann::json::exception& e) {
      FailWith(Error(codes::kInvalidArgument, std::string("malformed input: ") + e.what())
                   .Hint("a field has an unexpected type; check the file against the Kubernetes API"));
    } catch (const YAML::Exception& e) {
      FailWith(Error(codes::kInvalidArgument, "malformed input: " + e.msg)
                   .At(SourcePos{"", e.mark.line + 1, e.mark.column + 1})
                   .Hint("a field has an unexpected type"));
    }
  };
}

std::string ToUpperAscii(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// ---- audits ------------------------------------------------------------------------------

struct AuditFlags {
  std::vector<std::string> files;
  std::string output = "table";
  bool strict = false;
};

void AddAuditFlags(CLI::App* cmd, AuditFlags* f, bool files_required = true) {
  auto* opt = cmd->add_option("-f,--filename", f->files,
                              "manifest, JSON dump or directory of them (repeatable)");
  if (files_required) opt->required();
  cmd->add_option("-o,--output", f->output, "table (default), json or sarif")
      ->check(CLI::IsMember({"table", "json", "sarif"}));
  cmd->add_flag("--strict", f->strict, "exit 2 when only warnings or notes are found");
  cmd->footer(kExitCodesHelp);
}

std::vector<K8sObject> LoadAll(const std::vector<std::string>& files) {
  std::vector<K8sObject> all;
  for (const auto& f : files) {
    if (!PathExists(f)) {
      FailWith(Error(codes::kIoError, "no such file or directory").Value(f).At(SourcePos{f, 0, 0}).Hint("check the -f path"));
    }
    auto objs = LoadObjects(f);
    if (!objs.ok()) FailWith(objs.error());
    for (auto& o : *objs) all.push_back(std::move(o));
  }
  return all;
}

// Prints the report in the chosen format and ends with its exit code. `extra_json` (table
// objects) is printed before the findings for -o table only.
void Finish(Report& report, const AuditFlags& f) {
  report.Sort();
  if (f.output == "json") {
    std::cout << report.RenderJson();
  } else if (f.output == "sarif") {
    std::cout << report.RenderSarif();
  } else {
    std::cout << report.RenderTable();
  }
  int code = report.ExitCode(f.strict);
  if (code != 0) throw Exit{code};
}

void RegisterK8s(CLI::App& app) {
  auto* k8s = app.add_subcommand("k8s", "Kubernetes audits from manifests, dumps and logs (no cluster needed)");
  k8s->require_subcommand(1);

  // qos
  {
    auto f = std::make_shared<AuditFlags>();
    auto ratio = std::make_shared<double>(kDefaultRatioThreshold);
    auto node_mem = std::make_shared<std::string>("8Gi");
    auto* c = k8s->add_subcommand(
        "qos", std::string("QoS class as Kubernetes computes it, kubelet oom_score_adj, eviction "
                           "risk, seedance.qos/* annotations as cgroup v2 settings."));
    AddAuditFlags(c, f.get());
    c->add_option("--ratio", *ratio, "flag limit/request ratios above this (default 4)");
    c->add_option("--node-memory", *node_mem, "node memory capacity for Burstable oom_score_adj (default 8Gi)");
    c->callback(Safely([=] {
      auto mem = ParseQuantity(*node_mem);
      if (!mem.ok() || *mem <= 0) {
        FailWith(Error(codes::kInvalidArgument, "invalid --node-memory").Path("--node-memory").Value(*node_mem).Hint("e.g. 64Gi"));
      }
      QosOptions opt;
      opt.ratio_threshold = *ratio;
      opt.node_memory_bytes = *mem;
      Report report("k8s qos", QosRules());
      auto results = AnalyzeQos(LoadAll(f->files), opt, &report);
      if (f->output == "json") {
        json arr = json::array();
        for (const auto& r : results) arr.push_back(r.ToJson());
        std::cout << arr.dump(2) << "\n";
        int code = report.ExitCode(f->strict);
        if (code != 0) throw Exit{code};
        return;
      }
      if (f->output == "table") {
        Table t({"KIND", "NAMESPACE", "NAME", "QOS", "SOURCE", "OOM_SCORE_ADJ", "CGROUP (ANNOTATIONS)"});
        for (const auto& r : results) {
          std::vector<std::string> oom, cg;
          for (const auto& c2 : r.containers) oom.push_back(c2.name + "=" + std::to_string(c2.oom_score_adj));
          for (const auto& [k, v] : r.annotation_cgroup) cg.push_back(k + "=" + v);
          t.AddRow({r.object.kind, r.object.namespace_.empty() ? "default" : r.object.namespace_,
                    r.object.name, r.qos_class.empty() ? "?" : r.qos_class,
                    r.from_status ? "status" : "computed", Join(oom, ","), Join(cg, " ")});
        }
        std::cout << t.Render() << "\n";
      }
      Finish(report, *f);
    }));
  }
  // lint
  {
    auto f = std::make_shared<AuditFlags>();
    auto* c = k8s->add_subcommand(
        "lint", std::string("Missing requests/limits/probes, HPA targets that do not resolve, "
                            "HPA-managed fixed replicas, common autoscaling mistakes."));
    AddAuditFlags(c, f.get());
    c->callback(Safely([=] {
      Report report("k8s lint", LintRules());
      Lint(LoadAll(f->files), &report);
      Finish(report, *f);
    }));
  }
  // qos-rules
  {
    auto for_d = std::make_shared<std::string>("5m");
    auto* c = k8s->add_subcommand("qos-rules",
                                  "Prometheus alerting rules with the Seedance QoS thresholds "
                                  "(Guaranteed: CPU > 110% of request, memory > 95% of limit; "
                                  "Burstable: CPU > 150%, working set > 90% of limit)");
    c->add_option("--for", *for_d, "how long a violation lasts before it fires (default 5m)");
    c->callback(Safely([=] { std::cout << PrometheusQosRules(*for_d); }));
  }
  // qos-check
  {
    auto f = std::make_shared<AuditFlags>();
    auto metrics = std::make_shared<std::string>();
    auto* c = k8s->add_subcommand(
        "qos-check",
        std::string("Compare manifests with a Prometheus query export: {\"cpu\": <response>, "
                    "\"memory_usage\": ..., \"memory_working_set\": ...}."));
    AddAuditFlags(c, f.get());
    c->add_option("--metrics", *metrics, "JSON file of /api/v1/query responses")->required();
    c->callback(Safely([=] {
      auto text = ReadFile(*metrics);
      if (!text.ok()) FailWith(text.error());
      Report report("k8s qos-check", QosCheckRules());
      Status st = CheckQos(LoadAll(f->files), *text, *metrics, &report);
      if (!st.ok()) FailWith(st.error());
      Finish(report, *f);
    }));
  }
  // crd-diff
  {
    auto f = std::make_shared<AuditFlags>();
    auto old_path = std::make_shared<std::string>();
    auto new_path = std::make_shared<std::string>();
    auto* c = k8s->add_subcommand(
        "crd-diff", std::string("Breaking changes between two versions of CRDs (OLD NEW)."));
    c->add_option("OLD", *old_path, "the CRDs before")->required();
    c->add_option("NEW", *new_path, "the CRDs after")->required();
    AddAuditFlags(c, f.get(), false);
    c->callback(Safely([=] {
      Report report("k8s crd-diff", CrdDiffRules());
      DiffCrds(LoadAll({*old_path}), LoadAll({*new_path}), &report);
      Finish(report, *f);
    }));
  }
  // shadow-pods
  {
    auto f = std::make_shared<AuditFlags>();
    auto now = std::make_shared<std::string>();
    auto limit = std::make_shared<std::string>("10m");
    auto* c = k8s->add_subcommand(
        "shadow-pods",
        std::string("Pods stuck Terminating, or owned by absent / other-namespace owners, and "
                    "the resources they still hold."));
    AddAuditFlags(c, f.get());
    c->add_option("--now", *now, "evaluate at this RFC 3339 time (default: now)");
    c->add_option("--terminating-limit", *limit, "Terminating longer than this is stuck (default 10m)");
    c->callback(Safely([=] {
      ShadowOptions opt;
      opt.now_unix = static_cast<int64_t>(std::time(nullptr));
      if (!now->empty()) {
        auto t = ParseRfc3339(*now);
        if (!t.ok()) FailWith(Error(t.error()).Path("--now"));
        opt.now_unix = *t;
      }
      auto lim = ParseSince(*limit);
      if (!lim.ok()) FailWith(Error(lim.error()).Path("--terminating-limit"));
      opt.terminating_limit_s = *lim / 1000;
      Report report("k8s shadow-pods", ShadowRules());
      ShadowSummary s = FindShadowPods(LoadAll(f->files), opt, &report);
      if (f->output == "table" && !s.pods.empty()) {
        Table t({"NAMESPACE", "POD", "NODE", "CPU", "MEMORY", "GPU", "REASONS"});
        for (const auto& p : s.pods) {
          t.AddRow({p.object.namespace_, p.object.name, p.node, FormatCpu(p.cpu_cores),
                    FormatMemory(p.memory_bytes), Fixed(p.gpus, 0), Join(p.reasons, ",")});
        }
        std::cout << t.Render() << "held: cpu " << FormatCpu(s.cpu_cores) << ", memory "
                  << FormatMemory(s.memory_bytes) << ", gpu " << Fixed(s.gpus, 0) << "\n\n";
      }
      Finish(report, *f);
    }));
  }
  // crd-audit
  {
    auto f = std::make_shared<AuditFlags>();
    auto log = std::make_shared<std::string>();
    auto crds = std::make_shared<std::string>();
    auto* c = k8s->add_subcommand(
        "crd-audit",
        std::string("Accesses to unregistered custom resources in kube-apiserver logs, "
                    "compared with the registered CRDs."));
    c->add_option("--log", *log, "kube-apiserver log file")->required();
    c->add_option("--crds", *crds, "kubectl get crd -o json (or YAML manifests)")->required();
    AddAuditFlags(c, f.get(), false);
    c->callback(Safely([=] {
      auto text = ReadFile(*log);
      if (!text.ok()) FailWith(text.error());
      auto accesses = ExtractUnregisteredAccesses(*text);
      Report report("k8s crd-audit", CrdAuditRules());
      AuditCrdAccesses(&accesses, LoadAll({*crds}), *log, &report);
      if (f->output == "table" && !accesses.empty()) {
        Table t({"GROUP", "VERSION", "RESOURCE", "COUNT", "FIRST SEEN", "LAST SEEN", "STATUS", "REGISTERED"});
        for (const auto& a : accesses) {
          t.AddRow({a.group, a.version, a.resource, std::to_string(a.count), a.first_seen,
                    a.last_seen, a.status, Join(a.registered_versions, ",")});
        }
        std::cout << t.Render() << "\n";
      }
      Finish(report, *f);
    }));
  }
  // tenancy
  {
    auto f = std::make_shared<AuditFlags>();
    auto* c = k8s->add_subcommand(
        "tenancy",
        std::string("Custom resources pointing into other namespaces, checked against that "
                    "namespace's LimitRange, ResourceQuota and the egress NetworkPolicies."));
    AddAuditFlags(c, f.get());
    c->callback(Safely([=] {
      Report report("k8s tenancy", TenancyRules());
      AuditTenancy(LoadAll(f->files), &report);
      Finish(report, *f);
    }));
  }
}

// ---- advise ------------------------------------------------------------------------------

struct MemoryFlags {
  double params = 0;
  int64_t gpus = 1, gpus_per_node = 8;
  int zero = -1;
  std::string offload = "none", precision = "fp16", output = "table", emit, recompute = "none";
  double largest_layer = 0;
  bool zero_init = false;
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, micro_batch = 0;
};

void RegisterAdvise(CLI::App& app) {
  auto* adv = app.add_subcommand("advise", "training memory and precision advice");
  adv->require_subcommand(1);
  auto m = std::make_shared<MemoryFlags>();
  auto* mem = adv->add_subcommand(
      "memory",
      "Model-state memory per GPU and CPU memory per node for ZeRO stages 0-3 (ZeRO paper "
      "formulas without offload, DeepSpeed's estimators with offload), plus activations "
      "(Korthikanti et al. 2022) when --layers --hidden --heads --seq --micro-batch are given.");
  mem->add_option("--params", m->params, "total parameters, e.g. 7.5e9")->required();
  mem->add_option("--gpus", m->gpus, "data-parallel GPUs in total")->required();
  mem->add_option("--gpus-per-node", m->gpus_per_node, "GPUs per node (default 8)");
  mem->add_option("--zero", m->zero, "only this ZeRO stage (0-3)");
  mem->add_option("--offload", m->offload, "none (default), optimizer, optimizer+params")
      ->check(CLI::IsMember({"none", "optimizer", "optimizer+params"}));
  mem->add_option("--precision", m->precision, "fp16 (default), bf16 or fp32");
  mem->add_option("--largest-layer", m->largest_layer, "parameters of the largest layer (ZeRO-3 offload)");
  mem->add_flag("--zero-init", m->zero_init, "model built under deepspeed.zero.Init");
  mem->add_option("--layers", m->layers, "transformer layers (activations)");
  mem->add_option("--hidden", m->hidden, "hidden size (activations)");
  mem->add_option("--heads", m->heads, "attention heads (activations)");
  mem->add_option("--seq", m->seq, "sequence length (activations)");
  mem->add_option("--micro-batch", m->micro_batch, "micro-batch per GPU (activations)");
  mem->add_option("--recompute", m->recompute, "none (default) or full activation checkpointing")
      ->check(CLI::IsMember({"none", "full"}));
  mem->add_option("-o,--output", m->output, "table (default) or json")->check(CLI::IsMember({"table", "json"}));
  mem->add_option("--emit", m->emit, "deepspeed: print the DeepSpeed config and SEEDANCE_* env for --zero")
      ->check(CLI::IsMember({"deepspeed"}));
  mem->callback(Safely([=] {
    MemoryPlanInput in;
    in.params = m->params;
    in.gpus = m->gpus;
    in.gpus_per_node = m->gpus_per_node;
    if (m->zero >= 0 || m->zero < -1) in.stage = m->zero;
    in.offload = m->offload == "optimizer" ? Offload::kOptimizer
                 : m->offload == "optimizer+params" ? Offload::kOptimizerAndParams : Offload::kNone;
    in.precision = m->precision;
    in.largest_layer_params = m->largest_layer;
    in.zero_init = m->zero_init;
    in.layers = m->layers;
    in.hidden = m->hidden;
    in.heads = m->heads;
    in.seq = m->seq;
    in.micro_batch = m->micro_batch;
    in.full_recompute = m->recompute == "full";
    auto plan = PlanMemory(in);
    if (!plan.ok()) FailWith(plan.error());
    if (!m->emit.empty()) {
      if (!in.stage) {
        FailWith(Error(codes::kInvalidArgument, "--emit needs one stage").Path("--zero").Hint("add --zero 2"));
      }
      std::cout << "# DeepSpeed config (ds_config.json)\n" << EmitDeepSpeedConfig(in, *in.stage)
                << "\n# Seedance environment\n" << EmitSeedanceEnv(in, *in.stage);
      return;
    }
    if (m->output == "json") {
      std::cout << MemoryPlanJson(*plan);
      return;
    }
    Table t({"STAGE", "GPU (PER GPU)", "GPU GiB", "CPU (PER NODE)", "CPU GiB", "FORMULA"});
    for (const auto& s : plan->stages) {
      t.AddRow({std::to_string(s.stage), FormatGB(s.gpu_bytes), FormatGiB(s.gpu_bytes),
                FormatGB(s.cpu_bytes), FormatGiB(s.cpu_bytes), s.formula});
    }
    std::cout << t.Render();
    for (const auto& n : plan->notes) std::cout << "note: " << n << "\n";
  }));

  auto pf = std::make_shared<AuditFlags>();
  auto* prec = adv->add_subcommand(
      "precision", std::string("Check a config's precision_policy block (default dtype, per-module "
                               "overrides); warns when embedding or lm_head run in fp16."));
  AddAuditFlags(prec, pf.get());
  prec->callback(Safely([=] {
    Report report("advise precision", PrecisionRules());
    for (const auto& file : pf->files) {
      auto text = ReadFile(file);
      if (!text.ok()) FailWith(text.error());
      auto plan = CheckPrecision(*text, file, &report);
      if (!plan.ok()) FailWith(plan.error());
      if (pf->output == "table") {
        std::cout << file << ": default " << (plan->default_dtype.empty() ? "?" : plan->default_dtype)
                  << ", embedding " << (plan->embedding_dtype.empty() ? "?" : plan->embedding_dtype)
                  << ", lm_head " << (plan->lm_head_dtype.empty() ? "?" : plan->lm_head_dtype) << "\n";
      }
    }
    Finish(report, *pf);
  }));
}

// ---- cost --------------------------------------------------------------------------------

void RegisterCost(CLI::App& app) {
  auto* cost = app.add_subcommand("cost", "cost accounting");
  cost->require_subcommand(1);

  auto state_dir = std::make_shared<std::string>();
  auto by = std::make_shared<std::string>("team");
  auto since = std::make_shared<std::string>();
  auto per_metric = std::make_shared<std::string>();
  auto lower = std::make_shared<bool>(false);
  auto output = std::make_shared<std::string>("table");
  auto* report = cost->add_subcommand(
      "report", "Cost of recorded step attempts grouped by a label, or per 0.01 of a metric's "
                "improvement between runs of a workload (--per-metric)");
  AddStateDir(report, state_dir.get());
  report->add_option("--by", *by, "team (default), project, model, stage, namespace, workload or run");
  report->add_option("--since", *since, "only attempts that ended within this window, e.g. 7d, 12h");
  report->add_option("--per-metric", *per_metric, "cost per 0.01 improvement of this metric (e.g. auc)");
  report->add_flag("--lower-is-better", *lower, "the metric improves downwards (loss, wer)");
  report->add_option("-o,--output", *output, "table (default) or json")->check(CLI::IsMember({"table", "json"}));
  report->callback(Safely([=] {
    std::string dir = StateDir(*state_dir);
    int64_t since_ms = 0;
    if (!since->empty()) {
      auto d = ParseSince(*since);
      if (!d.ok()) FailWith(d.error());
      since_ms = static_cast<int64_t>(std::time(nullptr)) * 1000 - *d;
    }
    auto store = CostStore::Open(dir);
    if (!store.ok()) FailWith(store.error());
    auto records = (*store)->List(since_ms);
    if (!records.ok()) FailWith(records.error());
    auto prices = LoadPriceTable(dir);
    std::string currency = prices.ok() ? prices->currency : "USD";
    if (!per_metric->empty()) {
      auto rows = CostPerMetric(*records, *per_metric, *lower);
      if (*output == "json") {
        json arr = json::array();
        for (const auto& r : rows) {
          json j = {{"workload", r.workload}, {"run", r.run_id}, {"cost", r.run_cost},
                    {"metric", r.metric}, {"currency", currency}};
          if (r.has_previous) {
            j["previous_run"] = r.previous_run_id;
            j["previous_metric"] = r.previous_metric;
          }
          j["cost_per_0.01"] = r.improved ? json(r.cost_per_hundredth) : json(nullptr);
          arr.push_back(j);
        }
        std::cout << json({{"metric", *per_metric}, {"rows", arr}}).dump(2) << "\n";
        return;
      }
      Table t({"WORKLOAD", "RUN", "COST", *per_metric == "" ? "METRIC" : ToUpperAscii(*per_metric), "DELTA",
               currency + " PER 0.01"});
      for (const auto& r : rows) {
        t.AddRow({r.workload, r.run_id, FormatMoney(r.run_cost), Fixed(r.metric, 4),
                  r.has_previous ? Fixed(r.metric - r.previous_metric, 4) : "-",
                  r.improved ? FormatMoney(r.cost_per_hundredth) : (r.has_previous ? "no improvement" : "-")});
      }
      std::cout << t.Render();
      return;
    }
    auto groups = GroupCosts(*records, *by);
    if (!groups.ok()) FailWith(groups.error());
    if (*output == "json") {
      json arr = json::array();
      double total = 0;
      for (const auto& g : *groups) {
        arr.push_back({{"key", g.key}, {"steps", g.steps}, {"gpu_hours", g.gpu_hours},
                       {"cpu_core_hours", g.cpu_core_hours}, {"memory_gib_hours", g.memory_gib_hours},
                       {"gpu_cost", g.gpu_cost}, {"cpu_cost", g.cpu_cost},
                       {"memory_cost", g.memory_cost}, {"total", g.total}});
        total += g.total;
      }
      std::cout << json({{"by", *by}, {"currency", currency}, {"groups", arr}, {"total", total}}).dump(2) << "\n";
      return;
    }
    Table t({ToUpperAscii(*by), "STEPS", "GPU-HOURS", "CPU-CORE-HOURS", "MEM-GIB-HOURS", "COST (" + currency + ")"});
    double total = 0;
    for (const auto& g : *groups) {
      t.AddRow({g.key, std::to_string(g.steps), Fixed(g.gpu_hours, 2), Fixed(g.cpu_core_hours, 2),
                Fixed(g.memory_gib_hours, 2), FormatMoney(g.total)});
      total += g.total;
    }
    std::cout << t.Render() << "total: " << FormatMoney(total) << " " << currency << "\n";
  }));

  auto files = std::make_shared<std::vector<std::string>>();
  auto hours = std::make_shared<std::vector<double>>();
  auto prices_file = std::make_shared<std::string>();
  auto cmp_state = std::make_shared<std::string>();
  auto cmp_out = std::make_shared<std::string>("table");
  auto* cmp = cost->add_subcommand(
      "compare", "Strategy table: hourly cost from prices and each workload's "
                 "resources x hours = total. Pricing kind and device model come from the "
                 "annotations rsl.cost/pricing and rsl.cost/device-model (or a GPU capability).");
  cmp->add_option("-f,--filename", *files, "AIWorkload file per strategy (repeatable)")->required();
  cmp->add_option("--hours", *hours, "training hours per strategy, in -f order (one value = all)")->required();
  cmp->add_option("--prices", *prices_file, "price table YAML (default: <state-dir>/prices.yaml)");
  AddStateDir(cmp, cmp_state.get());
  cmp->add_option("-o,--output", *cmp_out, "table (default) or json")->check(CLI::IsMember({"table", "json"}));
  cmp->callback(Safely([=] {
    Result<PriceTable> prices = Error(codes::kInternal, "unset");
    if (!prices_file->empty()) {
      auto text = ReadFile(*prices_file);
      if (!text.ok()) FailWith(text.error());
      prices = ParsePriceTable(*text, *prices_file);
    } else {
      prices = LoadPriceTable(StateDir(*cmp_state));
    }
    if (!prices.ok()) FailWith(prices.error());
    if (hours->size() != 1 && hours->size() != files->size()) {
      FailWith(Error(codes::kInvalidArgument, "give one --hours per -f (or one for all)")
                   .Path("--hours")
                   .Value(std::to_string(hours->size()) + " for " + std::to_string(files->size()) + " files"));
    }
    Errors errors;
    std::vector<StrategyCost> rows;
    for (size_t i = 0; i < files->size(); ++i) {
      auto s = ReadStrategy((*files)[i]);
      if (!s.ok()) {
        errors.push_back(s.error());
        continue;
      }
      auto c = PriceStrategy(*s, (*hours)[hours->size() == 1 ? 0 : i], *prices);
      if (!c.ok()) {
        errors.push_back(c.error());
        continue;
      }
      rows.push_back(*c);
    }
    if (!errors.empty()) FailWith(errors);
    if (*cmp_out == "json") {
      json arr = json::array();
      for (const auto& r : rows) {
        arr.push_back({{"strategy", r.strategy.name}, {"file", r.strategy.file},
                       {"gpus", r.strategy.gpus}, {"device_model", r.strategy.device_model},
                       {"pricing", r.strategy.pricing}, {"hourly", RoundCents(r.hourly)},
                       {"hours", r.hours}, {"total", RoundCents(r.total)}});
      }
      std::cout << json({{"currency", prices->currency}, {"strategies", arr}}).dump(2) << "\n";
      return;
    }
    Table t({"STRATEGY", "GPUS", "DEVICE", "PRICING", "HOURLY (" + prices->currency + ")", "HOURS",
             "TOTAL (" + prices->currency + ")"});
    for (const auto& r : rows) {
      t.AddRow({r.strategy.name, std::to_string(r.strategy.gpus),
                r.strategy.device_model.empty() ? "-" : r.strategy.device_model, r.strategy.pricing,
                FormatMoney(r.hourly), Fixed(r.hours, 1), FormatMoney(r.total)});
    }
    std::cout << t.Render();
  }));
}

// ---- policy ------------------------------------------------------------------------------

void RegisterPolicy(CLI::App& app) {
  auto* pol = app.add_subcommand("policy", "cost policies enforced on running steps");
  pol->require_subcommand(1);
  auto state_dir = std::make_shared<std::string>();
  auto file = std::make_shared<std::string>();
  auto* apply = pol->add_subcommand(
      "apply", "Validate a cost policy (rules: name, condition, action) and store it; steps "
               "started afterwards are watched by it");
  apply->add_option("-f,--filename", *file, "policy YAML")->required();
  AddStateDir(apply, state_dir.get());
  apply->callback(Safely([=] {
    auto text = ReadFile(*file);
    if (!text.ok()) FailWith(text.error());
    PolicyParse p = ParsePolicy(*text, *file);
    if (!p.ok()) FailWith(p.errors);
    Status st = StorePolicy(StateDir(*state_dir), p.policy, *text);
    if (!st.ok()) FailWith(st.error());
    std::cout << "policy " << p.policy.name << " applied (" << p.policy.rules.size() << " rule(s))\n";
  }));
  auto output = std::make_shared<std::string>("table");
  auto* list = pol->add_subcommand("list", "List the applied policies and their rules");
  AddStateDir(list, state_dir.get());
  list->add_option("-o,--output", *output, "table (default) or json")->check(CLI::IsMember({"table", "json"}));
  list->callback(Safely([=] {
    auto stored = ListPolicies(StateDir(*state_dir));
    if (!stored.ok()) FailWith(stored.error());
    json arr = json::array();
    Table t({"POLICY", "RULE", "CONDITION", "ACTIONS", "APPLIED"});
    for (const auto& s : *stored) {
      PolicyParse p = ParsePolicy(s.yaml, s.source);
      json rules = json::array();
      std::time_t at = static_cast<std::time_t>(s.applied_at_ms / 1000);
      char when[32];
      std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&at));
      for (const auto& r : p.policy.rules) {
        std::vector<std::string> acts;
        for (const auto& a : r.actions) acts.push_back(a.text);
        rules.push_back({{"name", r.name}, {"condition", r.condition}, {"actions", acts}});
        t.AddRow({s.name, r.name, r.condition, Join(acts, "; "), when});
      }
      arr.push_back({{"name", s.name}, {"source", s.source}, {"applied_at", when}, {"rules", rules}});
    }
    if (*output == "json") {
      std::cout << arr.dump(2) << "\n";
    } else {
      std::cout << t.Render();
    }
  }));
}

}  // namespace

void RegisterGovernCommands(CLI::App& app) {
  RegisterAdvise(app);
  RegisterCost(app);
  RegisterPolicy(app);
  RegisterK8s(app);
}

}  // namespace rsl::cli
