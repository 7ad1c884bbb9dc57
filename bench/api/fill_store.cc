// Fills a state directory's store with N finished workloads, straight through the store (no
// controller, no steps run): what bench/list_page.sh lists. Version i is
// wl-20260101-<i as 8 hex digits>, created at 1767225600000 + i ms, in namespace ns<i % 4>,
// named w<i % 100>, SUCCEEDED (every 10th FAILED), label team=t<i % 10>, one step.
//
//   rsl-fill-store --state-dir DIR --count N
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "store/store.h"

int main(int argc, char** argv) {
  std::string dir;
  long count = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--state-dir") == 0) dir = argv[i + 1];
    if (std::strcmp(argv[i], "--count") == 0) count = std::atol(argv[i + 1]);
  }
  if (dir.empty() || count <= 0) {
    std::fprintf(stderr, "usage: rsl-fill-store --state-dir DIR --count N\n");
    return 2;
  }
  auto store = rsl::store::OpenSqliteStore(dir);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.error().ToString().c_str());
    return 1;
  }
  constexpr long kBatch = 2000;  // rows per transaction
  constexpr int64_t kT0 = 1767225600000;
  for (long start = 0; start < count; start += kBatch) {
    rsl::store::Batch b;
    for (long i = start; i < count && i < start + kBatch; ++i) {
      char id[32];
      std::snprintf(id, sizeof(id), "wl-20260101-%08lx", i);
      rsl::store::WorkloadVersion v;
      v.id = id;
      v.name = "w" + std::to_string(i % 100);
      v.namespace_ = "ns" + std::to_string(i % 4);
      v.spec_json = R"({"apiVersion":"aiengine.volc.com/v1","kind":"AIWorkload"})";
      v.digest = "sha256:00";
      v.created_at = kT0 + i;
      v.created_by = "bench";
      v.labels = {{"team", "t" + std::to_string(i % 10)}};
      rsl::store::Run r;
      r.id = rsl::store::RunIdFor(id);
      r.workload_id = id;
      r.name = v.name;
      r.namespace_ = v.namespace_;
      r.phase = i % 10 ? rsl::spec::RunPhase::kSucceeded : rsl::spec::RunPhase::kFailed;
      r.created_at = r.started_at = kT0 + i;
      r.finished_at = kT0 + i + 1000;
      rsl::store::Step s;
      s.run_id = r.id;
      s.name = "train";
      s.phase = i % 10 ? rsl::spec::StepPhase::kSucceeded : rsl::spec::StepPhase::kFailed;
      s.attempts = 1;
      b.versions.push_back(std::move(v));
      b.runs.push_back(std::move(r));
      b.steps.push_back(std::move(s));
    }
    auto st = (*store)->Apply(&b);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  std::printf("filled %s with %ld workloads\n", dir.c_str(), count);
  return 0;
}
