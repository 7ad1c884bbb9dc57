// rsl-engine-bench: the engine's own cost with the backend replaced by one that ends every
// attempt at once (no processes), every transition durable in the SQLite store.
//
//   rsl-engine-bench STEPS DAG [SYNC]
//     DAG: independent | tree | chain; SYNC: full (default, fsync per commit) | normal |
//     rowless (a floor, not a result: full, but the run's step, attempt, event, artifact and
//     lineage rows are dropped instead of stored; what is left is the engine's own work)
// Prints one line: "<dag> <steps> steps: <seconds> s (<batches> store commits, sync <SYNC>,
// phase <PHASE>, peak RSS <MB> MB)", then the store reads behind `status`, `describe` and
// `list` on the finished run, each timed: "reads: status <ms> ms (<n> steps), describe <ms> ms
// (<n> events), list <ms> ms".
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "engine/engine.h"
#include "engine/testing.h"
#include "store/store.h"

using namespace rsl;

namespace {

// Forwards everything to the SQLite store but drops the per-step rows of each batch.
class RowlessStore : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Status Apply(store::Batch* b) override {
    b->steps.clear();
    b->attempts.clear();
    b->events.clear();
    b->artifacts.clear();
    b->lineage.clear();
    return b->empty() ? Status::Ok() : StoreWrapper::Apply(b);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: rsl-engine-bench STEPS independent|tree|chain [full|normal|rowless]\n");
    return 2;
  }
  int n = atoi(argv[1]);
  std::string dag = argv[2];
  std::string sync = argc > 3 ? argv[3] : "full";
  if (sync != "full" && sync != "normal" && sync != "rowless") {
    fprintf(stderr, "unknown SYNC %s: full, normal or rowless\n", sync.c_str());
    return 2;
  }
  spec::Workload w;
  w.api_version = spec::kApiVersion;
  w.kind = spec::kKind;
  w.name = "bench-" + dag;
  for (int i = 0; i < n; ++i) {
    spec::Step s;
    s.name = "s" + std::to_string(i);
    s.command = {"true"};
    if (dag == "tree") {  // a build tree: node i needs its children 2i+1 and 2i+2
      for (int c : {2 * i + 1, 2 * i + 2}) {
        if (c < n) s.depends_on.push_back("s" + std::to_string(c));
      }
    } else if (dag == "chain" && i > 0) {
      s.depends_on.push_back("s" + std::to_string(i - 1));
    } else if (dag != "independent" && dag != "chain") {
      fprintf(stderr, "unknown DAG %s\n", dag.c_str());
      return 2;
    }
    w.pipeline.steps.push_back(std::move(s));
  }
  std::string dir = "/tmp/rsl-engine-bench-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  auto store = store::OpenSqliteStore(dir, store::StoreOptions{sync != "normal"});
  if (!store.ok()) {
    fprintf(stderr, "%s\n", store.error().ToString().c_str());
    return 1;
  }
  engine::testing::InProcessBackend backend;
  engine::EngineOptions eo;
  eo.state_dir = dir;
  RowlessStore rowless(store->get());
  store::Store* st = sync == "rowless" ? static_cast<store::Store*>(&rowless) : store->get();
  engine::Engine eng(st, &backend, engine::Hooks{}, eo);
  if (!eng.Start().ok()) return 1;
  auto t0 = std::chrono::steady_clock::now();
  auto id = eng.Submit(w, "bench");
  if (!id.ok()) return 1;
  auto run = eng.Wait(*id);
  auto t1 = std::chrono::steady_clock::now();
  auto stats = eng.stats();
  eng.Stop();
  double secs = std::chrono::duration<double>(t1 - t0).count();
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  printf("%s %d steps: %.3f s (%lld store commits, sync %s, phase %s, peak RSS %ld MB)\n",
         dag.c_str(), n, secs, static_cast<long long>(stats.batches), sync.c_str(),
         run.ok() ? spec::Name(run->phase) : "?", ru.ru_maxrss / 1024);
  if (run.ok() && sync != "rowless") {
    // What the controller's handlers read: status (the run and its steps), describe (also
    // its events and artifacts), list (a page of runs and their count).
    auto ms_since = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t)
          .count();
    };
    store::Store* s = store->get();
    auto r0 = std::chrono::steady_clock::now();
    auto got = s->GetRun(*id);
    auto steps = s->ListSteps(run->id);
    double status_ms = ms_since(r0);
    r0 = std::chrono::steady_clock::now();
    got = s->GetRun(*id);
    auto steps2 = s->ListSteps(run->id);
    auto events = s->ListEvents(run->id, 0);
    auto artifacts = s->ListArtifacts(run->id);
    double describe_ms = ms_since(r0);
    r0 = std::chrono::steady_clock::now();
    store::RunPageQuery q;
    q.limit = 50;
    auto page = s->ListRunsPage(q);
    auto count = s->CountRuns(q);
    double list_ms = ms_since(r0);
    if (!got.ok() || !steps.ok() || !steps2.ok() || !events.ok() || !artifacts.ok() || !page.ok() ||
        !count.ok()) {
      fprintf(stderr, "a store read failed\n");
      return 1;
    }
    printf("reads: status %.1f ms (%zu steps), describe %.1f ms (%zu events), list %.1f ms\n",
           status_ms, steps->size(), describe_ms, events->size(), list_ms);
  }
  store->reset();
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir + "-runs");
  return run.ok() && run->phase == spec::RunPhase::kSucceeded ? 0 : 1;
}
