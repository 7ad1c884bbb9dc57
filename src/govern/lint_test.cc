#include "govern/lint.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace rsl::govern {
namespace {

struct Case {
  const char* name;
  const char* yaml;
  std::vector<std::string> want;
};

constexpr char kGoodContainer[] = R"(
      - name: app
        image: x
        resources: {requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}}
        readinessProbe: {httpGet: {path: /ready, port: 8080}}
        livenessProbe: {httpGet: {path: /live, port: 8080}}
)";

std::string Deployment(const std::string& name, const std::string& containers,
                       const std::string& extra_spec = "") {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name +
         ", namespace: ml}\nspec:\n" + extra_spec +
         "  template:\n    spec:\n      containers:" + containers;
}

TEST(Lint, FindingIds) {
  const std::string good = Deployment("web", kGoodContainer);
  const std::string hpa_v2 = R"(
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h, namespace: ml}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}
  minReplicas: 1
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 30}}
)";
  auto hpa = [&](const std::string& target) {
    std::string s = hpa_v2;
    s.replace(s.find("%s"), 2, target);
    return s;
  };
  const std::string gpu_container = R"(
      - name: infer
        resources: {limits: {cpu: 4, memory: 16Gi, nvidia.com/gpu: 1}}
        readinessProbe: {exec: {command: [true]}}
        livenessProbe: {exec: {command: [true]}}
)";
  const std::string gpu_mem_metric = R"(
  - type: Pods
    pods:
      metric: {name: DCGM_FI_DEV_FB_USED}
      target: {type: AverageValue, averageValue: "20000"}
)";
  const std::string bare = R"(
      - name: app
        image: x
)";
  std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {good, {}},
      {Deployment("web", bare), {"LINT001", "LINT002", "LINT003", "LINT004"}},
      {good + hpa("web"), {}},
      {good + hpa("wbe"), {"LINT005"}},
      {good + hpa("payments-api"), {"LINT005"}},
      {Deployment("web", kGoodContainer, "  replicas: 3\n") + hpa("web"), {"LINT006"}},
      {Deployment("web", R"(
      - name: app
        resources: {requests: {cpu: 1, memory: 1Gi}}
        readinessProbe: {exec: {command: [true]}}
        livenessProbe: {exec: {command: [true]}}
)") + hpa("web"),
       {"LINT002", "LINT007"}},
      {Deployment("gpu", gpu_container) + hpa("gpu"), {"LINT008"}},
      {Deployment("gpu", gpu_container) + hpa("gpu") + gpu_mem_metric, {}},
      {Deployment("web", R"(
      - name: app
        resources: {limits: {cpu: 1, memory: 1Gb}}
)"),
       {"LINT009"}},
      {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n"
       "      containers:\n      - name: train\n        resources: {limits: {cpu: 1, memory: "
       "1Gi}}\n",
       {}},
      {good + "\n---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: "
              "h, namespace: ml}\nspec: {scaleTargetRef: {kind: Deployment, name: web}, "
              "minReplicas: 5, maxReplicas: 2}\n",
       {"LINT010"}},
  };
  int i = 0;
  for (const auto& [yaml, want] : cases) {
    auto objs = ParseObjects(yaml, "t.yaml");
    ASSERT_TRUE(objs.ok()) << i << objs.error().ToString();
    Report r("k8s lint", LintRules());
    Lint(*objs, &r);
    std::vector<std::string> ids = r.Ids();
    std::sort(ids.begin(), ids.end());
    std::vector<std::string> w = want;
    std::sort(w.begin(), w.end());
    EXPECT_EQ(ids, w) << "case " << i << "\n" << r.RenderTable();
    ++i;
  }
}

TEST(Lint, HpaTypoHint) {
  auto objs = ParseObjects(
      Deployment("web", kGoodContainer) +
          "\n---\nkind: HorizontalPodAutoscaler\nmetadata: {name: h, namespace: "
          "ml}\nspec: {scaleTargetRef: {kind: Deployment, name: webb}, maxReplicas: 2}\n",
      "t.yaml");
  ASSERT_TRUE(objs.ok());
  Report r("k8s lint", LintRules());
  Lint(*objs, &r);
  ASSERT_EQ(r.Ids(), std::vector<std::string>{"LINT005"});
  EXPECT_EQ(r.findings()[0].fix, "did you mean \"web\"?");
  EXPECT_EQ(r.findings()[0].severity, Severity::kWarning);  // a near miss: likely a typo
  EXPECT_EQ(r.findings()[0].message,
            "scaleTargetRef Deployment/webb is not among the inputs (namespace ml): its rules "
            "were not checked");
  EXPECT_EQ(r.findings()[0].object.line, 15);
}

// The usual layout: the HPA in its own file, the Deployment elsewhere. A note, exit 0.
TEST(Lint, HpaTargetInAnotherFileIsANote) {
  auto objs = ParseObjects(
      "kind: HorizontalPodAutoscaler\nmetadata: {name: h, namespace: ml}\n"
      "spec: {scaleTargetRef: {kind: Deployment, name: api}, maxReplicas: 2}\n",
      "hpa.yaml");
  ASSERT_TRUE(objs.ok());
  Report r("k8s lint", LintRules());
  Lint(*objs, &r);
  ASSERT_EQ(r.Ids(), std::vector<std::string>{"LINT005"});
  EXPECT_EQ(r.findings()[0].severity, Severity::kNote);
  EXPECT_EQ(r.ExitCode(false), kExitClean);
}

TEST(Lint, SidecarsRunToCompletionPodsAndFixPaths) {
  // A sidecar (init container with restartPolicy Always) is linted for requests/limits;
  // a plain init container is not; probes are not demanded of sidecars.
  auto objs = ParseObjects(Deployment("web", kGoodContainer) + R"(
      initContainers:
      - name: setup
        image: x
      - name: proxy
        image: x
        restartPolicy: Always
)",
                           "t.yaml");
  ASSERT_TRUE(objs.ok()) << objs.error().ToString();
  Report r("k8s lint", LintRules());
  Lint(*objs, &r);
  ASSERT_EQ(r.Ids(), (std::vector<std::string>{"LINT001", "LINT002"})) << r.RenderTable();
  EXPECT_EQ(r.findings()[0].message, "sidecar \"proxy\" has no cpu and memory request");
  EXPECT_EQ(r.findings()[0].fix, "set resources.requests (spec.template.spec.initContainers[1])");

  // restartPolicy Never: runs to completion, no probes demanded.
  auto pod = ParseObjects(R"(kind: Pod
metadata: {name: once}
spec:
  restartPolicy: Never
  containers:
  - name: task
    resources: {limits: {cpu: 1, memory: 1Gi}}
)",
                          "p.yaml");
  ASSERT_TRUE(pod.ok());
  Report rp("k8s lint", LintRules());
  Lint(*pod, &rp);
  EXPECT_TRUE(rp.Ids().empty()) << rp.RenderTable();

  // The fix path of a CronJob's container.
  auto cron = ParseObjects(R"(kind: CronJob
metadata: {name: nightly}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: task
)",
                           "c.yaml");
  ASSERT_TRUE(cron.ok());
  Report rc("k8s lint", LintRules());
  Lint(*cron, &rc);
  ASSERT_EQ(rc.Ids(), (std::vector<std::string>{"LINT001", "LINT002"})) << rc.RenderTable();
  EXPECT_EQ(rc.findings()[1].fix,
            "set resources.limits.memory (spec.jobTemplate.spec.template.spec.containers[0])");
}

}  // namespace
}  // namespace rsl::govern
