// Embedding RSL's engine: SQLite for the durable state, an in-process backend (each step is a
// C++ function on a thread of its own), and a three-step graph (prepare -> train -> report,
// report only when train's metric allows). Usage: rsl-embed-example STATE_DIR
#include <cstdio>
#include <functional>
#include <map>
#include <thread>

#include "backend/backend.h"
#include "base/file.h"
#include "engine/engine.h"
#include "spec/parse.h"
#include "store/store.h"

using namespace rsl;

// Runs a step as a function of its launch spec: exit 0 when it returns true.
class FunctionBackend : public backend::Backend {
 public:
  std::map<std::string, std::function<bool(const backend::LaunchSpec&)>> steps;
  std::string name() const override { return "functions"; }
  Result<std::vector<sched::Node>> ListNodes() override {
    sched::Node n;
    n.name = "here";
    n.cpu_millis = 4000;
    n.memory_bytes = 8LL << 30;
    return std::vector<sched::Node>{n};
  }
  Status Launch(const backend::LaunchSpec& spec) override {
    RSL_RETURN_IF_ERROR(MakeDirs(spec.workdir));  // a backend makes the attempt's directories
    for (const auto& dir : spec.make_dirs) RSL_RETURN_IF_ERROR(MakeDirs(dir));
    std::thread([this, spec] {
      bool ok = steps.at(spec.step)(spec);
      backend::AttemptExit exit;
      exit.attempt_id = spec.attempt_id;
      exit.kind = ok ? backend::ExitKind::kSucceeded : backend::ExitKind::kFailed;
      exit.exit_code = ok ? 0 : 1;
      exit.node = "here";
      exit.message = ok ? "done" : "failed";
      on_exit(exit);
    }).detach();
    return Status::Ok();
  }
  void Stop(const std::string&, int64_t, bool) override {}
  void Adopt(const backend::LaunchSpec&) override {}
};

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: %s STATE_DIR\n", argv[0]), 2;
  auto parsed = spec::ParseWorkload(R"(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: embedded}
spec:
  pipeline:
    - {name: prepare, command: [prepare]}
    - {name: train, command: [train], dependsOn: [prepare]}
    - {name: report, command: [report], dependsOn: [train], when: "output.train.metrics.auc > 0.9"}
)",
                                    "embedded.yaml");
  if (!parsed.ok()) return std::fprintf(stderr, "%s\n", parsed.errors[0].ToString().c_str()), 1;
  FunctionBackend backend;
  std::map<std::string, std::string> seen;
  backend.steps["prepare"] = [](const backend::LaunchSpec&) { return true; };
  backend.steps["train"] = [](const backend::LaunchSpec& s) {
    FILE* f = std::fopen(s.env.at("RSL_METRICS_FILE").c_str(), "w");  // in its working dir
    return f && std::fputs("{\"auc\": 0.95}", f) >= 0 && std::fclose(f) == 0;
  };
  backend.steps["report"] = [](const backend::LaunchSpec&) {
    return std::puts("report: auc ok") >= 0;
  };
  backend.on_event = [](const backend::AttemptEvent&) {};
  auto store = store::OpenSqliteStore(argv[1]);
  if (!store.ok()) return std::fprintf(stderr, "%s\n", store.error().ToString().c_str()), 1;
  engine::EngineOptions options;
  options.state_dir = argv[1];
  engine::Engine eng(store->get(), &backend, engine::Hooks{}, options);
  if (Status s = eng.Start(); !s.ok()) return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  auto id = eng.Submit(parsed.workload, "embed-example");
  if (!id.ok()) return std::fprintf(stderr, "%s\n", id.error().ToString().c_str()), 1;
  auto run = eng.Wait(*id, 60'000);
  if (!run.ok()) return std::fprintf(stderr, "%s\n", run.error().ToString().c_str()), 1;
  std::printf("%s %s\n", id->c_str(), rsl::spec::Name(run->phase));
  return run->phase == rsl::spec::RunPhase::kSucceeded ? 0 : 1;
}
