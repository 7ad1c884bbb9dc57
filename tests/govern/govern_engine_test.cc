// The cost and policy hooks inside the real engine: a real step process (through the local
// backend and rsl-shim) whose loss plateaus is stopped by an applied policy and ends
// SUCCEEDED with its output kept, and its attempt's cost is recorded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "backend/local.h"
#include "base/env.h"
#include "base/file.h"
#include "base/sqlite.h"
#include "engine/engine.h"
#include "govern/cost.h"
#include "govern/policy.h"
#include "runtime/cost_hooks.h"
#include "runtime/policy_hooks.h"
#include "spec/parse.h"
#include "store/store.h"

namespace rsl::govern {
namespace {

// Improves for one second, then plateaus; writes an output file first. Would run 60 s.
constexpr char kStep[] =
    "import json, os, time\n"
    "open(os.path.join(os.environ['RSL_OUTPUT'], 'model.txt'), 'w').write('weights')\n"
    "start = time.time(); loss = 2.0\n"
    "with open(os.environ['RSL_METRICS_STREAM'], 'a') as f:\n"
    "    while time.time() - start < 60:\n"
    "        if time.time() - start < 1.0: loss *= 0.8\n"
    "        f.write(json.dumps({'loss': loss, 'gpu_util': 0.1}) + '\\n'); f.flush()\n"
    "        time.sleep(0.1)\n";

TEST(GovernEngine, PolicyStopsAPlateauedStepAsSuccessAndCostIsRecorded) {
  std::string dir = "/tmp/rsl-govern-engine-" + std::to_string(getpid());
  RemoveAll(dir);
  ASSERT_TRUE(MakeDirs(dir).ok());
  setenv("RSL_SHIM", (std::string(RSL_BINARY_DIR) + "/bin/rsl-shim").c_str(), 1);

  const std::string policy =
      "rules:\n- name: plateau\n  condition: \"loss_plateau_duration > 2 && gpu_util_avg < 0.3\"\n"
      "  action: stop_as_success\n";
  PolicyParse p = ParsePolicy(policy, "plateau.yaml");
  ASSERT_TRUE(p.ok()) << p.errors[0].ToString();
  ASSERT_TRUE(StorePolicy(dir, p.policy, policy).ok());

  std::string out = dir + "/published";
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: plateau\n"
      "  namespace: llm\n  labels: {team: llm, stage: sft}\nspec:\n"
      "  resources: {cpu: 500m, memory: 256Mi}\n"
      "  data:\n    output:\n      uri: file://" +
      out +
      "\n"
      "  pipeline:\n    - name: train\n      command: [python3, -c, " +
      nlohmann::json(std::string(kStep)).dump() + "]\n";
  auto parsed = spec::ParseWorkload(yaml, "plateau.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.errors[0].ToString();

  auto store = store::OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  backend::BackendOptions bo;
  bo.state_dir = dir;
  auto be = backend::NewLocalBackend(bo);
  ASSERT_TRUE(be.ok()) << be.error().ToString();
  engine::Hooks hooks;
  hooks.steps.push_back(std::make_shared<runtime::PolicyHook>(dir));
  hooks.steps.push_back(std::make_shared<runtime::CostHook>(dir));
  engine::EngineOptions opts;
  opts.state_dir = dir;
  opts.stop_grace_ms = 2000;
  engine::Engine eng(store->get(), be->get(), hooks, opts);
  ASSERT_TRUE(eng.Start().ok());
  auto t0 = std::chrono::steady_clock::now();
  auto id = eng.Submit(parsed.workload, "test");
  ASSERT_TRUE(id.ok()) << id.error().ToString();
  auto run = eng.Wait(*id, 30000);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded)
      << run->failure_code << " " << run->failure_message;
  EXPECT_LT(secs, 15.0);  // plateau after ~1 s, condition after ~3 s, not the step's 60 s
  auto events = (*store)->ListEvents(run->id, 0);
  ASSERT_TRUE(events.ok());
  bool stopped = false;
  for (const auto& e : *events)
    stopped = stopped || (e.step == "train" && e.reason == "PolicyStopped");
  EXPECT_TRUE(stopped);
  auto model = ReadFile(out + "/train/model.txt");  // outputs kept
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  EXPECT_EQ(*model, "weights");

  eng.Stop();
  auto costs = CostStore::Open(dir);
  ASSERT_TRUE(costs.ok());
  auto recs = (*costs)->List(0);
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].run_id, run->id);
  EXPECT_EQ((*recs)[0].labels.at("team"), "llm");
  EXPECT_EQ((*recs)[0].namespace_, "llm");
  EXPECT_GT((*recs)[0].cost.hours, 0);
  EXPECT_GT((*recs)[0].cost.total, 0);  // 0.5 core + 0.25 GiB for a few seconds
  RemoveAll(dir);
}

}  // namespace
}  // namespace rsl::govern
