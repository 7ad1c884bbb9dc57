#include "engine/run_state.h"

#include <gtest/gtest.h>

#include "spec/parse.h"

namespace rsl::engine {
namespace {

spec::Workload Parse(const std::string& yaml) {
  auto r = spec::ParseWorkload(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

const char kThreeSteps[] =
    "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: slots\n"
    "  namespace: risk\nspec:\n  pipeline:\n"
    "    - {name: eval, command: [e], resources: {cpu: 2}}\n"
    "    - {name: ship, command: [s], dependsOn: [eval],"
    " when: \"output.eval.metrics.auc > 0.85\"}\n"
    "    - {name: note, command: [n], dependsOn: [eval], when: \"status.eval == 'SUCCEEDED'\"}\n";

TEST(RunStateTest, OneSlotPerStepWithItsRecordAndWhen) {
  spec::Workload w = Parse(kThreeSteps);
  store::WorkloadVersion v;
  v.id = "wl-20240615-00000001";
  store::Run run;
  run.id = "run-20240615-00000001";
  run.run_dir = "/runs/" + run.id;
  auto shared = std::make_shared<const spec::Workload>(w);
  auto r = NewRunState(shared, v, run, "/state", /*default_cpu_millis=*/500, {});
  ASSERT_EQ(r->slots.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const store::Step& rec = r->slots[size_t(i)].record;
    EXPECT_EQ(rec.run_id, run.id);
    EXPECT_EQ(rec.name, w.pipeline.steps[size_t(i)].name);
    EXPECT_EQ(rec.index, i);
    EXPECT_EQ(rec.phase, spec::StepPhase::kPending);
    EXPECT_FALSE(r->slots[size_t(i)].insufficient_reported);
  }
  EXPECT_FALSE(r->slots[0].when.has_value());
  EXPECT_TRUE(r->slots[1].when.has_value());
  EXPECT_EQ(r->min_cpu_request, 500);  // the steps without requests count as the default
  EXPECT_EQ(r->info.run_id, run.id);
  EXPECT_EQ(r->info.workload, shared.get());  // the caller's object, not a copy
  EXPECT_EQ(r->workload.get(), shared.get());
}

TEST(RunStateTest, WhenReadsThePlansPhasesAndMetrics) {
  spec::Workload w = Parse(kThreeSteps);
  auto r = NewRunState(std::make_shared<const spec::Workload>(w), store::WorkloadVersion{},
                       store::Run{}, "/state", 1000, {});
  r->plan = std::make_unique<RunPlan>(r->workload.get(), 0);
  EXPECT_TRUE(*r->EvalWhen(0));   // no `when`
  EXPECT_FALSE(*r->EvalWhen(2));  // eval is PENDING
  StepState eval;
  eval.phase = spec::StepPhase::kSucceeded;
  eval.metrics_json = "{\"auc\": 0.9}";
  r->plan->Restore(0, eval);
  EXPECT_TRUE(*r->EvalWhen(1));
  EXPECT_TRUE(*r->EvalWhen(2));
}

// An ended attempt keeps who and where it was (events, Release, postProcess hooks read
// them), not its environment, argv, labels or secrets.
TEST(RunStateTest, AnEndedLaunchKeepsItsIdentityOnly) {
  backend::LaunchSpec l;
  l.attempt_id = "run-20240615-00000001/eval/2";
  l.run_id = "run-20240615-00000001";
  l.step = "eval";
  l.attempt = 2;
  l.node = "gpu-3";
  l.cpu_millis = 2000;
  l.argv = {"python", "eval.py"};
  l.env = {{"RSL_OUTPUT", "/runs/x/staging/eval.2"}, {"TOKEN", "s3cr3t"}};
  l.secret_values = {"s3cr3t"};
  l.make_dirs = {"/runs/x/staging/eval.2"};
  l.read_dirs = {"/runs/x/staging/prep"};
  l.labels = {{"team", "risk"}};
  l.pull_credentials["docker.io"] = {};
  ShedEndedLaunch(&l);
  EXPECT_EQ(l.attempt_id, "run-20240615-00000001/eval/2");
  EXPECT_EQ(l.step, "eval");
  EXPECT_EQ(l.attempt, 2);
  EXPECT_EQ(l.node, "gpu-3");
  EXPECT_EQ(l.cpu_millis, 2000);
  EXPECT_TRUE(l.argv.empty());
  EXPECT_TRUE(l.env.empty());
  EXPECT_TRUE(l.secret_values.empty());
  EXPECT_TRUE(l.make_dirs.empty());
  EXPECT_TRUE(l.read_dirs.empty());
  EXPECT_TRUE(l.labels.empty());
  EXPECT_TRUE(l.pull_credentials.empty());
}

}  // namespace
}  // namespace rsl::engine
