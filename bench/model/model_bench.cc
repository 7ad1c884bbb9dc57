// The model layer's hot paths: reading and checking output tensors (per byte), parsing a
// large safetensors header, fingerprinting model files, PEP 440 matching, and inspecting a
// real environment (one interpreter start plus a metadata scan).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstring>
#include <fstream>

#include "base/file.h"
#include "model/env_inspect.h"
#include "model/fingerprint.h"
#include "model/npy.h"
#include "model/pep.h"
#include "model/safetensors.h"
#include "model/signature.h"

namespace rsl::model {
namespace {

// A float32 [rows, 1] .npy in memory with values in [0, 1), as numpy.save writes it.
std::string MakeNpy(int64_t rows) {
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", 1), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  std::string data(static_cast<size_t>(rows) * 4, '\0');
  for (int64_t i = 0; i < rows; ++i) {
    float v = static_cast<float>(i % 1000) / 1000.0f;
    std::memcpy(&data[static_cast<size_t>(i) * 4], &v, 4);
  }
  return out + data;
}

void BM_NpyReadAndCheckRange(benchmark::State& state) {
  std::string bytes = MakeNpy(state.range(0));
  spec::TensorSpec sig{"fraud_prob", "float32", {-1, 1}, std::make_pair(0.0, 1.0)};
  for (auto _ : state) {
    auto t = ParseNpy(bytes, "fraud_prob.npy", "fraud_prob");
    auto errors = CheckTensor(sig, *t, "fraud_prob.npy", "s");
    benchmark::DoNotOptimize(errors);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes.size()));
}
BENCHMARK(BM_NpyReadAndCheckRange)->Arg(1 << 10)->Arg(1 << 20)->Arg(1 << 24);

void BM_SafetensorsHeader(benchmark::State& state) {
  std::vector<SafetensorsEntry> entries;
  for (int i = 0; i < state.range(0); ++i) {
    entries.push_back(
        {"layer." + std::to_string(i) + ".weight", "F32", {4, 4}, std::string(64, '\0')});
  }
  std::string file = WriteSafetensors(entries);
  for (auto _ : state) {
    auto f = ParseSafetensors(file, "m.safetensors");
    benchmark::DoNotOptimize(f);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SafetensorsHeader)->Arg(1000)->Arg(10000);

void BM_Fingerprint(benchmark::State& state) {
  std::string dir = "/tmp/rsl_model_bench_fp";
  (void)MakeDirs(dir);
  std::string blob(static_cast<size_t>(state.range(0)), 'x');
  std::ofstream(dir + "/model.safetensors", std::ios::binary) << blob;
  for (auto _ : state) {
    auto fp = ComputeFingerprint(dir, {"model.safetensors"});
    benchmark::DoNotOptimize(fp);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  (void)RemoveAll(dir);
}
BENCHMARK(BM_Fingerprint)->Arg(64 << 20)->Unit(benchmark::kMillisecond);

void BM_VersionMatches(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(VersionMatches("2.1.2+cu118", "2.1.2+cu118"));
  }
}
BENCHMARK(BM_VersionMatches);

void BM_InspectSystemPython(benchmark::State& state) {
  for (auto _ : state) {
    auto ins = InspectPython("/usr/bin/python3");
    if (!ins.ok()) state.SkipWithError(ins.status().ToString().c_str());
    benchmark::DoNotOptimize(ins);
  }
}
BENCHMARK(BM_InspectSystemPython)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rsl::model

BENCHMARK_MAIN();
