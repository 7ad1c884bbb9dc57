#include "govern/qos.h"

#include <gtest/gtest.h>

namespace rsl::govern {
namespace {

using nlohmann::json;

json Container(const std::string& name, json requests, json limits) {
  json c = {{"name", name}, {"image", "busybox"}};
  json res = json::object();
  if (!requests.is_null()) res["requests"] = requests;
  if (!limits.is_null()) res["limits"] = limits;
  if (!res.empty()) c["resources"] = res;
  return c;
}

// Cases after Kubernetes' pkg/apis/core/v1/helper/qos/qos_test.go.
TEST(QosClass, KubernetesCases) {
  struct Case {
    const char* name;
    json spec;
    const char* want;
  };
  json cpu100 = {{"cpu", "100m"}, {"memory", "100Mi"}};
  const Case cases[] = {
      {"best-effort", {{"containers", {Container("a", nullptr, nullptr)}}}, "BestEffort"},
      {"best-effort two containers",
       {{"containers", {Container("a", nullptr, nullptr), Container("b", nullptr, nullptr)}}},
       "BestEffort"},
      {"guaranteed", {{"containers", {Container("a", cpu100, cpu100)}}}, "Guaranteed"},
      {"guaranteed two",
       {{"containers", {Container("a", cpu100, cpu100), Container("b", cpu100, cpu100)}}},
       "Guaranteed"},
      {"limits only (requests defaulted)",
       {{"containers", {Container("a", nullptr, cpu100)}}},
       "Guaranteed"},
      {"best-effort + guaranteed",
       {{"containers", {Container("a", nullptr, nullptr), Container("b", cpu100, cpu100)}}},
       "Burstable"},
      {"burstable: request below limit",
       {{"containers",
         {Container("a", {{"cpu", "100m"}, {"memory", "100Mi"}},
                    {{"cpu", "200m"}, {"memory", "100Mi"}})}}},
       "Burstable"},
      {"memory request = limit, cpu 0 = 0",
       {{"containers",
         {Container("a", {{"cpu", "0"}, {"memory", "1Gi"}}, {{"cpu", "0"}, {"memory", "1Gi"}})}}},
       "Burstable"},
      {"memory only, equal",
       {{"containers", {Container("a", {{"memory", "1Gi"}}, {{"memory", "1Gi"}})}}},
       "Burstable"},
      {"cpu limit only", {{"containers", {Container("a", nullptr, {{"cpu", "1"}})}}}, "Burstable"},
      {"extended resource only",
       {{"containers", {Container("a", nullptr, {{"nvidia.com/gpu", 1}})}}},
       "BestEffort"},
      {"guaranteed with gpu",
       {{"containers",
         {Container("a", nullptr, {{"cpu", 2}, {"memory", "4Gi"}, {"nvidia.com/gpu", 1}})}}},
       "Guaranteed"},
      {"equal in different units",
       {{"containers",
         {Container("a", {{"cpu", "1"}, {"memory", "1024Mi"}},
                    {{"cpu", "1000m"}, {"memory", "1Gi"}})}}},
       "Guaranteed"},
      {"init container burstable",
       {{"initContainers", {Container("init", {{"cpu", "10m"}}, nullptr)}},
        {"containers", {Container("a", cpu100, cpu100)}}},
       "Burstable"},
      {"init container guaranteed",
       {{"initContainers", {Container("init", cpu100, cpu100)}},
        {"containers", {Container("a", cpu100, cpu100)}}},
       "Guaranteed"},
      {"sidecar best-effort",
       {{"initContainers", {json{{"name", "side"}, {"restartPolicy", "Always"}}}},
        {"containers", {Container("a", cpu100, cpu100)}}},
       "Burstable"},
  };
  for (const auto& c : cases) {
    Result<std::string> got = ComputeQosClass(c.spec);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.error().ToString();
    EXPECT_EQ(*got, c.want) << c.name;
  }
}

// getResourceList of the upstream test: "" leaves the resource out.
json Res(const std::string& cpu, const std::string& memory) {
  json r = json::object();
  if (!cpu.empty()) r["cpu"] = cpu;
  if (!memory.empty()) r["memory"] = memory;
  return r;
}

// Kubernetes' own TestComputePodQOS table (pkg/apis/core/v1/helper/qos/qos_test.go), case by
// case and in its order, with the PodLevelResources feature on where the case turns it on.
TEST(QosClass, UpstreamComputePodQosTable) {
  struct Case {
    const char* name;
    json spec;
    const char* want;
  };
  // Vectors, not json: a braced list of one json passed as a json parameter is that json
  // itself under clang (CWG 2076), an array of it under GCC.
  auto pod = [](std::vector<json> containers, std::vector<json> init = {},
                json pod_resources = nullptr) {
    json spec = {{"containers", containers}};
    if (!init.empty()) spec["initContainers"] = init;
    if (!pod_resources.is_null()) spec["resources"] = pod_resources;
    return spec;
  };
  auto con = [](const char* name, json req, json lim) {
    return json{{"name", name}, {"resources", {{"requests", req}, {"limits", lim}}}};
  };
  auto rr = [](json req, json lim) { return json{{"requests", req}, {"limits", lim}}; };
  json hugepages = Res("0", "0");
  hugepages["hugepages-2Mi"] = "1Gi";
  const Case cases[] = {
      {"guaranteed", pod({con("guaranteed", Res("100m", "100Mi"), Res("100m", "100Mi"))}),
       "Guaranteed"},
      {"guaranteed-guaranteed",
       pod({con("guaranteed", Res("100m", "100Mi"), Res("100m", "100Mi")),
            con("guaranteed", Res("100m", "100Mi"), Res("100m", "100Mi"))}),
       "Guaranteed"},
      {"best-effort-best-effort",
       pod({con("best-effort", Res("", ""), Res("", "")),
            con("best-effort", Res("", ""), Res("", ""))}),
       "BestEffort"},
      {"best-effort", pod({con("best-effort", Res("", ""), Res("", ""))}), "BestEffort"},
      {"best-effort-burstable",
       pod({con("best-effort", Res("", ""), Res("", "")),
            con("burstable", Res("1", ""), Res("2", ""))}),
       "Burstable"},
      {"best-effort-guaranteed",
       pod({con("best-effort", Res("", ""), Res("", "")),
            con("guaranteed", Res("10m", "100Mi"), Res("10m", "100Mi"))}),
       "Burstable"},
      {"burstable-cpu-guaranteed-memory",
       pod({con("burstable", Res("", "100Mi"), Res("", "100Mi"))}), "Burstable"},
      {"burstable-no-limits", pod({con("burstable", Res("100m", "100Mi"), Res("", ""))}),
       "Burstable"},
      {"burstable-guaranteed",
       pod({con("burstable", Res("1", "100Mi"), Res("2", "100Mi")),
            con("guaranteed", Res("100m", "100Mi"), Res("100m", "100Mi"))}),
       "Burstable"},
      {"burstable-unbounded-but-requests-match-limits",
       pod({con("burstable", Res("100m", "100Mi"), Res("200m", "200Mi")),
            con("burstable-unbounded", Res("100m", "100Mi"), Res("", ""))}),
       "Burstable"},
      {"burstable-1", pod({con("burstable", Res("10m", "100Mi"), Res("100m", "200Mi"))}),
       "Burstable"},
      {"burstable-2", pod({con("burstable", Res("0", "0"), Res("100m", "200Mi"))}), "Burstable"},
      {"best-effort-hugepages", pod({con("best-effort", hugepages, hugepages)}), "BestEffort"},
      {"init-container",
       pod({con("best-effort", Res("", ""), Res("", ""))},
           {con("burstable", Res("10m", "100Mi"), Res("100m", "200Mi"))}),
       "Burstable"},
      {"guaranteed-with-pod-level-resources",
       pod({con("best-effort", Res("", ""), Res("", ""))}, {},
           rr(Res("10m", "100Mi"), Res("10m", "100Mi"))),
       "Guaranteed"},
      {"guaranteed-with-pod-and-container-level-resources",
       pod({con("burstable", Res("3m", "10Mi"), Res("5m", "20Mi"))}, {},
           rr(Res("10m", "100Mi"), Res("10m", "100Mi"))),
       "Guaranteed"},
      {"burstable-with-pod-level-resources",
       pod({con("best-effort", Res("", ""), Res("", ""))}, {},
           rr(Res("10m", "10Mi"), Res("20m", "50Mi"))),
       "Burstable"},
      {"burstable-with-pod-and-container-level-resources",
       pod({con("burstable", Res("5m", "10Mi"), Res("5m", "10Mi"))}, {},
           rr(Res("10m", "10Mi"), Res("20m", "50Mi"))),
       "Burstable"},
      {"burstable-with-pod-and-container-level-requests",
       pod({con("burstable", Res("5m", "10Mi"), Res("", ""))}, {},
           rr(Res("10m", "10Mi"), Res("", ""))),
       "Burstable"},
      {"burstable-with-pod-and-container-level-resources-2",
       pod({con("burstable", Res("5m", "10Mi"), Res("", "")),
            con("guaranteed", Res("5m", "10Mi"), Res("5m", "10Mi"))},
           {}, rr(Res("10m", "10Mi"), Res("5m", ""))),
       "Burstable"},
  };
  for (const auto& c : cases) {
    Result<std::string> got = ComputeQosClass(c.spec);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.error().ToString();
    EXPECT_EQ(*got, c.want) << c.name;
  }
}

// Pod-level requests are defaulted from pod-level limits as the API server does: to the
// containers' aggregated request where some container sets one, else to the limit.
TEST(QosClass, PodLevelRequestsDefaultFromLimits) {
  json limits_only = {{"containers", {Container("a", nullptr, nullptr)}},
                      {"resources", {{"limits", Res("1", "1Gi")}}}};
  EXPECT_EQ(*ComputeQosClass(limits_only), "Guaranteed");
  json with_requests = {{"containers", {Container("a", Res("500m", "256Mi"), nullptr)}},
                        {"resources", {{"limits", Res("1", "1Gi")}}}};
  EXPECT_EQ(*ComputeQosClass(with_requests), "Burstable");
  // Only resources the feature knows make spec.resources count.
  json gpu_only = {{"containers", {Container("a", Res("1", "1Gi"), Res("1", "1Gi"))}},
                   {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}};
  EXPECT_EQ(*ComputeQosClass(gpu_only), "Guaranteed");
  json bad = {{"containers", {Container("a", nullptr, nullptr)}},
              {"resources", {{"requests", {{"memory", "lots"}}}}}};
  auto err = ComputeQosClass(bad);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().path, "spec.resources.requests.memory");
}

// oom_score_adj with pod-level resources (KEP-2837): the pod memory request no container
// claims is shared equally among all containers; a sidecar is never above the regular
// container with the smallest request. The eviction manager ranks by the pod-level request.
TEST(QosAudit, PodLevelOomScoreAdjAndEviction) {
  const char* yaml = R"(kind: Pod
metadata: {name: p}
spec:
  resources:
    requests: {cpu: "1", memory: 2Gi}
    limits: {cpu: "2", memory: 4Gi}
  initContainers:
  - name: side
    restartPolicy: Always
  containers:
  - name: a
    resources: {requests: {memory: 512Mi}}
  - name: b
    resources: {requests: {memory: 256Mi}}
)";
  auto objs = ParseObjects(yaml, "p.yaml");
  ASSERT_TRUE(objs.ok()) << objs.error().ToString();
  Report report("k8s qos", QosRules());
  auto res = AnalyzeQos(*objs, QosOptions{}, &report);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].qos_class, "Burstable");
  ASSERT_EQ(res[0].containers.size(), 3u);
  // Unclaimed: 2Gi - 768Mi = 1280Mi, 447392426 bytes for each of 3 containers. Node 8Gi:
  // a: 1000 - 1000*(512Mi + share)/8Gi = 886; b: 1000 - 1000*(256Mi + share)/8Gi = 917;
  // side: 1000 - 1000*share/8Gi = 948, lowered to b's 917 (the smallest regular request).
  EXPECT_EQ(res[0].containers[0].name, "side");
  EXPECT_EQ(res[0].containers[0].oom_score_adj, 917);
  EXPECT_EQ(res[0].containers[1].oom_score_adj, 886);
  EXPECT_EQ(res[0].containers[2].oom_score_adj, 917);
  EXPECT_EQ(res[0].eviction_memory_request, 2.0L * 1024 * 1024 * 1024);
  json j = res[0].ToJson();
  EXPECT_EQ(j["podResources"]["memoryMax"], "4294967296");
  EXPECT_EQ(j["podResources"]["cpuMax"], "200000 100000");
  EXPECT_EQ(report.Ids(), std::vector<std::string>{}) << report.RenderTable();
  // Without pod-level resources the containers' own requests decide, as before.
  auto plain = ParseObjects(
      "kind: Pod\nmetadata: {name: q}\nspec:\n  containers:\n  - name: a\n    resources: "
      "{requests: {memory: 512Mi}}\n",
      "q.yaml");
  ASSERT_TRUE(plain.ok());
  auto q = AnalyzeQos(*plain, QosOptions{}, &report);
  EXPECT_EQ(q[0].containers[0].oom_score_adj, 938);
  EXPECT_EQ(q[0].eviction_memory_request, 512.0L * 1024 * 1024);
  // A pod-level limit far above the pod-level request is flagged like a container's.
  auto wide = ParseObjects(
      "kind: Pod\nmetadata: {name: w}\nspec:\n  resources: {requests: {memory: 256Mi}, limits: "
      "{memory: 4Gi}}\n  containers:\n  - name: a\n",
      "w.yaml");
  ASSERT_TRUE(wide.ok());
  Report wr("k8s qos", QosRules());
  AnalyzeQos(*wide, QosOptions{}, &wr);
  ASSERT_EQ(wr.Ids(), std::vector<std::string>{"QOS001"}) << wr.RenderTable();
  EXPECT_EQ(wr.findings()[0].message.rfind("pod-level resources: memory limit 4Gi is 16.0x", 0), 0u)
      << wr.findings()[0].message;
}

TEST(QosClass, InvalidQuantityIsAnError) {
  json spec = {{"containers", {Container("a", {{"memory", "12Qi"}}, nullptr)}}};
  Result<std::string> got = ComputeQosClass(spec);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(got.error().path, "spec.containers[0].resources.requests.memory");
  EXPECT_EQ(got.error().value, "12Qi");
}

TEST(OomScoreAdj, KubeletPolicy) {
  const long double kGi = 1024.0L * 1024 * 1024;
  EXPECT_EQ(OomScoreAdj("Guaranteed", false, kGi, 8 * kGi), -997);
  EXPECT_EQ(OomScoreAdj("BestEffort", false, 0, 8 * kGi), 1000);
  EXPECT_EQ(OomScoreAdj("BestEffort", true, 0, 8 * kGi), -997);  // node-critical
  // 128Mi of 8Gi: 1000 - 1000*128Mi/8Gi = 1000 - 15 (integer division) = 985.
  EXPECT_EQ(OomScoreAdj("Burstable", false, 128.0L * 1024 * 1024, 8 * kGi), 985);
  EXPECT_EQ(OomScoreAdj("Burstable", false, 0, 8 * kGi), 999);       // never 1000
  EXPECT_EQ(OomScoreAdj("Burstable", false, 16 * kGi, 8 * kGi), 3);  // floor 1000-997
  EXPECT_EQ(OomScoreAdj("Burstable", false, 4 * kGi, 8 * kGi), 500);
}

TEST(Quantity, Parse) {
  struct Case {
    const char* text;
    long double want;
  };
  const Case cases[] = {
      {"100m", 0.1L}, {"2", 2},      {"1.5", 1.5L}, {"1Gi", 1073741824.0L}, {"512Mi", 536870912.0L},
      {"1e3", 1000},  {"1E", 1e18L}, {"2k", 2000},  {"1M", 1e6L},           {"0", 0}};
  for (const auto& c : cases) {
    Result<long double> v = ParseQuantity(std::string(c.text));
    ASSERT_TRUE(v.ok()) << c.text;
    EXPECT_TRUE(QuantityEqual(*v, c.want)) << c.text << " -> " << static_cast<double>(*v);
  }
  for (const char* bad : {"", "abc", "1.2.3", "5Qi", "m", "1ee"}) {
    EXPECT_FALSE(ParseQuantity(std::string(bad)).ok()) << bad;
  }
}

struct AuditCase {
  const char* name;
  const char* yaml;
  std::vector<std::string> want_ids;
  const char* want_class;
};

TEST(QosAudit, FindingIds) {
  const AuditCase cases[] = {
      {"seed 2.2 mismatch: 128Mi vs 2Gi",
       R"(apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  containers:
  - name: app
    resources:
      requests: {memory: "128Mi", cpu: "100m"}
      limits: {memory: "2Gi", cpu: "500m"}
)",
       {"QOS001", "QOS002"},
       "Burstable"},
      {"best effort",
       "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}]}\n",
       {"QOS003"},
       "BestEffort"},
      {"guaranteed clean",
       "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, resources: {limits: "
       "{cpu: 2, memory: 4Gi}}}]}\n",
       {},
       "Guaranteed"},
      {"seed annotations",
       R"(kind: Pod
metadata:
  name: p
  annotations:
    seedance.qos/latency-sensitivity: "memory-bandwidth-bound"
    seedance.qos/burst-policy: "mem-soft-limit:3Gi,cpu-burst-cap:300%"
spec:
  containers:
  - name: a
    resources: {requests: {cpu: 500m, memory: 2Gi}, limits: {cpu: 1, memory: 4Gi}}
)",
       {"QOS004"},
       "Burstable"},
      {"annotation above limit and typo",
       R"(kind: Pod
metadata:
  name: p
  annotations:
    seedance.qos/latency-sensitivity: "memory-bandwith-bound"
    seedance.qos/burst-policy: "mem-soft-limit:8Gi,cpu-burst:2"
spec:
  containers:
  - name: a
    resources: {requests: {cpu: 500m, memory: 2Gi}, limits: {cpu: 1, memory: 4Gi}}
)",
       {"QOS006", "QOS006", "QOS006", "QOS004"},
       "Burstable"},
      {"bad quantity",
       "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, "
       "resources: {limits: {memory: lots}}}]}\n",
       {"QOS005"},
       ""},
      {"status wins",
       "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}]}\nstatus: {qosClass: "
       "Burstable}\n",
       {"QOS007"},
       "Burstable"},
      {"deployment template",
       R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: prod}
spec:
  template:
    spec:
      containers:
      - name: a
        resources: {requests: {memory: 100Mi}, limits: {memory: 1Gi}}
)",
       {"QOS001"},
       "Burstable"},
  };
  for (const auto& c : cases) {
    Result<std::vector<K8sObject>> objs = ParseObjects(c.yaml, "t.yaml");
    ASSERT_TRUE(objs.ok()) << c.name << objs.error().ToString();
    Report report("k8s qos", QosRules());
    std::vector<QosResult> res = AnalyzeQos(*objs, QosOptions{}, &report);
    ASSERT_EQ(res.size(), 1u) << c.name;
    EXPECT_EQ(report.Ids(), c.want_ids) << c.name << "\n" << report.RenderTable();
    EXPECT_EQ(res[0].qos_class, c.want_class) << c.name;
  }
}

TEST(QosAudit, AnnotationCgroupValues) {
  const char* yaml = R"(kind: Pod
metadata:
  name: p
  annotations:
    seedance.qos/burst-policy: "mem-soft-limit:3Gi,cpu-burst-cap:300%"
spec:
  containers:
  - name: a
    resources: {requests: {cpu: 500m, memory: 2Gi}, limits: {cpu: 1, memory: 4Gi}}
)";
  auto objs = ParseObjects(yaml, "t.yaml");
  ASSERT_TRUE(objs.ok());
  Report report("k8s qos", QosRules());
  auto res = AnalyzeQos(*objs, QosOptions{}, &report);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].annotation_cgroup["memory.high"], "3221225472");
  EXPECT_EQ(res[0].annotation_cgroup["cpu.max"], "150000 100000");  // 300% of 500m
  EXPECT_EQ(res[0].containers[0].cpu_max, "100000 100000");
  EXPECT_EQ(res[0].containers[0].memory_max, "4294967296");
  // 2Gi request on the default 8Gi node: 1000 - 250 = 750.
  EXPECT_EQ(res[0].containers[0].oom_score_adj, 750);
  json j = res[0].ToJson();
  EXPECT_EQ(j["qosClass"], "Burstable");
  EXPECT_EQ(j["kind"], "Pod");
  EXPECT_EQ(j["name"], "p");
}

TEST(K8sObjects, ListsAndMultiDocs) {
  const char* text = R"(apiVersion: v1
kind: List
items:
- kind: Pod
  metadata: {name: a}
- kind: Pod
  metadata: {name: b}
---
kind: Pod
metadata: {name: c, namespace: x}
---
)";
  auto objs = ParseObjects(text, "m.yaml");
  ASSERT_TRUE(objs.ok());
  ASSERT_EQ(objs->size(), 3u);
  EXPECT_EQ((*objs)[0].name(), "a");
  EXPECT_EQ((*objs)[0].line, 4);
  EXPECT_EQ((*objs)[2].namespace_(), "x");
  EXPECT_EQ((*objs)[2].line, 9);
  auto json_objs = ParseObjects(
      R"({"kind":"PodList","items":[{"kind":"Pod","metadata":{"name":"z"}}]})", "d.json");
  ASSERT_TRUE(json_objs.ok());
  ASSERT_EQ(json_objs->size(), 1u);
  EXPECT_EQ((*json_objs)[0].name(), "z");
  auto bad = ParseObjects("kind: Pod\nmetadata: {name: [\n", "bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "SPEC_PARSE_ERROR");
  EXPECT_EQ(bad.error().pos.file, "bad.yaml");
}

}  // namespace
}  // namespace rsl::govern
