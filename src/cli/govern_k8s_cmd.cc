// seedctl k8s qos|lint|qos-rules|qos-check|crd-diff|shadow-pods|crd-audit|tenancy: Kubernetes
// audits from manifests, dumps and logs, no cluster needed (docs/govern.md); `k8s render` is
// in k8s_render_cmd.cc.
#include <algorithm>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/govern_cmd.h"
#include "cli/k8s_render_cmd.h"
#include "cli/table.h"
#include "govern/cost.h"
#include "govern/crd_audit.h"
#include "govern/crd_diff.h"
#include "govern/lint.h"
#include "govern/qos.h"
#include "govern/qos_rules.h"
#include "govern/shadow_pods.h"
#include "govern/tenancy.h"

namespace rsl::cli {

using nlohmann::json;
using namespace rsl::govern;  // NOLINT

void RunK8sQos(const K8sQosFlags& f) {
  auto mem = ParseQuantity(f.node_memory);
  if (!mem.ok() || *mem <= 0) {
    FailWith(Error(codes::kInvalidArgument, "invalid --node-memory")
                 .Path("--node-memory")
                 .Value(f.node_memory)
                 .Hint("e.g. 64Gi"));
  }
  QosOptions opt;
  opt.ratio_threshold = f.ratio;
  opt.node_memory_bytes = *mem;
  Report report("k8s qos", QosRules());
  auto results = AnalyzeQos(LoadAll(f.files), opt, &report);
  if (f.output == "json") {
    json arr = json::array();
    for (const auto& r : results) arr.push_back(r.ToJson());
    std::cout << arr.dump(2) << "\n";
    int code = report.ExitCode(f.strict);
    if (code != 0) throw Exit{code};
    return;
  }
  if (f.output == "table") {
    Table t(
        {"KIND", "NAMESPACE", "NAME", "QOS", "SOURCE", "OOM_SCORE_ADJ", "CGROUP (ANNOTATIONS)"});
    for (const auto& r : results) {
      std::vector<std::string> oom, cg;
      for (const auto& c2 : r.containers)
        oom.push_back(c2.name + "=" + std::to_string(c2.oom_score_adj));
      for (const auto& [k, v] : r.annotation_cgroup) cg.push_back(k + "=" + v);
      t.AddRow({r.object.kind, r.object.namespace_.empty() ? "default" : r.object.namespace_,
                r.object.name, r.qos_class.empty() ? "?" : r.qos_class,
                r.from_status ? "status" : "computed", Join(oom, ","), Join(cg, " ")});
    }
    std::cout << t.Render() << "\n";
  }
  Finish(report, f);
}

void RunK8sLint(const AuditFlags& f) {
  Report report("k8s lint", LintRules());
  Lint(LoadAll(f.files), &report);
  Finish(report, f);
}

void RunK8sQosRules(const K8sQosRulesFlags& f) { std::cout << PrometheusQosRules(f.for_duration); }

void RunK8sQosCheck(const K8sQosCheckFlags& f) {
  auto text = ReadFile(f.metrics);
  if (!text.ok()) FailWith(text.error());
  Report report("k8s qos-check", QosCheckRules());
  Status st = CheckQos(LoadAll(f.files), *text, f.metrics, &report);
  if (!st.ok()) FailWith(st.error());
  Finish(report, f);
}

void RunK8sCrdDiff(const K8sCrdDiffFlags& f) {
  Report report("k8s crd-diff", CrdDiffRules());
  std::vector<K8sObject> olds = LoadAll({f.old_path}), news = LoadAll({f.new_path});
  for (const auto& [path, objs] : {std::pair{f.old_path, &olds}, std::pair{f.new_path, &news}}) {
    bool any = std::any_of(objs->begin(), objs->end(), [](const K8sObject& o) {
      return o.kind() == "CustomResourceDefinition";
    });
    if (!any) {
      FailWith(Error(codes::kInvalidArgument, "no CustomResourceDefinition in the file")
                   .At(SourcePos{path, 0, 0})
                   .Value(std::to_string(objs->size()) + " other object(s)")
                   .Hint("pass the CRD manifests (kind: CustomResourceDefinition) as OLD and NEW"));
    }
  }
  DiffCrds(olds, news, &report);
  Finish(report, f);
}

void RunK8sShadowPods(const K8sShadowPodsFlags& f) {
  ShadowOptions opt;
  opt.now_unix = static_cast<int64_t>(std::time(nullptr));
  if (!f.now.empty()) {
    auto t = ParseRfc3339(f.now);
    if (!t.ok()) FailWith(Error(t.error()).Path("--now"));
    opt.now_unix = *t;
  }
  auto lim = ParseSince(f.terminating_limit);
  if (!lim.ok()) FailWith(Error(lim.error()).Path("--terminating-limit"));
  opt.terminating_limit_s = *lim / 1000;
  Report report("k8s shadow-pods", ShadowRules());
  ShadowSummary s = FindShadowPods(LoadAll(f.files), opt, &report);
  if (f.output == "table" && !s.pods.empty()) {
    Table t({"NAMESPACE", "POD", "NODE", "CPU", "MEMORY", "GPU", "REASONS"});
    for (const auto& p : s.pods) {
      t.AddRow({p.object.namespace_, p.object.name, p.node, FormatCpu(p.cpu_cores),
                FormatMemory(p.memory_bytes), Fixed(p.gpus, 0), Join(p.reasons, ",")});
    }
    std::cout << t.Render() << "held: cpu " << FormatCpu(s.cpu_cores) << ", memory "
              << FormatMemory(s.memory_bytes) << ", gpu " << Fixed(s.gpus, 0) << "\n\n";
  }
  Finish(report, f);
}

void RunK8sCrdAudit(const K8sCrdAuditFlags& f) {
  auto text = ReadFile(f.log);
  if (!text.ok()) FailWith(text.error());
  LogScan scan = ScanApiserverLog(*text);
  std::vector<ResourceAccess>& accesses = scan.accesses;
  Report report("k8s crd-audit", CrdAuditRules());
  ReportLogScan(scan, f.log, &report);
  AuditCrdAccesses(&accesses, LoadAll({f.crds}), f.log, &report);
  // Stderr, so -o json / sarif stay parseable.
  std::cerr << f.log << ": " << scan.lines << " line(s): " << scan.audit_events
            << " audit event(s), " << scan.klog_lines << " klog line(s) recognised; "
            << scan.access_lines << " report an unserved custom resource\n";
  if (f.output == "table" && !accesses.empty()) {
    Table t({"GROUP", "VERSION", "RESOURCE", "COUNT", "FIRST SEEN", "LAST SEEN", "STATUS",
             "REGISTERED"});
    for (const auto& a : accesses) {
      t.AddRow({a.group, a.version, a.resource, std::to_string(a.count), a.first_seen, a.last_seen,
                a.status, Join(a.registered_versions, ",")});
    }
    std::cout << t.Render() << "\n";
  }
  Finish(report, f);
}

void RunK8sTenancy(const AuditFlags& f) {
  Report report("k8s tenancy", TenancyRules());
  AuditTenancy(LoadAll(f.files), &report);
  Finish(report, f);
}

void RegisterK8sCommands(CLI::App& app) {
  auto* k8s = app.add_subcommand(
      "k8s",
      "Kubernetes: the objects a run becomes (render); audits from manifests, dumps and logs "
      "(no cluster needed)");
  k8s->require_subcommand(1);
  RegisterK8sRenderCommand(k8s);

  auto qos = std::make_shared<K8sQosFlags>();
  auto* c = k8s->add_subcommand(
      "qos", std::string("QoS class as Kubernetes computes it, kubelet oom_score_adj, eviction "
                         "risk, seedance.qos/* annotations as cgroup v2 settings."));
  AddAuditFlags(c, qos.get());
  c->add_option("--ratio", qos->ratio, "flag limit/request ratios above this (default 4)");
  c->add_option("--node-memory", qos->node_memory,
                "node memory capacity for Burstable oom_score_adj (default 8Gi)");
  BindSafely(c, qos, &RunK8sQos);

  auto lint = std::make_shared<AuditFlags>();
  c = k8s->add_subcommand(
      "lint", std::string("Missing requests/limits/probes, HPA targets that do not resolve, "
                          "HPA-managed fixed replicas, common autoscaling mistakes."));
  AddAuditFlags(c, lint.get());
  BindSafely(c, lint, &RunK8sLint);

  auto rules = std::make_shared<K8sQosRulesFlags>();
  c = k8s->add_subcommand("qos-rules",
                          "Prometheus alerting rules with the Seedance QoS thresholds "
                          "(Guaranteed: CPU > 110% of request, memory > 95% of limit; "
                          "Burstable: CPU > 150%, working set > 90% of limit)");
  c->add_option("--for", rules->for_duration,
                "how long a violation lasts before it fires (default 5m)");
  BindSafely(c, rules, &RunK8sQosRules);

  auto check = std::make_shared<K8sQosCheckFlags>();
  c = k8s->add_subcommand(
      "qos-check",
      std::string("Compare manifests with a Prometheus query export: {\"cpu\": <response>, "
                  "\"memory_usage\": ..., \"memory_working_set\": ...}."));
  AddAuditFlags(c, check.get());
  c->add_option("--metrics", check->metrics, "JSON file of /api/v1/query responses")->required();
  BindSafely(c, check, &RunK8sQosCheck);

  auto diff = std::make_shared<K8sCrdDiffFlags>();
  c = k8s->add_subcommand("crd-diff",
                          std::string("Breaking changes between two versions of CRDs (OLD NEW)."));
  c->add_option("OLD", diff->old_path, "the CRDs before")->required();
  c->add_option("NEW", diff->new_path, "the CRDs after")->required();
  AddAuditFlags(c, diff.get(), false);
  BindSafely(c, diff, &RunK8sCrdDiff);

  auto shadow = std::make_shared<K8sShadowPodsFlags>();
  c = k8s->add_subcommand(
      "shadow-pods",
      std::string("Pods stuck Terminating, or owned by absent / other-namespace owners, and "
                  "the resources they still hold."));
  AddAuditFlags(c, shadow.get());
  c->add_option("--now", shadow->now, "evaluate at this RFC 3339 time (default: now)");
  c->add_option("--terminating-limit", shadow->terminating_limit,
                "Terminating longer than this is stuck (default 10m)");
  BindSafely(c, shadow, &RunK8sShadowPods);

  auto audit = std::make_shared<K8sCrdAuditFlags>();
  c = k8s->add_subcommand(
      "crd-audit", std::string("Accesses to unregistered custom resources in kube-apiserver logs, "
                               "compared with the registered CRDs."));
  c->add_option("--log", audit->log, "kube-apiserver log file")->required();
  c->add_option("--crds", audit->crds, "kubectl get crd -o json (or YAML manifests)")->required();
  AddAuditFlags(c, audit.get(), false);
  BindSafely(c, audit, &RunK8sCrdAudit);

  auto tenancy = std::make_shared<AuditFlags>();
  c = k8s->add_subcommand(
      "tenancy",
      std::string("Custom resources pointing into other namespaces, checked against that "
                  "namespace's LimitRange, ResourceQuota and the egress NetworkPolicies."));
  AddAuditFlags(c, tenancy.get());
  BindSafely(c, tenancy, &RunK8sTenancy);
}

}  // namespace rsl::cli
