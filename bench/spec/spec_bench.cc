// Parse + validate of generated pipelines (goal: 10,000 steps well under a second), and
// the `when` parser and canonical digest on the same workload.
#include <benchmark/benchmark.h>

#include <string>

#include "expr/expr.h"
#include "spec/canonical.h"
#include "spec/parse.h"

namespace {

// A pipeline of `steps` steps: each depends on the one before and, every 10th, also on the
// one 7 back; every 5th has a `when` reading an ancestor's metric; every 3rd overrides
// resources. Realistic field mix for a generated DAG.
std::string Generate(int steps) {
  std::string y =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: bench\n"
      "spec:\n  resources: {cpu: \"4\", memory: 8Gi, gpu: {count: 1, capability: [tensor_core]}}\n"
      "  data:\n    input:\n      uri: hdfs://ns1/raw\n"
      "      schema: \"user_id:string,f:float32[128],label:int32\"\n"
      "      quality: {completeness: 99.9, uniqueness: 99.0}\n"
      "  pipeline:\n    atomic: true\n    steps:\n";
  for (int i = 0; i < steps; ++i) {
    std::string name = "step-" + std::to_string(i);
    y += "      - name: " + name +
         "\n        image: volc/worker:v1.2\n"
         "        command: [\"python\", \"run.py\", \"--part\", \"" +
         std::to_string(i) + "\"]\n";
    if (i > 0) {
      y += "        dependsOn: [step-" + std::to_string(i - 1);
      if (i % 10 == 0 && i >= 7) y += ", step-" + std::to_string(i - 7);
      y += "]\n";
    }
    if (i % 5 == 0 && i > 0) {
      y += "        when: \"output.step-" + std::to_string(i - 1) +
           ".metrics.auc > 0.8 && status.step-" + std::to_string(i - 1) + " == 'SUCCEEDED'\"\n";
    }
    if (i % 3 == 0) y += "        resources: {cpu: 500m, memory: 1Gi}\n";
    y += "        retryPolicy: {maxRetries: 2, backoff: 30s}\n";
  }
  return y;
}

void BM_ParseValidate(benchmark::State& state) {
  const std::string yaml = Generate(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    rsl::spec::ParseResult r = rsl::spec::ParseWorkload(yaml, "bench.yaml");
    if (!r.ok()) state.SkipWithError(r.errors.front().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * yaml.size()));
  state.counters["steps"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_ParseValidate)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_CanonicalDigest(benchmark::State& state) {
  rsl::spec::ParseResult r = rsl::spec::ParseWorkload(Generate(10000), "bench.yaml");
  for (auto _ : state) benchmark::DoNotOptimize(rsl::spec::SpecDigest(r.workload));
}
BENCHMARK(BM_CanonicalDigest)->Unit(benchmark::kMillisecond);

void BM_WhenParse(benchmark::State& state) {
  const std::string text =
      "output.train.metrics.auc > 0.92 && status.train == 'SUCCEEDED' || max(1, 2) < 3";
  for (auto _ : state) benchmark::DoNotOptimize(rsl::expr::Expr::Parse(text));
}
BENCHMARK(BM_WhenParse);

}  // namespace

BENCHMARK_MAIN();
