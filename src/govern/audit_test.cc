// Table-driven tests of shadow-pods, tenancy and qos-check/qos-rules.
#include <gtest/gtest.h>

#include <algorithm>

#include "govern/qos_rules.h"
#include "govern/shadow_pods.h"
#include "govern/tenancy.h"

namespace rsl::govern {
namespace {

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ShadowPods, Rfc3339) {
  EXPECT_EQ(*ParseRfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseRfc3339("2024-03-15T10:22:34Z"), 1710498154);
  EXPECT_EQ(*ParseRfc3339("2024-03-15T10:22:34.5Z"), 1710498154);
  EXPECT_EQ(*ParseRfc3339("2024-03-15T12:22:34+02:00"), 1710498154);
  EXPECT_FALSE(ParseRfc3339("yesterday").ok());
  EXPECT_FALSE(ParseRfc3339("2024-03-15T10:22:34 CET").ok());
}

TEST(ShadowPods, FindingIds) {
  const char* dump = R"({"kind":"List","items":[
   {"kind":"SeedanceJob","apiVersion":"seedance.io/v1","metadata":{"name":"job-live","namespace":"ml","uid":"u-live"}},
   {"kind":"SeedanceJob","apiVersion":"seedance.io/v1","metadata":{"name":"job-other","namespace":"team-b","uid":"u-other"}},
   {"kind":"Pod","metadata":{"name":"ok","namespace":"ml",
      "ownerReferences":[{"kind":"SeedanceJob","name":"job-live","uid":"u-live","controller":true}]},
    "spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}},
   {"kind":"Pod","metadata":{"name":"stuck","namespace":"ml","deletionTimestamp":"2024-03-15T10:00:00Z",
      "finalizers":["seedance.io/cleanup"],
      "ownerReferences":[{"kind":"SeedanceJob","name":"job-live","uid":"u-live","controller":true}]},
    "spec":{"nodeName":"n1","containers":[{"name":"a","resources":{"limits":{"cpu":"2","memory":"4Gi","nvidia.com/gpu":"1"}}}]}},
   {"kind":"Pod","metadata":{"name":"recent","namespace":"ml","deletionTimestamp":"2024-03-15T10:55:00Z",
      "ownerReferences":[{"kind":"SeedanceJob","name":"job-live","uid":"u-live","controller":true}]},
    "spec":{"containers":[{"name":"a"}]}},
   {"kind":"Pod","metadata":{"name":"orphan","namespace":"ml",
      "ownerReferences":[{"kind":"SeedanceJob","name":"job-gone","uid":"u-gone","controller":true}]},
    "spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"500m","memory":"512Mi"}}}]}},
   {"kind":"Pod","metadata":{"name":"crossns","namespace":"ml",
      "ownerReferences":[{"kind":"SeedanceJob","name":"job-other","uid":"u-other","controller":true}]},
    "spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}},
   {"kind":"Pod","metadata":{"name":"nocontroller","namespace":"ml",
      "ownerReferences":[{"kind":"SeedanceJob","name":"job-live","uid":"u-live"}]},
    "spec":{"containers":[{"name":"a"}]}}
  ]})";
  auto objs = ParseObjects(dump, "pods.json");
  ASSERT_TRUE(objs.ok());
  Report r("k8s shadow-pods", ShadowRules());
  ShadowOptions opt;
  opt.now_unix = *ParseRfc3339("2024-03-15T11:00:00Z");
  ShadowSummary s = FindShadowPods(*objs, opt, &r);
  EXPECT_EQ(r.Ids(),
            (std::vector<std::string>{"SHADOW001", "SHADOW002", "SHADOW003", "SHADOW004"}));
  EXPECT_EQ(r.findings()[0].object.name, "stuck");
  EXPECT_EQ(r.findings()[0].message,
            "Terminating for 1h00m (limit 10m00s), finalizers: seedance.io/cleanup");
  EXPECT_EQ(r.findings()[1].object.name, "orphan");
  EXPECT_EQ(r.findings()[2].object.name, "crossns");
  ASSERT_EQ(s.pods.size(), 3u);
  EXPECT_DOUBLE_EQ(s.cpu_cores, 3.5);
  EXPECT_DOUBLE_EQ(s.memory_bytes, (4.0 + 0.5 + 1.0) * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.gpus, 1);
  // A shorter limit catches the recent one too.
  Report r2("k8s shadow-pods", ShadowRules());
  opt.terminating_limit_s = 60;
  FindShadowPods(*objs, opt, &r2);
  EXPECT_EQ(Sorted(r2.Ids()), (std::vector<std::string>{"SHADOW001", "SHADOW001", "SHADOW002",
                                                        "SHADOW003", "SHADOW004"}));
}

// `kubectl get po -A -o json`: pods only. Controller-owned pods are not shadow pods because
// their owners are not in the input, and nothing destructive is advised.
TEST(ShadowPods, PodsOnlyDumpJudgesNoOwner) {
  auto pod = [](const std::string& name, const std::string& ns, const std::string& kind,
                const std::string& owner, const std::string& uid) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" +
           ns + R"(","ownerReferences":[{"apiVersion":"apps/v1","kind":")" + kind +
           R"(","name":")" + owner + R"(","uid":")" + uid +
           R"(","controller":true}]},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}})";
  };
  const std::string pods = pod("web-7d4b9-abcde", "shop", "ReplicaSet", "web-7d4b9", "rs-1") + "," +
                           pod("web-7d4b9-fghij", "shop", "ReplicaSet", "web-7d4b9", "rs-1") + "," +
                           pod("db-0", "shop", "StatefulSet", "db", "ss-1") + "," +
                           pod("kube-apiserver-n1", "kube-system", "Node", "n1", "node-1");
  ShadowOptions opt;
  opt.now_unix = *ParseRfc3339("2024-03-15T11:00:00Z");
  auto objs = ParseObjects(R"({"apiVersion":"v1","kind":"List","items":[)" + pods + "]}", "p.json");
  ASSERT_TRUE(objs.ok());
  Report r("k8s shadow-pods", ShadowRules());
  ShadowSummary s = FindShadowPods(*objs, opt, &r);
  EXPECT_EQ(Sorted(r.Ids()), (std::vector<std::string>{"SHADOW005", "SHADOW005", "SHADOW005"}));
  EXPECT_TRUE(s.pods.empty());
  for (const auto& f : r.findings()) {
    EXPECT_EQ(f.severity, Severity::kNote);
    EXPECT_EQ(f.fix.find("delete"), std::string::npos) << f.fix;
  }
  EXPECT_EQ(r.ExitCode(false), kExitClean);

  // With the owners' kinds in the input: the cluster-scoped Node owns its static pod from any
  // namespace; a ReplicaSet missing among other ReplicaSets is flagged, without calling it a
  // custom resource or advising a delete.
  const std::string owners =
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","uid":"node-1"}},
         {"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"api-55f","namespace":"shop","uid":"rs-9"}},
         {"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","namespace":"shop","uid":"ss-1"}})";
  auto with = ParseObjects(
      R"({"apiVersion":"v1","kind":"List","items":[)" + pods + "," + owners + "]}", "p.json");
  ASSERT_TRUE(with.ok());
  Report r2("k8s shadow-pods", ShadowRules());
  FindShadowPods(*with, opt, &r2);
  ASSERT_EQ(r2.Ids(), (std::vector<std::string>{"SHADOW002", "SHADOW002"}));
  EXPECT_EQ(r2.findings()[0].message,
            "owner ReplicaSet/web-7d4b9 (uid rs-1) is not in the input, which has other "
            "ReplicaSet objects: it may have been deleted without its pods");
  EXPECT_EQ(r2.findings()[0].message.find("custom resource"), std::string::npos);
  EXPECT_EQ(r2.findings()[0].fix.find("kubectl delete"), std::string::npos) << r2.findings()[0].fix;
  EXPECT_NE(r2.findings()[0].fix.find("kubectl get replicaset -n shop web-7d4b9"),
            std::string::npos)
      << r2.findings()[0].fix;
}

constexpr char kTenancyBase[] = R"(
- {kind: Namespace, apiVersion: v1, metadata: {name: tenant-a, labels: {team: a}}}
- {kind: Namespace, apiVersion: v1, metadata: {name: shared, labels: {team: platform}}}
- kind: LimitRange
  apiVersion: v1
  metadata: {name: caps, namespace: shared}
  spec:
    limits:
    - type: Container
      max: {cpu: "2", memory: 4Gi}
- kind: ResourceQuota
  apiVersion: v1
  metadata: {name: q, namespace: shared}
  spec: {hard: {requests.cpu: "4", requests.memory: 8Gi}}
  status: {used: {requests.cpu: "3500m", requests.memory: 2Gi}}
)";

TEST(Tenancy, FindingIds) {
  auto cr = [](const std::string& target, const std::string& resources) {
    return "- apiVersion: seedance.io/v1\n  kind: SeedanceJob\n  metadata: {name: job, namespace: "
           "tenant-a}\n  spec:\n    targetNamespace: " +
           target + "\n    resources: " + resources + "\n";
  };
  const std::string egress_deny =
      "- kind: NetworkPolicy\n  apiVersion: networking.k8s.io/v1\n  metadata: {name: deny, "
      "namespace: tenant-a}\n  spec: {podSelector: {}, policyTypes: [Egress]}\n";
  const std::string egress_allow_shared =
      "- kind: NetworkPolicy\n  apiVersion: networking.k8s.io/v1\n  metadata: {name: to-shared, "
      "namespace: tenant-a}\n  spec:\n    podSelector: {}\n    policyTypes: [Egress]\n    egress:\n"
      "    - to: [{namespaceSelector: {matchLabels: {team: platform}}}]\n";
  const std::string egress_allow_expr =
      "- kind: NetworkPolicy\n  apiVersion: networking.k8s.io/v1\n  metadata: {name: to-shared, "
      "namespace: tenant-a}\n  spec:\n    podSelector: {}\n    policyTypes: [Egress]\n    egress:\n"
      "    - to: [{namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, "
      "operator: In, values: [shared]}]}}]\n";
  struct Case {
    std::string items;
    std::vector<std::string> want;
  };
  const std::string small = "{requests: {cpu: 250m, memory: 1Gi}}";
  const Case cases[] = {
      {cr("tenant-a", small) + egress_allow_shared, {}},  // same namespace: nothing
      {cr("shared", small) + egress_allow_shared, {"TEN001"}},
      {cr("shared", small) + egress_allow_expr, {"TEN001"}},
      {cr("shared", small), {"TEN001", "TEN006"}},
      {cr("shared", small) + egress_deny, {"TEN001", "TEN005"}},
      // The seed's example: 2 CPU requested, only 0.5 left in the quota; 8Gi above the 4Gi max.
      {cr("shared", "{requests: {cpu: 2, memory: 8Gi}}") + egress_allow_shared,
       {"TEN001", "TEN003", "TEN004", "TEN004"}},
      {cr("nowhere", small) + egress_allow_shared, {"TEN001", "TEN002", "TEN005"}},
  };
  int i = 0;
  for (const auto& c : cases) {
    std::string yaml = "apiVersion: v1\nkind: List\nitems:\n" + std::string(kTenancyBase) + c.items;
    auto objs = ParseObjects(yaml, "dump.yaml");
    ASSERT_TRUE(objs.ok()) << objs.error().ToString();
    Report r("k8s tenancy", TenancyRules());
    AuditTenancy(*objs, &r);
    EXPECT_EQ(Sorted(r.Ids()), Sorted(c.want)) << "case " << i << "\n" << r.RenderTable();
    ++i;
  }
}

TEST(QosCheck, Violations) {
  const char* manifests = R"(
apiVersion: v1
kind: Pod
metadata: {name: g, namespace: ml}
spec:
  containers:
  - {name: a, resources: {limits: {cpu: "2", memory: 4Gi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  template:
    spec:
      containers:
      - {name: b, resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {memory: 2Gi}}}
)";
  auto vec = [](const std::string& rows) {
    return R"({"status":"success","data":{"resultType":"vector","result":[)" + rows + "]}}";
  };
  auto row = [](const char* pod, const char* c, const char* v) {
    return std::string(R"({"metric":{"namespace":"ml","pod":")") + pod + R"(","container":")" + c +
           R"("},"value":[1710498154.0,")" + v + "\"]}";
  };
  std::string metrics = "{\"cpu\":" +
                        vec(row("g", "a", "2.3") + "," + row("web-7d9f-abcde", "b", "0.70") + "," +
                            row("stray", "x", "1")) +
                        ",\"memory_usage\":" + vec(row("g", "a", "4200000000")) +
                        ",\"memory_working_set\":" + vec(row("web-7d9f-abcde", "b", "2000000000")) +
                        "}";
  auto objs = ParseObjects(manifests, "m.yaml");
  ASSERT_TRUE(objs.ok());
  Report r("k8s qos-check", QosCheckRules());
  Status st = CheckQos(*objs, metrics, "metrics.json", &r);
  ASSERT_TRUE(st.ok()) << st.ToString();
  // g: 2.3 > 1.10*2 (QOSV001), 4.2e9 > 0.95*4Gi=4.08e9 (QOSV002);
  // web: 0.70 < 1.5*0.5=0.75 (no QOSV003), 2e9 > 0.9*2Gi=1.93e9 (QOSV004); stray: QOSV005.
  EXPECT_EQ(Sorted(r.Ids()),
            (std::vector<std::string>{"QOSV001", "QOSV002", "QOSV004", "QOSV005"}));

  Report bad("k8s qos-check", QosCheckRules());
  Status st2 = CheckQos(*objs, "[1,2]", "metrics.json", &bad);
  ASSERT_FALSE(st2.ok());
  EXPECT_EQ(st2.code(), "INVALID_ARGUMENT");
  Status st3 =
      CheckQos(*objs, R"({"cpu":{"data":{"result":[{"metric":{}}]}}})", "metrics.json", &bad);
  EXPECT_FALSE(st3.ok());
}

TEST(QosRules, PrometheusRuleFile) {
  std::string rules = PrometheusQosRules("5m");
  auto objs = ParseObjects(rules, "rules.yaml");  // valid YAML
  ASSERT_TRUE(objs.ok()) << objs.error().ToString();
  for (const char* needle :
       {"> on (namespace, pod, container)\n      (1.10 * sum by", "(0.95 * sum by",
        "(1.50 * sum by", "(0.90 * sum by", "and on (namespace, pod)\n",
        "kube_pod_container_resource_requests{resource=\"cpu\"}",
        "kube_pod_container_resource_limits{resource=\"memory\"}",
        "container_memory_working_set_bytes", "qos_class=\"guaranteed\"", "for: 5m"}) {
    EXPECT_NE(rules.find(needle), std::string::npos) << needle;
  }
}

}  // namespace
}  // namespace rsl::govern
