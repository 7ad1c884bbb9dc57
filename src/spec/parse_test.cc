#include "spec/parse.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/codes.h"
#include "spec/canonical.h"
#include "spec/quantity.h"

namespace rsl::spec {
namespace {

const std::string kRepo = RSL_SOURCE_DIR;

std::string Describe(const ParseResult& r) {
  std::string s;
  for (const auto& e : r.errors) s += e.ToString() + "\n";
  return s;
}

ParseResult ParseOk(const std::string& path) {
  ParseResult r = ParseWorkloadFile(path);
  EXPECT_TRUE(r.ok()) << Describe(r);
  return r;
}

TEST(ParseTest, EveryExampleValidates) {
  int count = 0;
  for (const char* dir : {"/examples", "/tests/specs/valid"}) {
    for (const auto& entry : std::filesystem::directory_iterator(kRepo + dir)) {
      if (entry.path().extension() != ".yaml") continue;
      ParseOk(entry.path().string());
      ++count;
    }
  }
  EXPECT_GE(count, 8);
  // The shared folder beside the clone, when present (CI checks it out there).
  std::string shared = kRepo + "/../shared/examples";
  if (std::filesystem::exists(shared)) {
    for (const auto& entry : std::filesystem::directory_iterator(shared)) {
      if (entry.path().extension() == ".yaml") ParseOk(entry.path().string());
    }
  }
}

TEST(ParseTest, MinimalExampleFields) {
  ParseResult r = ParseOk(kRepo + "/examples/aiworkload-minimal.yaml");
  const Workload& w = r.workload;
  EXPECT_EQ(w.api_version, "aiengine.volc.com/v1");
  EXPECT_EQ(w.kind, "AIWorkload");
  EXPECT_EQ(w.name, "fraud-detection-finetune");
  EXPECT_EQ(w.namespace_, "default");
  EXPECT_EQ(w.resources.cpu_millis, 8000);
  EXPECT_EQ(w.resources.memory_bytes, int64_t{32} << 30);
  ASSERT_TRUE(w.resources.gpu);
  EXPECT_EQ(w.resources.gpu->count, 1);
  ASSERT_TRUE(w.data.input);
  EXPECT_EQ(w.data.input->uri, "hdfs://ns1/features/year=2024/month=06/day=15");
  ASSERT_TRUE(w.data.input->schema);
  ASSERT_EQ(w.data.input->schema->record().fields.size(), 2u);
  EXPECT_EQ(w.data.input->schema->record().fields[0].type->ToString(), "array<float>[1024]");
  ASSERT_TRUE(w.model);
  EXPECT_EQ(w.model->framework, "pytorch");
  ASSERT_EQ(w.model->dependencies.size(), 2u);
  EXPECT_EQ(w.model->dependencies[0].name, "transformers");
  EXPECT_EQ(w.model->dependencies[0].version, "4.38.2");
  EXPECT_TRUE(w.pipeline.atomic);
  ASSERT_EQ(w.pipeline.steps.size(), 3u);
  const Step* validate = w.FindStep("validate");
  ASSERT_NE(validate, nullptr);
  EXPECT_EQ(validate->when, "status.train == 'SUCCEEDED'");
  EXPECT_EQ(validate->depends_on, std::vector<std::string>{"train"});
  EXPECT_EQ(validate->command, (std::vector<std::string>{"python", "validate.py"}));
  EXPECT_EQ(validate->effective.cpu_millis, 8000);
  EXPECT_EQ(w.FindStep("nope"), nullptr);
  SourcePos pos = w.PosOf("spec.pipeline.steps[2].when");
  EXPECT_EQ(pos.ToString(), kRepo + "/examples/aiworkload-minimal.yaml:35:13");
  // Unknown paths fall back to the nearest known ancestor.
  EXPECT_EQ(w.PosOf("spec.pipeline.steps[2].nothing.here").line,
            w.PosOf("spec.pipeline.steps[2]").line);
}

// Integer range ends are kept exactly beside the doubles; a fraction or an exponent is not an
// exact integer; the exact ends decide an inverted range that doubles cannot tell apart.
TEST(ParseTest, IntegerRangeEndsAreExact) {
  auto parse = [](const std::string& range) {
    return ParseWorkload(
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: w}\nspec:\n"
        "  model:\n    framework: onnx\n    version: 1.0.0\n    signature:\n"
        "      outputs: [{name: ids, shape: [-1], dtype: int64, constraints: {range: " +
            range +
            "}}]\n"
            "  pipeline:\n    steps:\n      - {name: a, command: [x]}\n",
        "r.yaml");
  };
  ParseResult r = parse("[-3, 9007199254740993]");
  ASSERT_TRUE(r.ok()) << Describe(r);
  const TensorSpec& t = r.workload.model->outputs[0];
  ASSERT_TRUE(t.int_range);
  EXPECT_EQ(t.int_range->first, -3);
  EXPECT_EQ(t.int_range->second, int64_t{9007199254740993});
  r = parse("[0, 1.5]");
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_FALSE(r.workload.model->outputs[0].int_range);
  r = parse("[9007199254740993, 9007199254740992]");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Describe(r).find("range low end is greater than its high end"), std::string::npos)
      << Describe(r);
}

TEST(ParseTest, FraudExampleFields) {
  ParseResult r = ParseOk(kRepo + "/examples/fraud-detect-workload.yaml");
  const Workload& w = r.workload;
  EXPECT_EQ(w.labels.at("team"), "risk");
  EXPECT_EQ(w.timeout_ms, 20 * 60 * 1000);
  ASSERT_TRUE(w.resources.gpu);
  EXPECT_EQ(w.resources.gpu->capabilities,
            (std::vector<std::string>{"tensor_core", "fp16_support"}));
  EXPECT_EQ(w.data.input->quality.completeness, 99.9);
  EXPECT_EQ(w.data.input->quality.freshness_ms, 2 * 3600 * 1000);
  ASSERT_TRUE(w.data.output->schema);
  EXPECT_EQ(w.data.output->schema->record().fields.size(), 7u);
  EXPECT_NE(w.data.output->schema->FindField("fraud_probability"), nullptr);
  EXPECT_EQ(w.model->build_fingerprint,
            "sha256:7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b");
  ASSERT_EQ(w.model->outputs.size(), 1u);
  EXPECT_EQ(w.model->outputs[0].shape, (std::vector<int64_t>{1, 1}));
  ASSERT_TRUE(w.model->outputs[0].range);
  EXPECT_EQ(w.model->outputs[0].range->second, 1.0);
  const Step* pre = w.FindStep("preprocess");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->effective.cpu_millis, 32000);
  EXPECT_EQ(pre->effective.memory_bytes, int64_t{128} << 30);
  const Step* train = w.FindStep("train");
  ASSERT_NE(train, nullptr);
  EXPECT_EQ(train->retry.max_retries, 1);
  EXPECT_EQ(train->retry.backoff_ms, 60000);
  // gpu: "1" on the step keeps the workload's capabilities (field-by-field merge).
  ASSERT_TRUE(train->effective.gpu);
  EXPECT_EQ(train->effective.gpu->count, 1);
  EXPECT_EQ(train->effective.gpu->capabilities.size(), 2u);
  EXPECT_EQ(train->effective.cpu_millis, 16000);
}

TEST(ParseTest, LogFeaturesAndServingExamples) {
  ParseResult logs = ParseOk(kRepo + "/examples/log-features.yaml");
  const Workload& w = logs.workload;
  const Step* pre = w.FindStep("preprocess");
  ASSERT_NE(pre, nullptr);
  ASSERT_EQ(pre->env_from.size(), 2u);
  EXPECT_EQ(pre->env_from[1].kind, EnvFrom::Kind::kSecret);
  EXPECT_EQ(pre->env_from[1].name, "data-creds");
  EXPECT_EQ(w.FindStep("train")->effective.gpu->count, 2);
  EXPECT_EQ(w.data.input->quality.unique_key, "user_id");  // the default rule
  const auto* action = w.data.input->schema->FindField("action");
  ASSERT_NE(action, nullptr);
  EXPECT_EQ(action->constraints.enum_values.size(), 3u);
  EXPECT_TRUE(logs.warnings.empty());

  ParseResult serve = ParseOk(kRepo + "/examples/recommend-serving.yaml");
  const Step& s = serve.workload.pipeline.steps.at(0);
  EXPECT_TRUE(s.serving);
  ASSERT_TRUE(s.effective.autoscaling);
  EXPECT_EQ(s.effective.autoscaling->max_replicas, 4);
  EXPECT_EQ(s.effective.autoscaling->scale_down_delay_ms, 5 * 60 * 1000);
  EXPECT_TRUE(serve.warnings.empty());
}

TEST(ParseTest, PostProcessHooksAsTheIssueWritesThem) {
  ParseResult r = ParseOk(kRepo + "/examples/accuracy-alert.yaml");
  const Step& s = r.workload.pipeline.steps.at(0);
  ASSERT_EQ(s.post_process.size(), 2u);
  const PostProcess& alert = s.post_process[0];
  EXPECT_EQ(alert.when,
            "output.validate.metrics.acc < previous.output.validate.metrics.acc * 0.95");
  EXPECT_TRUE(alert.on_success);
  EXPECT_FALSE(alert.on_failure);
  EXPECT_FALSE(alert.required);
  EXPECT_EQ(alert.url, "http://127.0.0.1:8099/alert");
  EXPECT_EQ(alert.method, "POST");
  ASSERT_EQ(alert.headers.size(), 1u);
  EXPECT_EQ(alert.headers[0].name, "X-Token");
  EXPECT_EQ(alert.headers[0].secret_name, "alert-creds");
  EXPECT_EQ(alert.headers[0].secret_key, "token");
  EXPECT_EQ(alert.retries, 3);
  EXPECT_EQ(alert.timeout_ms, 10'000);
  const PostProcess& failed = s.post_process[1];
  EXPECT_FALSE(failed.on_success);
  EXPECT_TRUE(failed.on_failure);
  EXPECT_EQ(failed.retries, kDefaultHookRetries);
  EXPECT_TRUE(r.warnings.empty());

  // Defaults, `on: always` as one word, a literal header, and the canonical form round trip.
  const std::string yaml = R"(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: hooks}
spec:
  pipeline:
    - name: a
      command: [a]
      postProcess:
        - on: always
          required: true
          webhook: {url: "https://h.example/x?y=1", method: put, headers: {X-Team: risk}}
)";
  ParseResult p = ParseWorkload(yaml, "hooks.yaml");
  ASSERT_TRUE(p.ok()) << p.errors[0].ToString();
  const PostProcess& h = p.workload.pipeline.steps[0].post_process.at(0);
  EXPECT_TRUE(h.on_success && h.on_failure && h.required);
  EXPECT_EQ(h.method, "PUT");
  EXPECT_EQ(h.headers.at(0).value, "risk");
  EXPECT_EQ(h.timeout_ms, kDefaultHookTimeoutMs);
  auto back = FromCanonicalJson(CanonicalJson(p.workload));
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(CanonicalJson(*back), CanonicalJson(p.workload));
  EXPECT_NE(
      CanonicalJson(p.workload).find("\"postProcess\":[{\"on\":[\"always\"],\"required\":true"),
      std::string::npos)
      << CanonicalJson(p.workload);
}

TEST(ParseTest, RslExtensionsAndWarnings) {
  const std::string yaml = R"(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: ext}
spec:
  resources:
    gpu: {count: 1, capability: [tensor_core], memory: 24Gi}
    autoscaling: {targetUtilization: 70, maxReplicas: 3}
  model:
    framework: onnx
    version: 1.0.0
    signature:
      outputs: [{name: prob, shape: [-1, 1], dtype: float32}]
  pipeline:
    - name: prep
      image: volc/prep:v1
      args: ["--fast"]
      env: {MODE: daily, LEVEL: "3"}
      outputs: [{name: prob, shape: [-1, 1], dtype: float32, constraints: {range: [0, 1]}}]
    - name: serve
      command: [serve]
      dependsOn: [prep]
      serving: true
      resources: {gpu: "2", cpu: 500m}
      envFrom: [{configMapRef: {name: common}}]
)";
  ParseResult r = ParseWorkload(yaml, "ext.yaml");
  ASSERT_TRUE(r.ok()) << Describe(r);
  const Step* prep = r.workload.FindStep("prep");
  ASSERT_NE(prep, nullptr);
  EXPECT_EQ(prep->args, std::vector<std::string>{"--fast"});
  EXPECT_EQ(prep->env.at("LEVEL"), "3");
  ASSERT_EQ(prep->outputs.size(), 1u);
  EXPECT_EQ(prep->outputs[0].shape, (std::vector<int64_t>{-1, 1}));
  EXPECT_FALSE(prep->serving);
  const Step* serve = r.workload.FindStep("serve");
  EXPECT_TRUE(serve->serving);
  EXPECT_EQ(serve->env_from.at(0).name, "common");
  // gpu: "2" on the step keeps the workload's capability and memory.
  ASSERT_TRUE(serve->effective.gpu);
  EXPECT_EQ(serve->effective.gpu->count, 2);
  EXPECT_EQ(serve->effective.gpu->capabilities, std::vector<std::string>{"tensor_core"});
  EXPECT_EQ(serve->effective.gpu->memory_bytes, int64_t{24} << 30);
  EXPECT_EQ(serve->effective.cpu_millis, 500);
  EXPECT_EQ(serve->effective.autoscaling->min_replicas, 1);
  EXPECT_EQ(serve->effective.autoscaling->max_replicas, 3);
  // Autoscaling reaches the batch step too: accepted, with one warning at spec.resources.
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].ToString(),
            "ext.yaml:7:18: SPEC_INVALID spec.resources.autoscaling: autoscaling is ignored for "
            "batch step \"prep\" (set serving: true on long-running service steps)");
}

// Relative local data URIs: kept as written (validation), made absolute against the base
// directory (the spec file's), or refused where there is none (the API).
TEST(ParseTest, RelativeDataUris) {
  const std::string yaml = R"(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: rel}
spec:
  data:
    input: {uri: ../raw/./day=15}
    output: {uri: "file://out/v1"}
  pipeline:
    - {name: a, command: ["true"]}
)";
  ParseResult kept = ParseWorkload(yaml, "rel.yaml");
  ASSERT_TRUE(kept.ok()) << Describe(kept);
  EXPECT_EQ(kept.workload.data.input->uri, "../raw/./day=15");

  ParseOptions resolve;
  resolve.relative_uris = ParseOptions::RelativeUris::kResolve;
  resolve.base_dir = "/data/specs";
  ParseResult resolved = ParseWorkload(yaml, "rel.yaml", resolve);
  ASSERT_TRUE(resolved.ok()) << Describe(resolved);
  EXPECT_EQ(resolved.workload.data.input->uri, "/data/raw/day=15");
  EXPECT_EQ(resolved.workload.data.output->uri, "file:///data/specs/out/v1");

  ParseOptions refuse;
  refuse.relative_uris = ParseOptions::RelativeUris::kRefuse;
  ParseResult refused = ParseWorkload(yaml, "rel.yaml", refuse);
  ASSERT_EQ(refused.errors.size(), 2u) << Describe(refused);
  EXPECT_EQ(refused.errors[0].ToString(),
            "rel.yaml:6:18: SPEC_INVALID spec.data.input.uri: relative uri \"../raw/./day=15\" has "
            "no base directory to resolve it against (write an absolute path (e.g. "
            "file:///data/out), or submit the file with seedctl, which resolves it against the "
            "file's directory)");
  EXPECT_EQ(refused.errors[0].value, "../raw/./day=15");
  EXPECT_EQ(refused.errors[1].path, "spec.data.output.uri");
  EXPECT_EQ(refused.errors[1].value, "file://out/v1");

  // Absolute and remote URIs are never touched.
  std::string absolute = yaml;
  absolute.replace(absolute.find("../raw/./day=15"), 15, "/abs/in");
  absolute.replace(absolute.find("file://out/v1"), 13, "s3://bucket/out");
  ParseResult untouched = ParseWorkload(absolute, "abs.yaml", refuse);
  ASSERT_TRUE(untouched.ok()) << Describe(untouched);
  EXPECT_EQ(untouched.workload.data.input->uri, "/abs/in");
  EXPECT_EQ(untouched.workload.data.output->uri, "s3://bucket/out");

  // A file: its own directory.
  std::string dir = ::testing::TempDir() + "parse_rel_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/w.yaml") << yaml;  // written and closed at the end of the statement
  ParseOptions from_dir;
  from_dir.relative_uris = ParseOptions::RelativeUris::kResolve;  // base_dir: the file's
  ParseResult from_file = ParseWorkloadFile(dir + "/w.yaml", from_dir);
  ASSERT_TRUE(from_file.ok()) << Describe(from_file);
  EXPECT_EQ(from_file.workload.data.output->uri,
            "file://" + (std::filesystem::absolute(dir) / "out/v1").lexically_normal().string());
  std::filesystem::remove_all(dir);
}

TEST(ParseTest, HostileInputsGiveErrorsNotCrashes) {
  // Alias expansion: a list aliased many times is bounded by the visit limit or is cheap.
  std::string bomb =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: b}\n"
      "x: &a [1, 2, 3]\nspec:\n  pipeline:\n";
  for (int i = 0; i < 200; ++i) bomb += "    - {name: s" + std::to_string(i) + ", command: *a}\n";
  ParseResult r = ParseWorkload(bomb, "bomb.yaml");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.errors[0].path, "x");  // unknown top-level field, the steps themselves are fine
  // Deep nesting is a parse error, not a stack overflow.
  std::string deep(100000, '[');
  EXPECT_FALSE(ParseWorkload(deep, "deep.yaml").ok());
  EXPECT_FALSE(ParseWorkload(std::string("\0\xff\xfe", 3), "bin.yaml").ok());
  EXPECT_EQ(ParseWorkload("", "e.yaml").errors.at(0).code, "SPEC_PARSE_ERROR");
}

std::string StepsWorkload(const std::string& model, const std::string& steps) {
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: w}\nspec:\n" +
         model + "  pipeline:\n" + steps;
}

// The pin forms docs/model.md promises: a PEP 440 release prefix and Debian versions (epoch,
// revision, tilde) for dpkg packages.
TEST(ParseTest, DependencyPinFormsTheDocsPromise) {
  ParseResult r = ParseWorkload(
      StepsWorkload("  model:\n    framework: custom\n    version: 1.0.0\n    dependencies: "
                    "[\"numpy==1.24.*\", \"python3-numpy==1:1.24.2-1\", \"libfoo==2.0~rc1-3\", "
                    "\"torch==1!2.1.2+cu118\"]\n",
                    "    - {name: a, command: [x]}\n"),
      "pins.yaml");
  ASSERT_TRUE(r.ok()) << Describe(r);
  ASSERT_EQ(r.workload.model->dependencies.size(), 4u);
  EXPECT_EQ(r.workload.model->dependencies[0].version, "1.24.*");
  EXPECT_EQ(r.workload.model->dependencies[1].name, "python3-numpy");
  EXPECT_EQ(r.workload.model->dependencies[1].version, "1:1.24.2-1");
  ParseResult conflict = ParseWorkload(
      StepsWorkload("  model:\n    framework: custom\n    version: 1.0.0\n    dependencies: "
                    "[\"numpy==1.24.2\", \"Scikit_Learn==1.3.0\", \"NumPy==1.24.3\", "
                    "\"scikit-learn==1.3.0\"]\n",
                    "    - {name: a, command: [x]}\n"),
      "pins.yaml");
  ASSERT_EQ(conflict.errors.size(), 2u) << Describe(conflict);
  EXPECT_EQ(conflict.errors[0].ToString(),
            "pins.yaml:8:60: SPEC_INVALID spec.model.dependencies[2]: dependency "
            "\"NumPy==1.24.3\" conflicts with \"numpy==1.24.2\" (spec.model.dependencies[0]) "
            "(keep one pin per package (names compare case-insensitively, - _ . alike))");
  EXPECT_EQ(conflict.errors[1].message,
            "dependency \"scikit-learn==1.3.0\" repeats \"Scikit_Learn==1.3.0\" "
            "(spec.model.dependencies[1])");
}

// What a process environment cannot carry is refused before the run, at the variable.
TEST(ParseTest, EnvValuesThatCannotReachAProcessAreRefused) {
  std::string big(200 * 1024, 'x');
  ParseResult r = ParseWorkload(
      StepsWorkload("", "    - name: a\n      command: [x]\n      env: {OK: fine, BIG: " + big +
                            ", NUL: \"a\\0b\"}\n"),
      "env.yaml");
  ASSERT_EQ(r.errors.size(), 2u) << Describe(r);
  EXPECT_EQ(r.errors[0].path, "spec.pipeline.steps[0].env.BIG");
  EXPECT_EQ(r.errors[0].message,
            "the value of BIG is 204800 bytes; one variable (NAME=value) may have at most "
            "131067 (Linux refuses a longer one)");
  EXPECT_EQ(r.errors[1].path, "spec.pipeline.steps[0].env.NUL");
  EXPECT_EQ(r.errors[1].message, "the value of NUL contains a NUL byte");
  // Each fits, together they do not.
  std::string env;
  for (int i = 0; i < 5; ++i)
    env += "V" + std::to_string(i) + ": " + std::string(120000, 'y') + ", ";
  ParseResult total = ParseWorkload(
      StepsWorkload("", "    - name: a\n      command: [x]\n      env: {" + env + "}\n"),
      "env.yaml");
  ASSERT_EQ(total.errors.size(), 1u) << Describe(total);
  EXPECT_EQ(total.errors[0].path, "spec.pipeline.steps[0].env");
  EXPECT_EQ(total.errors[0].message,
            "the variables take 600020 bytes, more than the limit of 524288");
}

// yaml-cpp's "illegal block entry" and friends: the error names the tab and points at it.
TEST(ParseTest, TabIndentationIsNamed) {
  for (const std::string& text : {StepsWorkload("", "    - name: a\n\t  command: [x]\n"),
                                  StepsWorkload("", "\t- name: a\n      command: [x]\n")}) {
    ParseResult r = ParseWorkload(text, "tab.yaml");
    ASSERT_FALSE(r.errors.empty());
    EXPECT_EQ(r.errors[0].message,
              "YAML syntax error: a tab in the indentation (YAML indents with spaces only)")
        << r.errors[0].ToString();
    EXPECT_EQ(r.errors[0].hint, "replace the tab with spaces");
    EXPECT_EQ(r.errors[0].pos.column, 1);
  }
}

}  // namespace
// A step's image is read by the image layer's grammar (Docker's), reported with the spec's
// code and place: the references Docker accepts validate, the others name the wrong part.
TEST(ParseTest, ImageReferencesUseDockersGrammar) {
  auto parse = [](const std::string& image) {
    return ParseWorkload(
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: w}\n"
        "spec:\n  pipeline:\n    - name: a\n      image: \"" +
            image + "\"\n      command: [run]\n",
        "img.yaml");
  };
  for (const std::string& ok :
       {std::string("volc/train-pytorch:v2.1"), std::string("ubuntu"), std::string("localhost/app"),
        std::string("Host.Example/app"), "127.0.0.1:5000/volc/train@sha256:" + std::string(64, 'a'),
        std::string("[::1]:5000/a/b:TAG_1")}) {
    ParseResult r = parse(ok);
    EXPECT_TRUE(r.ok()) << ok << ": " << Describe(r);
  }
  ParseResult bad = parse("Volc/Train:v2.1");
  ASSERT_EQ(bad.errors.size(), 1u) << Describe(bad);
  EXPECT_EQ(bad.errors[0].ToString(),
            "img.yaml:7:14: SPEC_INVALID spec.pipeline.steps[0].image: image reference "
            "\"Volc/Train:v2.1\" has a repository name that is not lower case (write "
            "[registry/]name[:tag][@sha256:digest] in lower case, e.g. "
            "docker.io/library/python:3.11 or 127.0.0.1:5000/volc/train:v2)");
  ParseResult digest = parse("volc/train@sha256:abc");
  ASSERT_EQ(digest.errors.size(), 1u) << Describe(digest);
  EXPECT_EQ(
      digest.errors[0].message,
      "image reference \"volc/train@sha256:abc\" has a sha256 digest of 3 hex digits, not 64");
}

// The API decides a submission's namespace (and authorizes the caller) inside the one parse
// of its YAML: the hook sees metadata.namespace as written, merge keys applied; its error is
// then the only one; it is not called when the text is not readable YAML.
TEST(ParseTest, TheNamespaceHookSeesTheNamespaceOnceAndItsErrorStandsAlone) {
  std::vector<std::string> seen;
  ParseOptions options;
  options.on_namespace = [&](const std::string& ns) {
    seen.push_back(ns);
    return Status::Ok();
  };
  const std::string body = "spec:\n  pipeline:\n    - {name: a, command: [\"true\"]}\n";
  const std::string head = "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n";
  EXPECT_TRUE(
      ParseWorkload(head + "metadata: {name: w, namespace: risk}\n" + body, "a.yaml", options)
          .ok());
  EXPECT_TRUE(ParseWorkload(head + "metadata: {name: w}\n" + body, "b.yaml", options).ok());
  ParseResult merged =
      ParseWorkload(head + "metadata: {<<: {name: w, namespace: ads}}\n" + body, "c.yaml", options);
  EXPECT_TRUE(merged.ok()) << Describe(merged);
  EXPECT_FALSE(
      ParseWorkload(head + "metadata: {name: w, namespace: [a]}\n" + body, "d.yaml", options).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"risk", "", "ads", ""}));
  seen.clear();
  for (const std::string& unreadable : {std::string("a: [1"), std::string(""),
                                        std::string("a: 1\n---\nb: 2\n"), std::string("\xff")}) {
    EXPECT_FALSE(ParseWorkload(unreadable, "u.yaml", options).ok());
  }
  EXPECT_TRUE(seen.empty());
  options.on_namespace = [](const std::string& ns) -> Status {
    return Error(codes::kForbidden, "may not write to " + ns);
  };
  // Invalid in three ways; the caller refused hears only the refusal.
  ParseResult refused =
      ParseWorkload(head + "metadata: {name: W_, namespace: ads, nmae: x}\nspec: {pipeline: []}\n",
                    "e.yaml", options);
  ASSERT_EQ(refused.errors.size(), 1u) << Describe(refused);
  EXPECT_EQ(refused.errors[0].code, codes::kForbidden);
  EXPECT_EQ(refused.errors[0].message, "may not write to ads");
}

}  // namespace rsl::spec
