// seedctl advise | cost | policy: the governance toolkit (docs/govern.md); the k8s audits
// are in govern_k8s_cmd.cc.
#include "cli/govern_cmd.h"

#include <yaml-cpp/yaml.h>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/table.h"
#include "govern/cost.h"
#include "govern/memory.h"
#include "govern/policy.h"
#include "govern/precision.h"

namespace rsl::cli {

using nlohmann::json;
using namespace rsl::govern;  // NOLINT

namespace {

constexpr char kExitCodesHelp[] =
    "Exit codes: 0 clean (warnings and notes allowed), 1 the tool failed, 2 warnings or notes "
    "with --strict, 3 findings at error severity.";

std::string StateDir(const std::string& flag) { return flag.empty() ? DefaultStateDir() : flag; }

std::string ToUpperAscii(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

void RunSafely(const std::function<void()>& body) {
  // An input with an unexpected shape (a field of the wrong type deep inside a manifest or
  // policy) becomes an INVALID_ARGUMENT error, never a crash.
  try {
    body();
  } catch (const nlohmann::json::exception& e) {
    FailWith(
        Error(codes::kInvalidArgument, std::string("malformed input: ") + e.what())
            .Hint("a field has an unexpected type; check the file against the Kubernetes API"));
  } catch (const YAML::Exception& e) {
    FailWith(Error(codes::kInvalidArgument, "malformed input: " + e.msg)
                 .At(SourcePos{"", e.mark.line + 1, e.mark.column + 1})
                 .Hint("a field has an unexpected type"));
  }
}

void AddAuditFlags(CLI::App* cmd, AuditFlags* f, bool files_required) {
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
      FailWith(Error(codes::kIoError, "no such file or directory")
                   .Value(f)
                   .At(SourcePos{f, 0, 0})
                   .Hint("check the -f path"));
    }
    auto objs = LoadObjects(f);
    if (!objs.ok()) FailWith(objs.error());
    for (auto& o : *objs) all.push_back(std::move(o));
  }
  if (all.empty() && !files.empty()) {
    std::cerr << "warning: no Kubernetes object loaded from " << Join(files, ", ")
              << " (files: *.yaml, *.yml, *.json; directories are searched recursively)\n";
  }
  return all;
}

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

// ---- advise ------------------------------------------------------------------------------

void RunAdviseMemory(const AdviseMemoryFlags& f) {
  MemoryPlanInput in;
  in.params = f.params;
  in.gpus = f.gpus;
  in.gpus_per_node = f.gpus_per_node;
  if (f.zero >= 0 || f.zero < -1) in.stage = f.zero;
  in.offload = f.offload == "optimizer"          ? Offload::kOptimizer
               : f.offload == "optimizer+params" ? Offload::kOptimizerAndParams
                                                 : Offload::kNone;
  in.precision = f.precision;
  in.largest_layer_params = f.largest_layer;
  in.zero_init = f.zero_init;
  in.layers = f.layers;
  in.hidden = f.hidden;
  in.heads = f.heads;
  in.seq = f.seq;
  in.micro_batch = f.micro_batch;
  in.full_recompute = f.recompute == "full";
  auto plan = PlanMemory(in);
  if (!plan.ok()) FailWith(plan.error());
  if (!f.emit.empty()) {
    if (!in.stage) {
      FailWith(Error(codes::kInvalidArgument, "--emit needs one stage")
                   .Path("--zero")
                   .Hint("add --zero 2"));
    }
    std::cout << "# DeepSpeed config (ds_config.json)\n"
              << EmitDeepSpeedConfig(in, *in.stage) << "\n# Seedance environment\n"
              << EmitSeedanceEnv(in, *in.stage);
    return;
  }
  if (f.output == "json") {
    std::cout << MemoryPlanJson(*plan);
    return;
  }
  Table t(
      {"STAGE", "GPU (PER GPU)", "GPU GiB", "CPU (PER NODE)", "CPU GiB", "PAPER GPU", "FORMULA"});
  for (const auto& s : plan->stages) {
    t.AddRow({std::to_string(s.stage), FormatGB(s.gpu_bytes), FormatGiB(s.gpu_bytes),
              FormatGB(s.cpu_bytes), FormatGiB(s.cpu_bytes),
              s.paper_gpu_bytes > 0 ? FormatGB(s.paper_gpu_bytes) : "-", s.formula});
  }
  std::cout << t.Render();
  for (const auto& n : plan->notes) std::cout << "note: " << n << "\n";
}

void RunAdvisePrecision(const AuditFlags& f) {
  Report report("advise precision", PrecisionRules());
  for (const auto& file : f.files) {
    auto text = ReadFile(file);
    if (!text.ok()) FailWith(text.error());
    auto plan = CheckPrecision(*text, file, &report);
    if (!plan.ok()) FailWith(plan.error());
    if (f.output == "table") {
      std::cout << file << ": default " << (plan->default_dtype.empty() ? "?" : plan->default_dtype)
                << ", embedding " << (plan->embedding_dtype.empty() ? "?" : plan->embedding_dtype)
                << ", lm_head " << (plan->lm_head_dtype.empty() ? "?" : plan->lm_head_dtype)
                << "\n";
    }
  }
  Finish(report, f);
}

// ---- cost --------------------------------------------------------------------------------

void RunCostReport(const CostReportFlags& f) {
  std::string dir = StateDir(f.state_dir);
  int64_t since_ms = 0;
  if (!f.since.empty()) {
    auto d = ParseSince(f.since);
    if (!d.ok()) FailWith(d.error());
    since_ms = static_cast<int64_t>(std::time(nullptr)) * 1000 - *d;
  }
  auto store = CostStore::Open(dir);
  if (!store.ok()) FailWith(store.error());
  auto records = (*store)->List(since_ms);
  if (!records.ok()) FailWith(records.error());
  auto prices = LoadPriceTable(dir);
  std::string currency = prices.ok() ? prices->currency : "USD";
  if (!f.per_metric.empty()) {
    auto rows = CostPerMetric(*records, f.per_metric, f.lower_is_better);
    if (f.output == "json") {
      json arr = json::array();
      for (const auto& r : rows) {
        json j = {{"workload", r.workload},
                  {"run", r.run_id},
                  {"cost", r.run_cost},
                  {"metric", r.metric},
                  {"currency", currency}};
        if (r.has_previous) {
          j["previous_run"] = r.previous_run_id;
          j["previous_metric"] = r.previous_metric;
        }
        j["cost_per_0.01"] = r.improved ? json(r.cost_per_hundredth) : json(nullptr);
        arr.push_back(j);
      }
      std::cout << json({{"metric", f.per_metric}, {"rows", arr}}).dump(2) << "\n";
      return;
    }
    Table t({"WORKLOAD", "RUN", "COST", f.per_metric == "" ? "METRIC" : ToUpperAscii(f.per_metric),
             "DELTA", currency + " PER 0.01"});
    for (const auto& r : rows) {
      t.AddRow({r.workload, r.run_id, FormatMoney(r.run_cost), Fixed(r.metric, 4),
                r.has_previous ? Fixed(r.metric - r.previous_metric, 4) : "-",
                r.improved ? FormatMoney(r.cost_per_hundredth)
                           : (r.has_previous ? "no improvement" : "-")});
    }
    std::cout << t.Render();
    return;
  }
  auto groups = GroupCosts(*records, f.by);
  if (!groups.ok()) FailWith(groups.error());
  if (f.output == "json") {
    json arr = json::array();
    double total = 0;
    for (const auto& g : *groups) {
      arr.push_back({{"key", g.key},
                     {"steps", g.steps},
                     {"gpu_hours", g.gpu_hours},
                     {"cpu_core_hours", g.cpu_core_hours},
                     {"memory_gib_hours", g.memory_gib_hours},
                     {"gpu_cost", g.gpu_cost},
                     {"cpu_cost", g.cpu_cost},
                     {"memory_cost", g.memory_cost},
                     {"total", g.total}});
      total += g.total;
    }
    std::cout
        << json({{"by", f.by}, {"currency", currency}, {"groups", arr}, {"total", total}}).dump(2)
        << "\n";
    return;
  }
  Table t({ToUpperAscii(f.by), "STEPS", "GPU-HOURS", "CPU-CORE-HOURS", "MEM-GIB-HOURS",
           "COST (" + currency + ")"});
  double total = 0;
  for (const auto& g : *groups) {
    t.AddRow({g.key, std::to_string(g.steps), Fixed(g.gpu_hours, 2), Fixed(g.cpu_core_hours, 2),
              Fixed(g.memory_gib_hours, 2), FormatMoney(g.total)});
    total += g.total;
  }
  std::cout << t.Render() << "total: " << FormatMoney(total) << " " << currency << "\n";
}

void RunCostCompare(const CostCompareFlags& f) {
  Result<PriceTable> prices = Error(codes::kInternal, "unset");
  if (!f.prices_file.empty()) {
    auto text = ReadFile(f.prices_file);
    if (!text.ok()) FailWith(text.error());
    prices = ParsePriceTable(*text, f.prices_file);
  } else {
    prices = LoadPriceTable(StateDir(f.state_dir));
  }
  if (!prices.ok()) FailWith(prices.error());
  if (f.hours.size() != 1 && f.hours.size() != f.files.size()) {
    FailWith(Error(codes::kInvalidArgument, "give one --hours per -f (or one for all)")
                 .Path("--hours")
                 .Value(std::to_string(f.hours.size()) + " for " + std::to_string(f.files.size()) +
                        " files"));
  }
  Errors errors;
  std::vector<StrategyCost> rows;
  for (size_t i = 0; i < f.files.size(); ++i) {
    auto s = ReadStrategy(f.files[i]);
    if (!s.ok()) {
      errors.push_back(s.error());
      continue;
    }
    auto c = PriceStrategy(*s, f.hours[f.hours.size() == 1 ? 0 : i], *prices);
    if (!c.ok()) {
      errors.push_back(c.error());
      continue;
    }
    rows.push_back(*c);
  }
  if (!errors.empty()) FailWith(errors);
  if (f.output == "json") {
    json arr = json::array();
    for (const auto& r : rows) {
      arr.push_back({{"strategy", r.strategy.name},
                     {"file", r.strategy.file},
                     {"gpus", r.strategy.gpus},
                     {"device_model", r.strategy.device_model},
                     {"pricing", r.strategy.pricing},
                     {"gpu_pricing", r.gpu_pricing.empty() ? json(nullptr) : json(r.gpu_pricing)},
                     {"hourly", RoundCents(r.hourly)},
                     {"hours", r.hours},
                     {"total", RoundCents(r.total)}});
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
  for (const auto& r : rows) {
    if (!r.gpu_pricing.empty() && r.gpu_pricing != r.strategy.pricing) {
      std::cout << "note: " << r.strategy.name << ": the price table has no " << r.strategy.pricing
                << " price for " << r.strategy.device_model << " GPUs: priced " << r.gpu_pricing
                << " (add devices." << r.strategy.device_model << "." << r.strategy.pricing
                << " to the price table)\n";
    }
  }
}

// ---- policy ------------------------------------------------------------------------------

void RunPolicyApply(const PolicyApplyFlags& f) {
  auto text = ReadFile(f.file);
  if (!text.ok()) FailWith(text.error());
  PolicyParse p = ParsePolicy(*text, f.file);
  if (!p.ok()) FailWith(p.errors);
  Status st = StorePolicy(StateDir(f.state_dir), p.policy, *text);
  if (!st.ok()) FailWith(st.error());
  std::cout << "policy " << p.policy.name << " applied (" << p.policy.rules.size() << " rule(s))\n";
}

void RunPolicyList(const PolicyListFlags& f) {
  auto stored = ListPolicies(StateDir(f.state_dir));
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
  if (f.output == "json") {
    std::cout << arr.dump(2) << "\n";
  } else {
    std::cout << t.Render();
  }
}

namespace {

void RegisterAdvise(CLI::App& app) {
  auto* adv = app.add_subcommand("advise", "training memory and precision advice");
  adv->require_subcommand(1);
  auto m = std::make_shared<AdviseMemoryFlags>();
  auto* mem = adv->add_subcommand(
      "memory",
      "Model-state memory per GPU and CPU memory per node for ZeRO stages 0-3 (DeepSpeed's "
      "estimators; the ZeRO paper's formula as the PAPER GPU column), plus activations "
      "(Korthikanti et al. 2022) when --layers --hidden --heads --seq --micro-batch are given.");
  mem->add_option("--params", m->params, "total parameters, e.g. 7.5e9")->required();
  mem->add_option("--gpus", m->gpus, "data-parallel GPUs in total")->required();
  mem->add_option("--gpus-per-node", m->gpus_per_node, "GPUs per node (default 8)");
  mem->add_option("--zero", m->zero, "only this ZeRO stage (0-3)");
  mem->add_option("--offload", m->offload, "none (default), optimizer, optimizer+params")
      ->check(CLI::IsMember({"none", "optimizer", "optimizer+params"}));
  mem->add_option("--precision", m->precision, "fp16 (default), bf16 or fp32");
  mem->add_option("--largest-layer", m->largest_layer, "parameters of the largest layer (ZeRO-3)");
  mem->add_flag("--zero-init", m->zero_init, "model built under deepspeed.zero.Init");
  mem->add_option("--layers", m->layers, "transformer layers (activations)");
  mem->add_option("--hidden", m->hidden, "hidden size (activations)");
  mem->add_option("--heads", m->heads, "attention heads (activations)");
  mem->add_option("--seq", m->seq, "sequence length (activations)");
  mem->add_option("--micro-batch", m->micro_batch, "micro-batch per GPU (activations)");
  mem->add_option("--recompute", m->recompute, "none (default) or full activation checkpointing")
      ->check(CLI::IsMember({"none", "full"}));
  AddOutput(mem, &m->output, {"table", "json"});
  mem->add_option("--emit", m->emit,
                  "deepspeed: print the DeepSpeed config and SEEDANCE_* env for --zero")
      ->check(CLI::IsMember({"deepspeed"}));
  BindSafely(mem, m, &RunAdviseMemory);

  auto pf = std::make_shared<AuditFlags>();
  auto* prec = adv->add_subcommand(
      "precision", std::string("Check a config's precision_policy block (default dtype, per-module "
                               "overrides); warns when embedding or lm_head run in fp16."));
  AddAuditFlags(prec, pf.get());
  BindSafely(prec, pf, &RunAdvisePrecision);
}

void RegisterCost(CLI::App& app) {
  auto* cost = app.add_subcommand("cost", "cost accounting");
  cost->require_subcommand(1);

  auto r = std::make_shared<CostReportFlags>();
  auto* report = cost->add_subcommand(
      "report",
      "Cost of recorded step attempts grouped by a label, or per 0.01 of a metric's "
      "improvement between runs of a workload (--per-metric)");
  AddStateDir(report, &r->state_dir);
  report->add_option("--by", r->by,
                     "team (default), project, model, stage, namespace, workload or run");
  report->add_option("--since", r->since,
                     "only attempts that ended within this window, e.g. 7d, 12h");
  report->add_option("--per-metric", r->per_metric,
                     "cost per 0.01 improvement of this metric (e.g. auc)");
  report->add_flag("--lower-is-better", r->lower_is_better,
                   "the metric improves downwards (loss, wer)");
  AddOutput(report, &r->output, {"table", "json"});
  BindSafely(report, r, &RunCostReport);

  auto c = std::make_shared<CostCompareFlags>();
  auto* cmp = cost->add_subcommand(
      "compare",
      "Strategy table: hourly cost from prices and each workload's "
      "resources x hours = total. Pricing kind and device model come from the "
      "annotations rsl.cost/pricing and rsl.cost/device-model (or a GPU capability).");
  cmp->add_option("-f,--filename", c->files, "AIWorkload file per strategy (repeatable)")
      ->required();
  cmp->add_option("--hours", c->hours, "training hours per strategy, in -f order (one value = all)")
      ->required();
  cmp->add_option("--prices", c->prices_file,
                  "price table YAML (default: <state-dir>/prices.yaml)");
  AddStateDir(cmp, &c->state_dir);
  AddOutput(cmp, &c->output, {"table", "json"});
  BindSafely(cmp, c, &RunCostCompare);
}

void RegisterPolicy(CLI::App& app) {
  auto* pol = app.add_subcommand("policy", "cost policies enforced on running steps");
  pol->require_subcommand(1);
  auto a = std::make_shared<PolicyApplyFlags>();
  auto* apply = pol->add_subcommand(
      "apply",
      "Validate a cost policy (rules: name, condition, action) and store it; steps "
      "started afterwards are watched by it");
  apply->add_option("-f,--filename", a->file, "policy YAML")->required();
  AddStateDir(apply, &a->state_dir);
  BindSafely(apply, a, &RunPolicyApply);

  auto l = std::make_shared<PolicyListFlags>();
  auto* list = pol->add_subcommand("list", "List the applied policies and their rules");
  AddStateDir(list, &l->state_dir);
  AddOutput(list, &l->output, {"table", "json"});
  BindSafely(list, l, &RunPolicyList);
}

}  // namespace

void RegisterGovernCommands(CLI::App& app) {
  RegisterAdvise(app);
  RegisterCost(app);
  RegisterPolicy(app);
  RegisterK8sCommands(app);
}

}  // namespace rsl::cli
