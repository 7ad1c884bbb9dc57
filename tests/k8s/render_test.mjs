// `seedctl k8s render` against the official Kubernetes schema (label `k8s`): every example and
// generated variations (GPUs, every capability, secrets, serving with autoscaling, timeouts,
// odd names) render, every object validates with kubernetes-models, `seedctl k8s qos` says
// Guaranteed for every pod, and the validator does catch a broken object.
// Needs RSL_BIN_DIR (the built seedctl) and tests/node_modules (scripts/npm-tests.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { validateText } from "./validate.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const seedctl = join(process.env.RSL_BIN_DIR ?? join(root, "build-asan", "bin"), "seedctl");
const tmp = mkdtempSync(join(process.env.TEST_TMPDIR ?? "/tmp", "k8s-render-"));

function run(args, input) {
  const r = spawnSync(seedctl, args, { encoding: "utf8", input, env: { ...process.env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function lastLine(text) {
  const lines = text.trim().split("\n");
  return lines[lines.length - 1];
}

function render(file, extra = []) {
  const r = run(["k8s", "render", "-f", file, ...extra]);
  assert.equal(r.code, 0, `render ${file} failed:\n${r.err}`);
  return r.out;
}

function objects(yamlText) {
  return parseAllDocuments(yamlText).map((d) => d.toJS()).filter((o) => o);
}

async function assertValid(yamlText, what) {
  const r = await validateText(yamlText, what);
  assert.deepEqual(r.errors, [], `${what}: schema errors`);
  assert.ok(r.valid > 0, `${what}: no objects`);
  return r.valid;
}

// `seedctl k8s qos` over rendered objects: {"Pod/name": "Guaranteed", ...}.
function qosClasses(yamlText) {
  const file = join(tmp, `qos-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, yamlText);
  const r = run(["k8s", "qos", "-f", file, "-o", "json"]);
  assert.ok(r.out.trim().startsWith("["), `k8s qos printed no JSON:\n${r.out}\n${r.err}`);
  const out = {};
  for (const x of JSON.parse(r.out)) out[`${x.kind}/${x.name}`] = x.qosClass;
  return out;
}

function workloadFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...workloadFiles(p));
    else if (name.endsWith(".yaml") && /^kind:\s*AIWorkload\s*$/m.test(readFileSync(p, "utf8"))) {
      out.push(p);
    }
  }
  return out.sort();
}

function writeWorkload(name, text) {
  const file = join(tmp, `${name}.yaml`);
  writeFileSync(file, text);
  return file;
}

const examples = workloadFiles(join(root, "examples"));

test("every example renders, validates against the schema and is Guaranteed", async () => {
  assert.ok(examples.length >= 6, `only ${examples.length} example workloads found`);
  for (const file of examples) {
    const yamlText = render(file);
    await assertValid(yamlText, file);
    const pods = objects(yamlText).filter((o) => o.kind === "Pod" || o.kind === "Deployment");
    assert.ok(pods.length > 0, `${file}: no Pod or Deployment`);
    const classes = qosClasses(yamlText);
    for (const p of pods) {
      assert.equal(classes[`${p.kind}/${p.metadata.name}`], "Guaranteed", `${file}: ${p.kind}/${p.metadata.name}`);
    }
    // -o json is the same objects.
    const json = run(["k8s", "render", "-f", file, "-o", "json"]);
    assert.equal(json.code, 0, json.err);
    assert.deepEqual(JSON.parse(json.out), objects(yamlText));
  }
});

const capabilities = [
  "tensor_core", "fp16_support", "bf16_support", "tf32_support", "fp8_support", "int8_support",
  "fp64_support", "sparsity", "transformer_engine", "low_latency", "nvlink", "high_memory", "mig",
  "video_codec",
];

const variations = {
  "gpus-and-every-capability": `
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: gpu-matrix, namespace: ml-team}
spec:
  resources: {cpu: "4", memory: 16Gi, gpu: {count: 1, capability: [tensor_core], memory: 24Gi}}
  pipeline:
${capabilities.map((c, i) => `    - {name: s${i}, image: "ghcr.io/acme/train:v1", command: [python, t.py], resources: {gpu: {count: ${1 + (i % 8)}, capability: [${c}]}}}`).join("\n")}
`,
  "secrets-and-configmaps": `
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: with-secrets}
spec:
  imagePullSecrets: [registry-creds]
  resources: {cpu: 250m, memory: 300Mi}
  pipeline:
    - name: a
      image: "registry.example.com:5000/team/a@sha256:${"b".repeat(64)}"
      command: [sh, -c, "env"]
      env: {MODE: fast, COUNT: "3", FLAG: "true"}
      envFrom: [{secretRef: db-creds}, {configMapRef: settings}]
    - {name: b, image: "volc/b:v1", command: [x], dependsOn: [a], envFrom: [{secretRef: db-creds}]}
`,
  "serving-with-autoscaling": `
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: svc}
spec:
  resources:
    cpu: "2"
    memory: 2Gi
    gpu: {count: 1, capability: [low_latency, int8_support]}
    autoscaling: {targetUtilization: 60, minReplicas: 2, maxReplicas: 10, scaleDownDelay: 1h}
  pipeline:
    - {name: warm, image: "volc/warm:v1", command: [x]}
    - name: serve
      image: "volc/serve:v3"
      command: [python, serve.py]
      dependsOn: [warm]
      serving: true
      port: 8500
      readinessProbe: {httpGet: {path: /ready, port: 8501}, periodSeconds: 5, failureThreshold: 2}
      readyTimeout: 10m
`,
  "serving-without-autoscaling": `
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: svc-fixed}
spec:
  pipeline:
    - {name: serve, image: "volc/serve:v3", command: [x], serving: true}
`,
  timeouts: `
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: timed}
spec:
  resources: {cpu: 100m, memory: 64Mi}
  pipeline:
    timeout: 2h
    steps:
      - {name: quick, image: "volc/a:v1", command: [x], timeout: 500ms}
      - {name: slow, image: "volc/a:v1", command: [x], timeout: 36h}
      - {name: bounded-by-workload, image: "volc/a:v1", command: [x]}
`,
  "odd-names": `
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata:
  name: fraud-detection-${"x".repeat(47)}
  namespace: ${"n".repeat(63)}
  labels: {team: Risk_Team.EU, "example.com/cost-center": "42"}
spec:
  pipeline:
    - {name: ${"s".repeat(63)}, image: "volc/a:v1", command: [x], envFrom: [{secretRef: ${"k".repeat(60)}.prod.${"k".repeat(60)}}]}
    - {name: "1st", image: "volc/a:v1", command: [x], dependsOn: [${"s".repeat(63)}]}
    - {name: serve, image: "volc/a:v1", command: [x], serving: true}
`,
};

test("generated variations render and validate, every pod Guaranteed", async () => {
  for (const [name, text] of Object.entries(variations)) {
    const file = writeWorkload(name, text);
    for (const extra of [[], ["--run-id", "Run_2026.12.02/ODD-" + "9".repeat(80), "--k8s-namespace", "prod-ml"]]) {
      const yamlText = render(file, extra);
      await assertValid(yamlText, `${name} ${extra.join(" ")}`);
      const objs = objects(yamlText);
      const classes = qosClasses(yamlText);
      for (const o of objs) {
        assert.match(o.metadata.name, /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/, `${name}: ${o.metadata.name}`);
        if (extra.length) assert.equal(o.metadata.namespace, "prod-ml");
        if (o.kind === "Pod" || o.kind === "Deployment") {
          assert.equal(classes[`${o.kind}/${o.metadata.name}`], "Guaranteed", `${name}: ${o.metadata.name}`);
        }
      }
    }
  }
  const kinds = (n) => objects(render(join(tmp, `${n}.yaml`))).map((o) => o.kind);
  assert.deepEqual(kinds("serving-with-autoscaling"),
                   ["ConfigMap", "Pod", "Deployment", "Service", "HorizontalPodAutoscaler"]);
  assert.deepEqual(kinds("serving-without-autoscaling"), ["ConfigMap", "Deployment", "Service"]);
  assert.deepEqual(kinds("secrets-and-configmaps"),
                   ["ConfigMap", "Secret", "ConfigMap", "Secret", "Pod", "Pod"]);
  const timed = objects(render(join(tmp, "timeouts.yaml"))).filter((o) => o.kind === "Pod");
  assert.deepEqual(timed.map((p) => p.spec.activeDeadlineSeconds), [1, 129600, 7200]);
});

test("a custom capability needs a label table entry; the table maps it", async () => {
  const catalog = join(tmp, "catalog.yaml");
  writeFileSync(catalog, "capabilities:\n  - name: fast_fabric\n    scores: {H100: 100}\n");
  const file = writeWorkload("custom-cap", `
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: custom}
spec:
  pipeline:
    - {name: a, image: "volc/a:v1", command: [x], resources: {gpu: {count: 1, capability: [fast_fabric]}}}
`);
  const r = run(["k8s", "render", "-f", file, "--capabilities", catalog]);
  assert.equal(r.code, 1);
  assert.equal(lastLine(r.err), "K8S_CAPABILITY_UNMAPPED");
  assert.match(r.err, /custom-cap\.yaml:7:\d+: K8S_CAPABILITY_UNMAPPED spec\.pipeline\.steps\[0\]\.resources\.gpu\.capability\[0\]/);
  const table = join(tmp, "labels.yaml");
  writeFileSync(table, "capabilityLabels:\n  fast_fabric: {key: example.com/fabric, operator: In, values: [ib-400g]}\n");
  const yamlText = render(file, ["--capabilities", catalog, "--capability-labels", table]);
  await assertValid(yamlText, "custom-cap");
  assert.match(yamlText, /example\.com\/fabric/);
  writeFileSync(table, "capabilityLabels:\n  fast_fabric: {key: example.com/fabric, operator: Near}\n");
  const bad = run(["k8s", "render", "-f", file, "--capabilities", catalog, "--capability-labels", table]);
  assert.equal(bad.code, 1);
  assert.equal(lastLine(bad.err), "K8S_LABEL_TABLE_INVALID");
  assert.match(bad.err, /labels\.yaml:2:\d+: K8S_LABEL_TABLE_INVALID/);
});

test("bad input ends with a stable code", () => {
  const ok = writeWorkload("plain", variations["serving-without-autoscaling"]);
  const ns = run(["k8s", "render", "-f", ok, "--k8s-namespace", "Not_A_Namespace"]);
  assert.equal(ns.code, 1);
  assert.equal(lastLine(ns.err), "INVALID_ARGUMENT");
  const invalid = writeWorkload("invalid", "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: x}\nspec: {pipeline: []}\n");
  const bad = run(["k8s", "render", "-f", invalid]);
  assert.equal(bad.code, 1);
  assert.match(lastLine(bad.err), /^SPEC_/);
  const long = writeWorkload("long-delay", `
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: svc}
spec:
  resources: {autoscaling: {targetUtilization: 60, maxReplicas: 3, scaleDownDelay: 2h}}
  pipeline:
    - {name: serve, image: "volc/serve:v3", command: [x], serving: true}
`);
  const nr = run(["k8s", "render", "-f", long]);
  assert.equal(nr.code, 1);
  assert.equal(lastLine(nr.err), "K8S_NOT_REPRESENTABLE");
});

test("the checks can fail: a broken Pod is caught, cpu without limits is not Guaranteed", async () => {
  const yamlText = render(examples.find((f) => f.endsWith("fraud-detect-workload.yaml")));
  const objs = objects(yamlText);
  const pod = objs.find((o) => o.kind === "Pod");
  const broken = structuredClone(pod);
  broken.spec.activeDeadlineSeconds = "ten";
  broken.spec.containers[0].resources.limits.cpu = "lots";
  const file = join(tmp, "broken.json");
  writeFileSync(file, JSON.stringify([objs[0], broken]));
  const r = spawnSync(process.execPath, [join(here, "validate.mjs"), file], { encoding: "utf8" });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`Pod/${pod.metadata.name}: .*/spec/activeDeadlineSeconds must be integer`));
  assert.match(r.stderr, /\/spec\/containers\/0\/resources\/limits\/cpu must match format "quantity"/);
  const unknown = await validateText("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n", "w.yaml");
  assert.deepEqual(unknown.errors, ["w.yaml: Widget/w: no schema for apiVersion example.com/v1 kind Widget"]);
  const good = spawnSync(process.execPath, [join(here, "validate.mjs"), "-"], { encoding: "utf8", input: yamlText });
  assert.equal(good.status, 0, good.stderr);

  const burst = render(examples.find((f) => f.endsWith("fraud-detect-workload.yaml")), ["--no-cpu-limits"]);
  await assertValid(burst, "no-cpu-limits");
  const classes = qosClasses(burst);
  for (const o of objects(burst).filter((x) => x.kind === "Pod")) {
    assert.equal(classes[`Pod/${o.metadata.name}`], "Burstable");
  }
});
