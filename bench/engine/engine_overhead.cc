// rsl-engine-bench: the engine's own cost with the backend replaced by one that ends every
// attempt at once (no processes), every transition durable in the SQLite store.
//
//   rsl-engine-bench STEPS DAG [SYNC]
//     DAG: independent | tree | chain; SYNC: full (default, fsync per commit) | normal |
//     log (full, through the transition log: StoreOptions::transition_log, as rsl-controller;
//     then also "tables caught up <ms> ms": when a read after the run could start) |
//     rowless (a floor, not a result: full, but the run's step, attempt, event, artifact and
//     lineage rows are dropped instead of stored; what is left is the engine's own work)
// Prints one line: "<dag> <steps> steps: <seconds> s (cpu <seconds> s, <batches> store commits,
// sync <SYNC>, phase <PHASE>, peak RSS <MB> MB, malloc <tcmalloc|glibc>)", then the store reads
// behind `status`, `describe` and `list` on the finished run, each timed: "reads: status <ms> ms
// (<n> steps), describe <ms> ms (<n> events), list <ms> ms", then the paged reads the API does
// now ("page reads: ..."), and, when built with the controller's API, the answers through HTTP
// on a loopback port with the client's JSON parse ("http: status <ms> ms ..."), the whole
// documents (?limit=0) beside the default pages.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "base/malloc.h"
#include "engine/engine.h"
#include "engine/testing.h"
#include "store/store.h"
#ifdef RSL_BENCH_HTTP
#include "api/audit.h"
#include "api/auth.h"
#include "api/client.h"
#include "api/controller_service.h"
#include "api/server.h"
#endif

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
    fprintf(stderr,
            "usage: rsl-engine-bench STEPS independent|tree|chain [full|normal|log|rowless]\n");
    return 2;
  }
  int n = atoi(argv[1]);
  std::string dag = argv[2];
  std::string sync = argc > 3 ? argv[3] : "full";
  if (sync != "full" && sync != "normal" && sync != "log" && sync != "rowless") {
    fprintf(stderr, "unknown SYNC %s: full, normal, log or rowless\n", sync.c_str());
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
  store::StoreOptions so;
  so.sync_full = sync != "normal";
  so.transition_log = sync == "log";
  auto store = store::OpenSqliteStore(dir, so);
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
  auto cpu_seconds = [](const struct rusage& u) {
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  double cpu0 = cpu_seconds(ru);
  // Shared with the engine, as the controller and `seedctl run` submit their parsed workload.
  auto workload = std::make_shared<const spec::Workload>(std::move(w));
  auto t0 = std::chrono::steady_clock::now();
  auto id = eng.Submit(workload, "bench");
  if (!id.ok()) return 1;
  auto run = eng.Wait(*id);
  auto t1 = std::chrono::steady_clock::now();
  getrusage(RUSAGE_SELF, &ru);  // the run's CPU time and the peak RSS
  double cpu = cpu_seconds(ru) - cpu0;
  auto stats = eng.stats();
  double secs = std::chrono::duration<double>(t1 - t0).count();
  printf(
      "%s %d steps: %.3f s (cpu %.3f s, %lld store commits, sync %s, phase %s, peak RSS %ld MB, "
      "malloc %s)\n",
      dag.c_str(), n, secs, cpu, static_cast<long long>(stats.batches), sync.c_str(),
      run.ok() ? spec::Name(run->phase) : "?", ru.ru_maxrss / 1024, MallocName());
  if (sync == "log") {  // a read waits until SQLite's tables hold what the log acknowledged
    auto c0 = std::chrono::steady_clock::now();
    (void)(*store)->CountRuns(store::RunPageQuery{});
    printf(
        "tables caught up %.1f ms after the run\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count());
  }
  const char* reads = getenv("READS");  // READS=0: the run alone (for a profile)
  if (run.ok() && sync != "rowless" && !(reads != nullptr && std::string(reads) == "0")) {
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
    // What GET .../{id} and .../describe read now: the counts, a page of 500 steps, the steps
    // that need attention and the current step; describe also the last 500 events and their
    // count.
    r0 = std::chrono::steady_clock::now();
    got = s->GetRun(*id);
    auto counts = s->CountSteps(run->id);
    store::StepPageQuery pq;
    pq.run_id = run->id;
    pq.limit = 501;
    auto page_steps = s->ListStepsPage(pq);
    pq.limit = 50;
    pq.phases = {spec::StepPhase::kRunning};
    auto running = s->ListStepsPage(pq);
    pq.phases = {};
    pq.started_only = true;
    pq.last_first = true;
    pq.limit = 1;
    auto last = s->ListStepsPage(pq);
    double page_status_ms = ms_since(r0);
    r0 = std::chrono::steady_clock::now();
    auto last_events = s->ListLastEvents(run->id, 500);
    auto event_count = s->CountEvents(run->id);
    double page_events_ms = ms_since(r0);
    if (!counts.ok() || !page_steps.ok() || !running.ok() || !last.ok() || !last_events.ok() ||
        !event_count.ok()) {
      fprintf(stderr, "a page read failed\n");
      return 1;
    }
    printf(
        "page reads: status %.1f ms (%zu steps of %zu phases), describe %.1f ms (+ %zu of %lld "
        "events)\n",
        page_status_ms, page_steps->size(), counts->size(), page_status_ms + page_events_ms,
        last_events->size(), static_cast<long long>(*event_count));
#ifdef RSL_BENCH_HTTP
    // Through the controller: its service and HTTP server on a loopback port, as seedctl
    // asks (GET, then the client's JSON parse). Each twice: the first parses the version's
    // spec into the snapshot cache.
    api::Metrics metrics;
    auto tokens = api::TokenStore::Open(dir);
    auto audit = api::AuditLog::Open(dir);
    if (!tokens.ok() || !audit.ok()) return 1;
    auto token = (*tokens)->Create("bench", api::Role::kAdmin, {"*"});
    if (!token.ok()) return 1;
    api::ControllerService service(s, &eng, &backend, &metrics, dir);
    api::ApiServer server(&service, tokens->get(), audit->get(), &metrics);
    if (!server.Start("127.0.0.1", 0).ok()) return 1;
    api::ClientConfig cc;
    cc.server = "http://127.0.0.1:" + std::to_string(server.port());
    cc.token = *token;
    api::Client client(cc);
    std::string base = "/api/v1/workloads/" + *id;
    auto http = [&](const std::string& path) {
      double best = 0;
      for (int i = 0; i < 2; ++i) {
        auto t = std::chrono::steady_clock::now();
        auto answer = client.Get(path);
        double took = ms_since(t);
        if (!answer.ok()) {
          fprintf(stderr, "GET %s: %s\n", path.c_str(), answer.error().ToString().c_str());
          return -1.0;
        }
        best = i == 0 ? took : std::min(best, took);
      }
      return best;
    };
    double h_status = http(base);
    double h_describe = http(base + "/describe");
    double h_list = http("/api/v1/workloads?allNamespaces=true&limit=50");
    double h_status_all = http(base + "?limit=0");
    double h_describe_all = http(base + "/describe?limit=0&eventLimit=0");
    printf(
        "http: status %.1f ms, describe %.1f ms, list %.1f ms; every step: status %.1f ms, "
        "describe %.1f ms (with every event)\n",
        h_status, h_describe, h_list, h_status_all, h_describe_all);
    server.Stop();
#endif
  }
  eng.Stop();
  store->reset();
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir + "-runs");
  return run.ok() && run->phase == spec::RunPhase::kSucceeded ? 0 : 1;
}
