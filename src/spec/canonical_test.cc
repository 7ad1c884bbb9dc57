#include "spec/canonical.h"

#include <gtest/gtest.h>

#include "spec/parse.h"

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
    - {name: b, dependsOn: [a], when: "status.a == 'SUCCEEDED'", retryPolicy: {backoff: 90s}}
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
      {"cpu: 2.5", "cpu: 2.6"},         {"memory: 1Gi", "memory: 1G"},
      {"timeout: 90m", "timeout: 91m"}, {"command: [run]", "command: [run, x]"},
      {"'SUCCEEDED'", "'FAILED'"},      {"uniqueness: 99", "uniqueness: 98"},
      {"float32[4]", "float32[5]"},     {"name: w,", "name: w2,"},
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

}  // namespace
}  // namespace rsl::spec
