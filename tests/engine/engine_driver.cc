// rsl-engine-driver: the engine with the local backend and the SQLite store, and nothing
// else (no data/model/cost hooks), for the crash test and the benchmarks.
//
//   rsl-engine-driver run FILE STATE_DIR [--sync full|normal] [--store direct|log]
//                     [--node-file F]
//       prints "submitted <id>" once the submission is durable, then "phase <PHASE>"
//   rsl-engine-driver recover STATE_DIR [--store direct|log]
//       finishes every unfinished run; prints "<id> <PHASE>" per run
#include <cstdio>
#include <cstring>
#include <string>

#include "backend/local.h"
#include "engine/engine.h"
#include "spec/parse.h"
#include "store/store.h"

using namespace rsl;

namespace {

int Usage() {
  fprintf(stderr,
          "usage: rsl-engine-driver run FILE STATE_DIR [--sync full|normal] "
          "[--store direct|log] [--node-file F] | recover STATE_DIR [--store direct|log]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  std::string mode = argv[1];
  std::string file = mode == "run" ? argv[2] : "";
  std::string state_dir = mode == "run" ? (argc > 3 ? argv[3] : "") : argv[2];
  if (state_dir.empty()) return Usage();
  store::StoreOptions so;
  std::string node_file;
  for (int i = mode == "run" ? 4 : 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--sync") == 0) so.sync_full = strcmp(argv[i + 1], "normal") != 0;
    if (strcmp(argv[i], "--store") == 0) so.transition_log = strcmp(argv[i + 1], "log") == 0;
    if (strcmp(argv[i], "--node-file") == 0) node_file = argv[i + 1];
  }
  auto store = store::OpenSqliteStore(state_dir, so);
  if (!store.ok()) {
    fprintf(stderr, "%s\n", store.error().ToString().c_str());
    return 1;
  }
  backend::LocalOptions lo;
  lo.state_dir = state_dir;
  lo.node_file = node_file;
  lo.nvidia_smi = "";
  lo.isolation = "none";  // the crash test's steps append to a ledger in its own directory
  auto backend = backend::NewLocalBackend(lo);
  if (!backend.ok()) {
    fprintf(stderr, "%s\n", backend.error().ToString().c_str());
    return 1;
  }
  engine::EngineOptions eo;
  eo.state_dir = state_dir;
  eo.stop_grace_ms = 2000;
  engine::Engine eng(store->get(), backend->get(), engine::Hooks{}, eo);
  if (Status s = eng.Start(); !s.ok()) {
    fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  if (mode == "recover") {
    auto runs = (*store)->ListRuns(store::RunFilter{"", "", true, 0});
    if (!runs.ok() || !eng.Recover().ok()) return 1;
    for (const auto& r : *runs) {
      auto done = eng.Wait(r.id);
      printf("%s %s\n", r.workload_id.c_str(), done.ok() ? spec::Name(done->phase) : "ERROR");
    }
    eng.Stop();
    return 0;
  }
  spec::ParseResult parsed = spec::ParseWorkloadFile(file);
  if (!parsed.ok()) {
    for (const auto& e : parsed.errors) fprintf(stderr, "%s\n", e.ToString().c_str());
    return 1;
  }
  auto id = eng.Submit(parsed.workload, "driver");
  if (!id.ok()) {
    fprintf(stderr, "%s\n", id.error().ToString().c_str());
    return 1;
  }
  printf("submitted %s\n", id->c_str());
  fflush(stdout);
  auto run = eng.Wait(*id);
  eng.Stop();
  if (!run.ok()) return 1;
  printf("phase %s\n", spec::Name(run->phase));
  return run->phase == spec::RunPhase::kSucceeded ? 0 : 1;
}
