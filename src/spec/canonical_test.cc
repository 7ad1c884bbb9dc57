#include "spec/canonical.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "base/file.h"
#include "spec/parse.h"
#include "spec/quantity.h"

namespace rsl::spec {
namespace {

Workload Parse(const std::string& yaml) {
  ParseResult r = ParseWorkload(yaml, "c.yaml");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.errors[0].ToString());
  return r.workload;
}

const char kShort[] = R"(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: w, labels: {b: "2", a: "1"}}
spec:
  resources: {cpu: 2.5, memory: 1Gi, gpu: "1"}
  data:
    input: {uri: "file:///d", schema: "id:int64,v:float32[4]", quality: {uniqueness: 99}}
  pipeline:
    - {name: a, command: [run]}
    - {name: b, command: [check], dependsOn: [a], when: "status.a == 'SUCCEEDED'", retryPolicy: {backoff: 90s}}
  timeout: 90m
)";

// The same meaning, written differently: long forms, other units, other key order,
// defaults spelled out, timeout at pipeline level.
const char kLong[] = R"(kind: AIWorkload
apiVersion: aiengine.volc.com/v1
metadata:
  namespace: default
  labels: {a: "1", b: "2"}
  name: w
spec:
  pipeline:
    atomic: true
    timeout: 1h30m
    steps:
      - name: a
        command: ["run"]
        keepOnFailure: false
      - name: b
        command: [check]
        dependsOn: [a]
        when: "status.a == 'SUCCEEDED'"
        retryPolicy: {maxRetries: 0, backoff: 1m30s, backoffFactor: 1}
  data:
    input:
      uri: "file:///d"
      schema: '{"type": "record", "name": "record", "fields": [{"name": "id", "type": "long"}, {"name": "v", "type": {"type": "array", "items": "float", "size": 4}}]}'
      quality: {uniqueness: 99.0, uniqueKey: id}
  resources:
    gpu: {count: 1}
    memory: "1073741824"
    cpu: 2500m
)";

TEST(CanonicalTest, SameMeaningSameDigest) {
  Workload a = Parse(kShort);
  Workload b = Parse(kLong);
  EXPECT_EQ(CanonicalJson(a), CanonicalJson(b));
  EXPECT_EQ(SpecDigest(a), SpecDigest(b));
  EXPECT_EQ(SpecDigest(a).substr(0, 7), "sha256:");
  EXPECT_EQ(SpecDigest(a).size(), 7u + 64u);
}

TEST(CanonicalTest, DifferentMeaningDifferentDigest) {
  const std::string base = kShort;
  const std::string digest = SpecDigest(Parse(base));
  const std::pair<const char*, const char*> changes[] = {
      {"cpu: 2.5", "cpu: 2.6"},          {"memory: 1Gi", "memory: 1G"},
      {"timeout: 90m", "timeout: 91m"},  {"command: [run]", "command: [run, x]"},
      {"== 'SUCCEEDED'", "!= 'FAILED'"}, {"uniqueness: 99", "uniqueness: 98"},
      {"float32[4]", "float32[5]"},      {"name: w,", "name: w2,"},
  };
  for (const auto& [from, to] : changes) {
    std::string text = base;
    text.replace(text.find(from), std::string(from).size(), to);
    EXPECT_NE(SpecDigest(Parse(text)), digest) << from << " -> " << to;
  }
}

TEST(CanonicalTest, RoundTripsThroughJson) {
  for (const char* yaml : {kShort, kLong}) {
    Workload w = Parse(yaml);
    std::string json = CanonicalJson(w);
    auto back = FromCanonicalJson(json);
    ASSERT_TRUE(back.ok()) << back.error().ToString() << "\n" << json;
    EXPECT_EQ(CanonicalJson(*back), json);
    EXPECT_EQ(back->pipeline.steps.size(), 2u);
    EXPECT_EQ(back->pipeline.steps[1].retry.backoff_ms, 90000);
    EXPECT_EQ(back->pipeline.steps[1].effective.cpu_millis, 2500);
    EXPECT_EQ(back->data.input->quality.unique_key, "id");
  }
  EXPECT_FALSE(FromCanonicalJson("{\"kind\": 1}").ok());
}

// imagePullSecrets in both spellings (a name, Kubernetes' {name: ...}) is one canonical list
// that survives the round trip, in the order written.
TEST(CanonicalTest, ImagePullSecretsRoundTrip) {
  std::string a = std::string(kShort);
  std::string b = a;
  a.replace(a.find("spec:\n"), 6, "spec:\n  imagePullSecrets: [regcred, mirror-creds]\n");
  b.replace(b.find("spec:\n"), 6,
            "spec:\n  imagePullSecrets: [{name: regcred}, {name: mirror-creds}]\n");
  Workload wa = Parse(a);
  EXPECT_EQ(wa.image_pull_secrets, (std::vector<std::string>{"regcred", "mirror-creds"}));
  EXPECT_EQ(CanonicalJson(wa), CanonicalJson(Parse(b)));
  EXPECT_NE(SpecDigest(wa), SpecDigest(Parse(kShort)));
  auto back = FromCanonicalJson(CanonicalJson(wa));
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->image_pull_secrets, wa.image_pull_secrets);
}

// ---------------------------------------------------------------------------------------------
// CanonicalJson writes its text directly; it must stay byte for byte what the original
// nlohmann::json tree gave (stored versions' digests are sha256 of it). The original, kept
// here unchanged as the reference:
namespace reference {

using nlohmann::json;

json ResourcesJson(const Resources& r) {
  json j = json::object();
  if (r.cpu_millis) j["cpu"] = FormatCpu(*r.cpu_millis);
  if (r.memory_bytes) j["memory"] = FormatBytes(*r.memory_bytes);
  if (r.gpu) {
    json g;
    g["count"] = r.gpu->count;
    g["capability"] = r.gpu->capabilities;
    if (r.gpu->memory_bytes) g["memory"] = FormatBytes(*r.gpu->memory_bytes);
    j["gpu"] = g;
  }
  if (r.autoscaling) {
    j["autoscaling"] = {{"targetUtilization", r.autoscaling->target_utilization},
                        {"minReplicas", r.autoscaling->min_replicas},
                        {"maxReplicas", r.autoscaling->max_replicas},
                        {"scaleDownDelay", FormatDuration(r.autoscaling->scale_down_delay_ms)}};
  }
  return j;
}

json TensorsJson(const std::vector<TensorSpec>& tensors) {
  json list = json::array();
  for (const auto& t : tensors) {
    json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
    if (t.range) j["constraints"] = {{"range", {t.range->first, t.range->second}}};
    list.push_back(j);
  }
  return list;
}

json DataJson(const DataSpec& d) {
  json j = json::object();
  if (d.input) {
    json in = {{"uri", d.input->uri}};
    if (!d.input->format.empty()) in["format"] = d.input->format;
    if (d.input->schema) in["schema"] = d.input->schema->ToJson();
    const Quality& q = d.input->quality;
    json quality = json::object();
    if (q.completeness) quality["completeness"] = *q.completeness;
    if (q.uniqueness) quality["uniqueness"] = *q.uniqueness;
    if (q.unique_key) quality["uniqueKey"] = *q.unique_key;
    if (q.freshness_ms) quality["freshness"] = FormatDuration(*q.freshness_ms);
    if (!quality.empty()) in["quality"] = quality;
    j["input"] = in;
  }
  if (d.output) {
    json out = {{"uri", d.output->uri}};
    if (d.output->policy != OutputPolicy::kReplace)
      out["policy"] = OutputPolicyName(d.output->policy);
    if (!d.output->schema_ref.empty()) out["schemaRef"] = d.output->schema_ref;
    if (!d.output->features.empty()) {
      json fs = json::array();
      for (const auto& f : d.output->features) fs.push_back({{"name", f.name}, {"type", f.type}});
      out["features"] = fs;
    }
    j["output"] = out;
  }
  return j;
}

json StepJson(const Step& s) {
  json j = {{"name", s.name}, {"keepOnFailure", s.keep_on_failure}, {"serving", s.serving}};
  if (!s.image.empty()) j["image"] = s.image;
  if (!s.command.empty()) j["command"] = s.command;
  if (!s.args.empty()) j["args"] = s.args;
  if (!s.env.empty()) j["env"] = s.env;
  if (!s.depends_on.empty()) j["dependsOn"] = s.depends_on;
  if (!s.when.empty()) j["when"] = s.when;
  json res = ResourcesJson(s.resources);
  if (!res.empty()) j["resources"] = res;
  json retry = {{"maxRetries", s.retry.max_retries},
                {"backoff", FormatDuration(s.retry.backoff_ms)},
                {"backoffFactor", s.retry.backoff_factor}};
  if (s.retry.max_backoff_ms) retry["maxBackoff"] = FormatDuration(*s.retry.max_backoff_ms);
  j["retryPolicy"] = retry;
  if (!s.env_from.empty()) {
    json list = json::array();
    for (const auto& e : s.env_from) {
      list.push_back({{e.kind == EnvFrom::Kind::kSecret ? "secretRef" : "configMapRef", e.name}});
    }
    j["envFrom"] = list;
  }
  if (s.timeout_ms) j["timeout"] = FormatDuration(*s.timeout_ms);
  if (!s.outputs.empty()) j["outputs"] = TensorsJson(s.outputs);
  if (!s.post_process.empty()) {
    json hooks = json::array();
    for (const auto& h : s.post_process) {
      json webhook = {{"url", h.url},
                      {"method", h.method},
                      {"retries", h.retries},
                      {"timeout", FormatDuration(h.timeout_ms)}};
      if (!h.body.empty()) webhook["body"] = h.body;
      if (!h.headers.empty()) {
        json headers = json::object();
        for (const auto& hd : h.headers) {
          if (hd.secret_name.empty()) {
            headers[hd.name] = hd.value;
          } else {
            headers[hd.name] = {{"secretRef", hd.secret_name}, {"key", hd.secret_key}};
          }
        }
        webhook["headers"] = headers;
      }
      std::string on = h.on_success && h.on_failure ? "always"
                       : h.on_success               ? "success"
                                                    : "failure";
      json hook = {{"on", json::array({on})}, {"required", h.required}, {"webhook", webhook}};
      if (!h.when.empty()) hook["when"] = h.when;
      hooks.push_back(hook);
    }
    j["postProcess"] = hooks;
  }
  if (s.serving) {
    if (s.port) j["port"] = *s.port;
    json get = {{"path", s.readiness.path}};
    if (s.readiness.port) get["port"] = *s.readiness.port;
    j["readinessProbe"] = {{"httpGet", get},
                           {"periodSeconds", s.readiness.period_ms / 1000},
                           {"failureThreshold", s.readiness.failure_threshold}};
    j["readyTimeout"] = FormatDuration(s.ready_timeout_ms);
  }
  return j;
}

std::string CanonicalJson(const Workload& w) {
  json metadata = {{"name", w.name}, {"namespace", w.namespace_}};
  if (!w.labels.empty()) metadata["labels"] = w.labels;
  if (!w.annotations.empty()) metadata["annotations"] = w.annotations;
  json spec = json::object();
  json res = ResourcesJson(w.resources);
  if (!res.empty()) spec["resources"] = res;
  json data = DataJson(w.data);
  if (!data.empty()) spec["data"] = data;
  if (w.model) {
    const ModelSpec& m = *w.model;
    json model = {{"framework", m.framework}, {"version", m.version}};
    if (!m.build_fingerprint.empty()) model["buildFingerprint"] = m.build_fingerprint;
    if (!m.dependencies.empty()) {
      json deps = json::array();
      for (const auto& d : m.dependencies) deps.push_back(d.ToString());
      model["dependencies"] = deps;
    }
    if (!m.inputs.empty() || !m.outputs.empty()) {
      json sig = json::object();
      if (!m.inputs.empty()) sig["inputs"] = TensorsJson(m.inputs);
      if (!m.outputs.empty()) sig["outputs"] = TensorsJson(m.outputs);
      model["signature"] = sig;
    }
    spec["model"] = model;
  }
  json steps = json::array();
  for (const auto& s : w.pipeline.steps) steps.push_back(StepJson(s));
  spec["pipeline"] = {{"atomic", w.pipeline.atomic}, {"steps", steps}};
  if (w.timeout_ms) spec["timeout"] = FormatDuration(*w.timeout_ms);
  if (!w.image_pull_secrets.empty()) spec["imagePullSecrets"] = w.image_pull_secrets;
  json root = {
      {"apiVersion", w.api_version}, {"kind", w.kind}, {"metadata", metadata}, {"spec", spec}};
  return root.dump();
}

}  // namespace reference

TEST(CanonicalTest, SameTextAsTheTreeForTheseTestsWorkloads) {
  for (const char* yaml : {kShort, kLong}) {
    Workload w = Parse(yaml);
    EXPECT_EQ(CanonicalJson(w), reference::CanonicalJson(w));
  }
}

// Every workload file in the repository (examples, tests, docs' yaml blocks, the spec fuzzer's
// corpus and regressions) and ../shared/examples.
TEST(CanonicalTest, SameTextAsTheTreeForEveryWorkloadFile) {
  namespace fs = std::filesystem;
  const fs::path root = RSL_SOURCE_DIR;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, text
  auto add_file = [&](const fs::path& p, bool any_extension) {
    std::string ext = p.extension().string();
    bool md = ext == ".md";
    if (!any_extension && !md && ext != ".yaml" && ext != ".yml" && ext != ".json") return;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) > (1u << 20)) return;
    auto text = ReadFile(p.string());
    if (!text.ok()) return;
    if (!md) {
      inputs.emplace_back(p.string(), *text);
      return;
    }
    // ```yaml blocks
    size_t pos = 0;
    int block = 0;
    while ((pos = text->find("```yaml\n", pos)) != std::string::npos) {
      size_t begin = pos + 8;
      size_t end = text->find("```", begin);
      if (end == std::string::npos) break;
      inputs.emplace_back(p.string() + "#" + std::to_string(block++),
                          text->substr(begin, end - begin));
      pos = end + 3;
    }
  };
  auto add_tree = [&](const fs::path& dir, bool any_extension) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (it->is_directory() && (name == "node_modules" || name == "__pycache__")) {
        it.disable_recursion_pending();
        continue;
      }
      add_file(it->path(), any_extension);
    }
  };
  add_tree(root / "examples", false);
  add_tree(root / "tests", false);
  add_tree(root / "docs", false);
  add_file(root / "README.md", false);
  add_tree(root / ".." / "shared" / "examples", false);
  for (const char* d : {"corpus", "regressions", "findings"}) {
    add_tree(root / "fuzz" / d / "spec_fuzzer", true);
  }
  int parsed = 0, own = 0;  // own: the repository's files, without ../shared (absent for users)
  for (const auto& [name, text] : inputs) {
    ParseResult r = ParseWorkload(text, name);
    if (!r.ok()) continue;
    ++parsed;
    if (name.find("/../shared/") == std::string::npos) ++own;
    std::string json = CanonicalJson(r.workload);
    ASSERT_EQ(json, reference::CanonicalJson(r.workload)) << name;
    auto back = FromCanonicalJson(json);
    ASSERT_TRUE(back.ok()) << name;
    EXPECT_EQ(CanonicalJson(*back), json) << name;
  }
  // The repository's examples + the test specs that are valid + the fuzz corpus (18 when
  // this was written); a drop means files moved.
  EXPECT_GE(own, 16) << "of " << inputs.size() << " inputs";
  std::printf("[          ] %d of %zu inputs parse as workloads; all identical\n", parsed,
              inputs.size());
}

// Random workloads exercising every field, with strings full of what JSON escapes.
class RandomWorkloads {
 public:
  explicit RandomWorkloads(uint64_t seed) : rng_(seed) {}

  uint64_t Next() { return rng_(); }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  bool Chance(int percent) { return Below(100) < static_cast<size_t>(percent); }

  std::string Str() {
    static const char* const kPieces[] = {"a",
                                          "Z",
                                          "step-1",
                                          " ",
                                          "\"",
                                          "\\",
                                          "/",
                                          "\\\"",
                                          "\n",
                                          "\r",
                                          "\t",
                                          "\b",
                                          "\f",
                                          "" /* NUL */,
                                          "\x01",
                                          "\x1f",
                                          "\x7f",
                                          "\x1b[",
                                          "caf\xc3\xa9",
                                          "\xe2\x82\xac",
                                          "\xf0\x9f\x98\x80",
                                          "\xe4\xb8\xad",
                                          "{}",
                                          "[],:",
                                          "'",
                                          "$(x)",
                                          "--flag=1",
                                          "~",
                                          "\xc2\x80",
                                          "\xef\xbf\xbf",
                                          "\xed\x9f\xbf",
                                          "\xf4\x8f\xbf\xbf"};
    constexpr size_t kCount = sizeof kPieces / sizeof kPieces[0];
    std::string s;
    size_t n = Below(8);
    for (size_t i = 0; i < n; ++i) {
      size_t k = Below(kCount + 1);
      if (k == kCount) {
        s += static_cast<char>(Below(128));  // any ASCII byte, NUL included
      } else if (std::strlen(kPieces[k]) == 0) {
        s += '\0';
      } else {
        s += kPieces[k];
      }
    }
    return s;
  }
  std::vector<std::string> Strs(size_t max) {
    std::vector<std::string> v(Below(max + 1));
    for (auto& s : v) s = Str();
    return v;
  }
  std::map<std::string, std::string> Map(size_t max) {
    std::map<std::string, std::string> m;
    size_t n = Below(max + 1);
    for (size_t i = 0; i < n; ++i) m[Str()] = Str();
    return m;
  }
  int64_t Int() {
    static const int64_t kEdges[] = {
        0, 1, -1, 2, 100, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    if (Chance(50)) return kEdges[Below(std::size(kEdges))];
    return static_cast<int64_t>(Next()) >> Below(64);
  }
  int64_t Duration() {  // FormatDuration's domain: not negative
    static const int64_t kEdges[] = {0, 1, 500, 1500, 30000, 90000, 5400000, 86400000};
    if (Chance(50)) return kEdges[Below(std::size(kEdges))];
    return static_cast<int64_t>(Next() >> (20 + Below(44)));
  }
  double Double() {
    static const double kEdges[] = {1.0,
                                    1.5,
                                    2.0,
                                    0.1,
                                    1e-7,
                                    3.14159,
                                    -0.0,
                                    0.0,
                                    1e300,
                                    5e-324,
                                    1.0 / 3,
                                    99.9,
                                    123456789.123,
                                    1e16,
                                    1e17,
                                    -2.5,
                                    1e21,
                                    1e-5,
                                    0.5,
                                    std::numeric_limits<double>::quiet_NaN(),
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::max(),
                                    std::numeric_limits<double>::denorm_min()};
    if (Chance(70)) return kEdges[Below(std::size(kEdges))];
    uint64_t bits = Next();
    double d;
    std::memcpy(&d, &bits, sizeof d);  // any bit pattern, NaN payloads included
    return d;
  }
  Resources Res() {
    Resources r;
    if (Chance(40)) r.cpu_millis = Duration();
    if (Chance(40)) r.memory_bytes = Duration();
    if (Chance(30)) {
      GpuRequest g;
      g.count = Int();
      g.capabilities = Strs(3);
      if (Chance(50)) g.memory_bytes = Duration();
      r.gpu = g;
    }
    if (Chance(20)) {
      r.autoscaling = Autoscaling{Int(), Int(), Int(), Duration()};
    }
    return r;
  }
  std::vector<TensorSpec> Tensors(size_t max) {
    std::vector<TensorSpec> v(Below(max + 1));
    for (auto& t : v) {
      t.name = Str();
      t.dtype = Str();
      t.shape.resize(Below(4));
      for (auto& d : t.shape) d = Int();
      if (Chance(50)) t.range = std::make_pair(Double(), Double());
    }
    return v;
  }
  Step MakeStep() {
    Step s;
    s.name = Str();
    if (Chance(70)) s.image = Str();
    s.command = Strs(4);
    s.args = Strs(4);
    s.env = Map(3);
    s.depends_on = Strs(3);
    if (Chance(50)) s.when = Str();
    s.resources = Res();
    s.effective = Res();
    s.retry.max_retries = Int();
    s.retry.backoff_ms = Duration();
    s.retry.backoff_factor = Double();
    if (Chance(40)) s.retry.max_backoff_ms = Duration();
    s.env_from.resize(Below(3));
    for (auto& e : s.env_from) {
      e.kind = Chance(50) ? EnvFrom::Kind::kSecret : EnvFrom::Kind::kConfigMap;
      e.name = Str();
    }
    s.keep_on_failure = Chance(50);
    if (Chance(40)) s.timeout_ms = Duration();
    s.outputs = Tensors(2);
    s.serving = Chance(30);
    if (Chance(50)) s.port = Int();
    if (Chance(50)) s.readiness.port = Int();
    s.readiness.path = Str();
    s.readiness.period_ms = 1000 * Below(100);
    s.readiness.failure_threshold = Int();
    s.ready_timeout_ms = Duration();
    return s;
  }
  Workload Make(const std::vector<schema::Schema>& schemas) {
    Workload w;
    w.api_version = Chance(80) ? kApiVersion : Str();
    w.kind = Chance(80) ? kKind : Str();
    w.name = Str();
    if (Chance(30)) w.namespace_ = Str();
    w.labels = Map(3);
    w.annotations = Map(3);
    w.resources = Res();
    if (Chance(50)) {
      DataInput in;
      in.uri = Str();
      if (Chance(50)) in.format = Str();
      if (Chance(60)) in.schema = schemas[Below(schemas.size())];
      if (Chance(50)) in.quality.completeness = Double();
      if (Chance(50)) in.quality.uniqueness = Double();
      if (Chance(50)) in.quality.unique_key = Str();
      if (Chance(50)) in.quality.freshness_ms = Duration();
      w.data.input = in;
    }
    if (Chance(40)) {
      DataOutput out;
      out.uri = Str();
      if (Chance(50)) out.schema_ref = Str();
      out.features.resize(Below(3));
      for (auto& f : out.features) f = {Str(), Str()};
      w.data.output = out;
    }
    if (Chance(50)) {
      ModelSpec m;
      m.framework = Str();
      m.version = Str();
      if (Chance(50)) m.build_fingerprint = Str();
      m.dependencies.resize(Below(3));
      for (auto& d : m.dependencies) d = {Str(), Str()};
      m.inputs = Tensors(2);
      m.outputs = Tensors(2);
      w.model = m;
    }
    w.pipeline.atomic = Chance(50);
    w.pipeline.steps.resize(Below(6));
    for (auto& s : w.pipeline.steps) s = MakeStep();
    if (Chance(50)) w.timeout_ms = Duration();
    return w;
  }

 private:
  std::mt19937_64 rng_;
};

TEST(CanonicalTest, SameTextAsTheTreeForRandomWorkloads) {
  std::vector<schema::Schema> schemas;
  for (const char* text :
       {"id:int64,v:float32[4]", "user_id:string,f:float32[128],label:int32",
        R"({"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"},
                               {"name": "v", "type": {"type": "array", "items": "float"}}]})"}) {
    auto s = schema::ParseSchema(text);
    ASSERT_TRUE(s.ok()) << text;
    schemas.push_back(*s);
  }
  RandomWorkloads gen(20240607);
  int non_ascii = 0;
  for (int i = 0; i < 2000; ++i) {
    Workload w = gen.Make(schemas);
    std::string json = CanonicalJson(w);
    ASSERT_EQ(json, reference::CanonicalJson(w)) << "workload " << i;
    for (char c : json) non_ascii += static_cast<unsigned char>(c) >= 0x80;
  }
  EXPECT_GT(non_ascii, 0);
}

TEST(CanonicalTest, EveryAsciiByteAndNumberAsTheTreeWritesThem) {
  Workload w;
  w.api_version = kApiVersion;
  w.kind = kKind;
  for (int c = 0; c < 128; ++c) w.name += static_cast<char>(c);
  Step s;
  s.name = w.name;
  s.command = {"", w.name + w.name};
  s.retry.backoff_factor = 0.1;
  w.pipeline.steps.push_back(s);
  for (double d : {1.0, 2.0, 1e-7, 3.14159, 1e300, 0.1, 1.0}) {  // the cache must follow
    s.retry.backoff_factor = d;
    w.pipeline.steps.push_back(s);
  }
  EXPECT_EQ(CanonicalJson(w), reference::CanonicalJson(w));
}

// The parser rejects invalid UTF-8, but a Workload built in code may hold some: dump() threw
// (type_error 316) and must still throw the same.
TEST(CanonicalTest, InvalidUtf8ThrowsAsTheTreeDid) {
  for (const char* bad :
       {"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ok\x80ok"}) {
    for (int where = 0; where < 3; ++where) {
      Workload w;
      w.name = "w";
      Step s;
      s.name = "s";
      if (where == 0) w.name = bad;
      if (where == 1) s.command = {"x", bad};
      if (where == 2) s.env["K" + std::string(bad)] = "v";
      w.pipeline.steps.push_back(s);
      std::string expected, got;
      try {
        reference::CanonicalJson(w);
      } catch (const nlohmann::json::exception& e) {
        expected = e.what();
      }
      try {
        CanonicalJson(w);
      } catch (const nlohmann::json::exception& e) {
        got = e.what();
      }
      EXPECT_FALSE(expected.empty());
      EXPECT_EQ(got, expected);
    }
  }
}

}  // namespace
}  // namespace rsl::spec
