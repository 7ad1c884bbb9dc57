#include "k8s/render.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "k8s/names.h"
#include "spec/parse.h"

namespace rsl::k8s {
namespace {

using nlohmann::json;

spec::Workload Parse(const std::string& yaml, const spec::ParseOptions& opt = {}) {
  auto r = spec::ParseWorkload(yaml, "test.yaml", opt);
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors.front().ToString());
  return r.workload;
}

std::vector<json> Render(const spec::Workload& w, const RenderContext& ctx = {}) {
  auto r = RenderRun(w, ctx);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().ToString());
  return r.ok() ? *r : std::vector<json>{};
}

std::vector<json> OfKind(const std::vector<json>& objs, const std::string& kind) {
  std::vector<json> out;
  for (const auto& o : objs) {
    if (o["kind"] == kind) out.push_back(o);
  }
  return out;
}

std::map<std::string, std::string> EnvOf(const json& container) {
  std::map<std::string, std::string> env;
  for (const auto& e : container["env"]) env[e["name"]] = e["value"];
  return env;
}

const char* kTwoSteps = R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: fraud, namespace: risk, labels: {team: payments}}
spec:
  resources: {cpu: "2", memory: 4Gi}
  data:
    input: {uri: "s3://bucket/in/data.csv"}
  pipeline:
    - {name: prep, image: "volc/prep:v1", command: [python, prep.py], args: ["--fast"]}
    - name: train
      image: "volc/train:v2"
      command: [python, train.py]
      dependsOn: [prep]
      timeout: 90m
      resources:
        cpu: 1500m
        gpu: {count: 2, capability: [fp8_support, mig], memory: 40Gi}
)";

TEST(K8sRender, PodPerBatchStepWithRequestsEqualToLimits) {
  auto objs = Render(Parse(kTwoSteps));
  auto pods = OfKind(objs, "Pod");
  ASSERT_EQ(pods.size(), 2u);
  const json& prep = pods[0]["spec"];
  EXPECT_EQ(prep["restartPolicy"], "Never");
  const json& res = prep["containers"][0]["resources"];
  EXPECT_EQ(res["requests"], (json{{"cpu", "2"}, {"memory", "4Gi"}}));
  EXPECT_EQ(res["limits"], (json{{"cpu", "2"}, {"memory", "4Gi"}}));
  EXPECT_EQ(prep["containers"][0]["command"], (json{"python", "prep.py"}));
  EXPECT_EQ(prep["containers"][0]["args"], (json{"--fast"}));
  EXPECT_FALSE(prep.contains("activeDeadlineSeconds"));
  EXPECT_FALSE(prep.contains("affinity"));

  const json& train = pods[1]["spec"];
  const json& tres = train["containers"][0]["resources"];
  EXPECT_EQ(tres["requests"], (json{{"cpu", "1500m"}, {"memory", "4Gi"}}));
  EXPECT_EQ(tres["limits"], (json{{"cpu", "1500m"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(train["activeDeadlineSeconds"], 5400);
  EXPECT_EQ(train["tolerations"][0]["key"], "nvidia.com/gpu");
}

TEST(K8sRender, DefaultsMakeAStepWithoutRequestsGuaranteed) {
  auto w = Parse(R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: hello}
spec:
  pipeline:
    - {name: hello, command: [sh, -c, 'echo hi']}
)");
  auto pods = OfKind(Render(w), "Pod");
  ASSERT_EQ(pods.size(), 1u);
  const json& c = pods[0]["spec"]["containers"][0];
  EXPECT_EQ(c["image"], kDefaultImage);
  EXPECT_EQ(c["resources"]["requests"], c["resources"]["limits"]);
  EXPECT_EQ(c["resources"]["limits"]["memory"], "1Gi");
  RenderContext burstable;
  burstable.cpu_limits = false;
  auto b = OfKind(Render(w, burstable), "Pod");
  EXPECT_FALSE(b[0]["spec"]["containers"][0]["resources"]["limits"].contains("cpu"));
}

TEST(K8sRender, CapabilitiesAndDeviceMemoryBecomeOneRequiredAffinityTerm) {
  auto pods = OfKind(Render(Parse(kTwoSteps)), "Pod");
  const json& terms = pods[1]["spec"]["affinity"]["nodeAffinity"]
                          ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u);
  json want =
      json::array({{{"key", "nvidia.com/gpu.family"},
                    {"operator", "In"},
                    {"values", {"ada-lovelace", "hopper", "blackwell"}}},
                   {{"key", "nvidia.com/mig.capable"}, {"operator", "In"}, {"values", {"true"}}},
                   {{"key", "nvidia.com/gpu.memory"}, {"operator", "Gt"}, {"values", {"40959"}}}});
  EXPECT_EQ(terms[0]["matchExpressions"], want);
}

TEST(K8sRender, CapabilitiesWithTheSameRequirementAreMerged) {
  auto w = Parse(R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: t}
spec:
  resources: {gpu: {count: 1, capability: [tensor_core, fp16_support]}}
  pipeline:
    - {name: a, image: "volc/a:v1", command: [x]}
)");
  auto pods = OfKind(Render(w), "Pod");
  const json& exprs =
      pods[0]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
          ["nodeSelectorTerms"][0]["matchExpressions"];
  EXPECT_EQ(
      exprs,
      (json::array(
          {{{"key", "nvidia.com/gpu.compute.major"}, {"operator", "Gt"}, {"values", {"6"}}}})));
}

TEST(K8sRender, UnmappedCapabilityIsAnErrorWithItsPath) {
  spec::ParseOptions opt;
  opt.extra_capabilities = {"fast_fabric"};
  auto w = Parse(R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: t}
spec:
  pipeline:
    - name: a
      image: "volc/a:v1"
      command: [x]
      resources: {gpu: {count: 1, capability: [tensor_core, fast_fabric]}}
)",
                 opt);
  auto r = RenderRun(w, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "K8S_CAPABILITY_UNMAPPED");
  EXPECT_EQ(r.error().path, "spec.pipeline.steps[0].resources.gpu.capability[1]");
  EXPECT_EQ(r.error().value, "fast_fabric");
  EXPECT_EQ(r.error().pos.line, 10);

  RenderContext ctx;
  auto table = CapabilityLabels::Parse(
      "capabilityLabels:\n  fast_fabric: {key: example.com/fabric, operator: Exists}\n", "t.yaml");
  ASSERT_TRUE(table.ok()) << table.error().ToString();
  ctx.capability_labels = *table;
  auto ok = RenderRun(w, ctx);
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_NE(OfKind(*ok, "Pod")[0].dump().find("example.com/fabric"), std::string::npos);
}

TEST(K8sRender, LabelsNameWorkloadRunStepAttemptAndTheOwner) {
  RenderContext ctx;
  ctx.run_id = "run-20261202-0a1b2c3d";
  ctx.attempt = 3;
  auto objs = Render(Parse(kTwoSteps), ctx);
  ASSERT_FALSE(objs.empty());
  const json& owner = objs[0];
  EXPECT_EQ(owner["kind"], "ConfigMap");
  EXPECT_EQ(owner["metadata"]["name"], RunObjectName(Parse(kTwoSteps), ctx));
  EXPECT_EQ(owner["metadata"]["namespace"], "risk");
  EXPECT_EQ(owner["data"]["run"], ctx.run_id);
  auto pods = OfKind(objs, "Pod");
  const json& labels = pods[1]["metadata"]["labels"];
  EXPECT_EQ(labels["rsl.dev/workload"], "fraud");
  EXPECT_EQ(labels["rsl.dev/namespace"], "risk");
  EXPECT_EQ(labels["rsl.dev/run"], ctx.run_id);
  EXPECT_EQ(labels["rsl.dev/step"], "train");
  EXPECT_EQ(labels["rsl.dev/attempt"], "3");
  EXPECT_EQ(labels["app.kubernetes.io/managed-by"], "rsl");
  EXPECT_EQ(labels["team"], "payments");
  for (size_t i = 1; i < objs.size(); ++i) {
    const json& ref = objs[i]["metadata"]["ownerReferences"][0];
    EXPECT_EQ(ref["name"], owner["metadata"]["name"]);
    EXPECT_EQ(ref["kind"], "ConfigMap");
    EXPECT_EQ(ref["uid"], kOwnerUidPlaceholder);
  }
}

TEST(K8sRender, EnvCarriesTheRslVariablesAsObjectStoreUris) {
  RenderContext ctx;
  ctx.run_id = "r1";
  ctx.staging_prefix = "s3://stage/rsl/";
  ctx.workload_id = "wl-20261202-00000001";
  ctx.image_digests["volc/train:v2"] = "sha256:" + std::string(64, 'a');
  auto w = Parse(kTwoSteps);
  auto pod = RenderStepPod(w, 1, 2, ctx, {{"prep", 3}});
  ASSERT_TRUE(pod.ok()) << pod.error().ToString();
  const json& c = (*pod)["spec"]["containers"][0];
  auto env = EnvOf(c);
  EXPECT_EQ(env["RSL_INPUT"], "s3://bucket/in/data.csv");
  EXPECT_EQ(env["RSL_INPUT_URI"], "s3://bucket/in/data.csv");
  EXPECT_EQ(env["RSL_OUTPUT"], "s3://stage/rsl/risk/r1/staging/train.2");
  EXPECT_EQ(env["RSL_INPUT_PREP"], "s3://stage/rsl/risk/r1/staging/prep.3");
  EXPECT_EQ(env["RSL_RUN_ID"], "r1");
  EXPECT_EQ(env["RSL_STEP"], "train");
  EXPECT_EQ(env["RSL_ATTEMPT"], "2");
  EXPECT_EQ(env["RSL_WORKLOAD_ID"], "wl-20261202-00000001");
  EXPECT_EQ(env["RSL_BACKEND"], "k8s");
  EXPECT_EQ(env["RSL_IMAGE_DIGEST"], "sha256:" + std::string(64, 'a'));
  EXPECT_EQ(c["image"], "docker.io/volc/train@sha256:" + std::string(64, 'a'));
  EXPECT_EQ((*pod)["metadata"]["labels"]["rsl.dev/attempt"], "2");
}

TEST(K8sRender, SecretsCarryKeysNeverValues) {
  auto w = Parse(R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: t}
spec:
  imagePullSecrets: [registry-creds]
  pipeline:
    - name: a
      image: "volc/a:v1"
      command: [x]
      envFrom: [{secretRef: db-creds}, {configMapRef: settings}]
    - name: b
      image: "volc/b:v1"
      command: [x]
      envFrom: [{secretRef: db-creds}]
)");
  RenderContext ctx;
  ctx.secret_keys["db-creds"] = {"DB_PASSWORD", "DB_USER"};
  ctx.config_maps["settings"] = {{"MODE", "fast"}};
  auto objs = Render(w, ctx);
  auto secrets = OfKind(objs, "Secret");
  ASSERT_EQ(secrets.size(), 2u);  // one per source, however many steps use it; one pull secret
  EXPECT_EQ(secrets[0]["stringData"], (json{{"DB_PASSWORD", kRedacted}, {"DB_USER", kRedacted}}));
  EXPECT_EQ(secrets[1]["type"], "kubernetes.io/dockerconfigjson");
  EXPECT_EQ(secrets[1]["stringData"][".dockerconfigjson"], kRedacted);
  for (const auto& s : secrets) EXPECT_FALSE(s.contains("data")) << s.dump();
  auto cms = OfKind(objs, "ConfigMap");
  ASSERT_EQ(cms.size(), 2u);  // the owner and `settings`
  EXPECT_EQ(cms[1]["data"]["MODE"], "fast");
  auto pods = OfKind(objs, "Pod");
  const json& from = pods[0]["spec"]["containers"][0]["envFrom"];
  EXPECT_EQ(from[0]["secretRef"]["name"], secrets[0]["metadata"]["name"]);
  EXPECT_EQ(from[1]["configMapRef"]["name"], cms[1]["metadata"]["name"]);
  EXPECT_EQ(pods[0]["spec"]["imagePullSecrets"][0]["name"], secrets[1]["metadata"]["name"]);
  // The pods reference the secret; no env entry carries a secret's key or value.
  for (const auto& p : pods) {
    auto env = EnvOf(p["spec"]["containers"][0]);
    EXPECT_EQ(env.count("DB_PASSWORD"), 0u);
  }
}

TEST(K8sRender, ServingStepIsADeploymentServiceAndHpa) {
  auto w = Parse(R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: recommend}
spec:
  resources:
    cpu: 500m
    memory: 256Mi
    autoscaling: {targetUtilization: 70, minReplicas: 2, maxReplicas: 5, scaleDownDelay: 90s}
  pipeline:
    - name: serve
      image: "volc/serve:v3"
      command: [python, serve.py]
      serving: true
      port: 9000
      readinessProbe: {httpGet: {path: /ready}, periodSeconds: 2, failureThreshold: 4}
      readyTimeout: 3m
)");
  auto objs = Render(w);
  EXPECT_TRUE(OfKind(objs, "Pod").empty());
  auto deps = OfKind(objs, "Deployment");
  auto svcs = OfKind(objs, "Service");
  auto hpas = OfKind(objs, "HorizontalPodAutoscaler");
  ASSERT_EQ(deps.size(), 1u);
  ASSERT_EQ(svcs.size(), 1u);
  ASSERT_EQ(hpas.size(), 1u);
  const json& d = deps[0]["spec"];
  EXPECT_EQ(d["replicas"], 2);
  EXPECT_EQ(d["progressDeadlineSeconds"], 180);
  EXPECT_EQ(d["template"]["spec"]["restartPolicy"], "Always");
  EXPECT_FALSE(d["template"]["spec"].contains("activeDeadlineSeconds"));
  for (const auto& [k, v] : d["selector"]["matchLabels"].items()) {
    EXPECT_EQ(d["template"]["metadata"]["labels"][k], v) << k;
  }
  const json& c = d["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["ports"][0]["containerPort"], 9000);
  EXPECT_EQ(EnvOf(c)["RSL_PORT"], "9000");
  EXPECT_EQ(c["readinessProbe"]["httpGet"], (json{{"path", "/ready"}, {"port", 9000}}));
  EXPECT_EQ(c["readinessProbe"]["periodSeconds"], 2);
  EXPECT_EQ(c["readinessProbe"]["failureThreshold"], 4);
  EXPECT_EQ(svcs[0]["spec"]["selector"], d["selector"]["matchLabels"]);
  EXPECT_EQ(svcs[0]["spec"]["ports"][0]["port"], 9000);
  const json& h = hpas[0]["spec"];
  EXPECT_EQ(h["scaleTargetRef"]["name"], deps[0]["metadata"]["name"]);
  EXPECT_EQ(h["minReplicas"], 2);
  EXPECT_EQ(h["maxReplicas"], 5);
  EXPECT_EQ(h["metrics"][0]["resource"]["target"]["averageUtilization"], 70);
  EXPECT_EQ(h["behavior"]["scaleDown"]["stabilizationWindowSeconds"], 90);
  // Named, selected and rolled out as the backend does (after the workload, not the run: a
  // new version updates the same objects; its Pods come up before the old ones go).
  for (const auto& o : {deps[0], svcs[0], hpas[0]}) {
    EXPECT_EQ(o["metadata"]["name"], "rsl-recommend-serve") << o["kind"];
  }
  EXPECT_EQ(d["selector"]["matchLabels"], ServingSelector("recommend", "default", "serve"));
  EXPECT_EQ(d["selector"]["matchLabels"].count("rsl.dev/run"), 0u);
  EXPECT_EQ(d["strategy"], (json{{"type", "RollingUpdate"},
                                 {"rollingUpdate", {{"maxUnavailable", 0}, {"maxSurge", 1}}}}));
}

// Where RSL namespaces are mapped onto another Kubernetes namespace (several may share one),
// a serving step's objects carry the RSL namespace in their name, as the backend's do.
TEST(K8sRender, ServingNamesCarryAMappedNamespace) {
  const char* yaml = R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: recommend, namespace: team-a}
spec:
  pipeline:
    - {name: serve, image: "volc/serve:v3", command: [x], serving: true}
)";
  auto names = [](const std::vector<json>& objs) {
    std::set<std::string> out;
    for (const auto& o : objs) {
      if (o["kind"] != "ConfigMap" && o["kind"] != "Pod") out.insert(o["metadata"]["name"]);
    }
    return out;
  };
  // Unmapped: the Kubernetes namespace is the RSL namespace's own name.
  EXPECT_EQ(names(Render(Parse(yaml))), std::set<std::string>{"rsl-recommend-serve"});
  RenderContext ctx;
  ctx.namespaces = {{"team-a", "shared"}};
  auto objs = Render(Parse(yaml), ctx);
  const std::string want = ServingObjectName("team-a", "shared", "recommend", "serve");
  EXPECT_EQ(names(objs), std::set<std::string>{want});
  EXPECT_EQ(want.rfind("rsl-team-a-recommend-serve-", 0), 0u) << want;
  EXPECT_TRUE(IsDnsLabel(want)) << want;
  // Another namespace on the same Kubernetes namespace gets another name; the selector
  // differs by the rsl.dev/namespace label.
  EXPECT_NE(ServingObjectName("team-b", "shared", "recommend", "serve"), want);
  EXPECT_EQ(OfKind(objs, "Deployment")[0]["spec"]["selector"]["matchLabels"]["rsl.dev/namespace"],
            "team-a");
  EXPECT_EQ(OfKind(objs, "Deployment")[0]["metadata"]["namespace"], "shared");
  // Long names stay DNS labels.
  const std::string long_ns(60, 'n');
  std::string cut = ServingObjectName(long_ns, "shared", std::string(60, 'w'), "serve");
  EXPECT_TRUE(IsDnsLabel(cut)) << cut;
}

TEST(K8sRender, ScaleDownDelayOverAnHourIsNotRepresentable) {
  auto w = Parse(R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: recommend}
spec:
  resources:
    autoscaling: {targetUtilization: 70, maxReplicas: 5, scaleDownDelay: 2h}
  pipeline:
    - {name: serve, image: "volc/serve:v3", command: [x], serving: true}
)");
  auto r = RenderRun(w, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "K8S_NOT_REPRESENTABLE");
  EXPECT_EQ(r.error().path, "spec.resources.autoscaling.scaleDownDelay");
  EXPECT_EQ(r.error().value, "7200s");
}

TEST(K8sRender, NamesAndLabelValuesAreValidForLongAndOddNames) {
  std::string long_name = "fraud-detection-" + std::string(47, 'x');  // 63, the longest
  auto w = Parse(R"(
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: )" +
                 long_name + R"(, namespace: team-a}
spec:
  pipeline:
    - {name: )" + std::string(63, 's') +
                 R"(, image: "volc/a:v1", command: [x], envFrom: [{secretRef: )" +
                 std::string(60, 'k') + ".prod." + std::string(60, 'k') + R"(}]}
    - {name: serve, image: "volc/a:v1", command: [x], serving: true}
)");
  RenderContext ctx;
  ctx.run_id = "Run_With.Odd/Chars-" + std::string(80, '9');
  auto objs = Render(w, ctx);
  ASSERT_EQ(objs.size(), 5u);  // owner, secret, pod, deployment, service
  std::set<std::string> names;
  for (const auto& o : objs) {
    std::string name = o["metadata"]["name"];
    EXPECT_TRUE(IsDnsLabel(name)) << name;
    EXPECT_TRUE(name[0] >= 'a' && name[0] <= 'z') << name;  // Service names: DNS-1035
    names.insert(o["kind"].get<std::string>() + "/" + name);
    for (const auto& [k, v] : o["metadata"]["labels"].items()) {
      EXPECT_TRUE(IsLabelValue(v.get<std::string>())) << k << "=" << v;
    }
  }
  EXPECT_EQ(names.size(), objs.size());
}

TEST(K8sRender, YamlKeepsStringsThatLookLikeNumbersStrings) {
  RenderContext ctx;
  ctx.run_id = "123";
  auto objs = Render(Parse(kTwoSteps), ctx);
  std::string yaml = ToYamlDocuments(objs);
  auto docs = YAML::LoadAll(yaml);
  ASSERT_EQ(docs.size(), objs.size());
  const YAML::Node& pod = docs[docs.size() - 1];
  EXPECT_EQ(pod["metadata"]["labels"]["rsl.dev/attempt"].Tag(), "!");  // quoted: a string
  EXPECT_EQ(pod["metadata"]["labels"]["rsl.dev/run"].Tag(), "!");
  EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"].as<int>(), 5400);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].Tag(), "!");
}

}  // namespace
}  // namespace rsl::k8s
