// Whole runs through the Engine on the fixture's Slurm cluster when things go wrong around
// them: a cancel RSL did not ask for, a slurmctld outage, a queue, nodes busy or drained
// while the controller runs, a controller restart with secrets, and misconfiguration.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "base/file.h"
#include "engine_fixture.h"

namespace rsl {
namespace {

using namespace rsl::slurm_test;  // NOLINT

bool WaitFor(const std::function<bool()>& done, int seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

bool Running(const std::string& job_name) {
  return Sh("squeue -h -t R -o %j").find(job_name + "\n") != std::string::npos;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

using SlurmFaultsTest = SlurmEngineTest;

// An admin's scancel of a running step fails the attempt: retried by its retryPolicy, and a
// run whose retries are spent is FAILED (never SUCCEEDED with partial outputs).
TEST_F(SlurmFaultsTest, ScancelOutsideRslFailsTheAttempt) {
  StartEngine("slurm");
  std::string retried = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: scancel-retry}
spec:
  resources: {cpu: "1"}
  pipeline:
    - name: a
      command: ["sh", "-c", "if [ \"$RSL_ATTEMPT\" = 1 ]; then sleep 300; fi; echo ok > \"$RSL_OUTPUT/a\""]
      retryPolicy: {maxRetries: 1, backoff: 1s}
    - {name: b, command: ["true"], dependsOn: [a]}
)yaml");
  std::string failed = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: scancel-fail}
spec:
  resources: {cpu: "1"}
  pipeline:
    - {name: a, command: ["sleep", "300"]}
    - {name: b, command: ["true"], dependsOn: [a]}
)yaml");
  ASSERT_TRUE(
      WaitFor([] { return Running("rsl-scancel-retry-a") && Running("rsl-scancel-fail-a"); }, 30));
  Sh("scancel --name=rsl-scancel-retry-a; scancel --name=rsl-scancel-fail-a");

  auto run = engine_->Wait(retried, 60'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  auto steps = Steps(run->id);
  EXPECT_EQ(steps["a"].attempts, 2);
  EXPECT_EQ(steps["a"].retries_used, 1);
  EXPECT_EQ(steps["b"].phase, spec::StepPhase::kSucceeded);
  EXPECT_EQ(Slurp(run->run_dir + "/outputs/a/a"), "ok\n");

  run = engine_->Wait(failed, 60'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kFailed);
  steps = Steps(run->id);
  EXPECT_EQ(steps["a"].phase, spec::StepPhase::kFailed);
  EXPECT_NE(steps["a"].message.find("cancelled outside RSL"), std::string::npos)
      << steps["a"].message;
  EXPECT_EQ(steps["b"].phase, spec::StepPhase::kSkipped);
}

// slurmctld dies while a step runs and comes back: nothing is decided meanwhile (22.05's
// squeue --json answers exit 0 with an "errors" array), the step runs once and its result
// is kept. A step submitted meanwhile waits for Slurm; a controller started during the
// outage says Slurm is unreachable.
TEST_F(SlurmFaultsTest, SlurmctldOutageKeepsTheRunningStep) {
  StartEngine("slurm");
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: outage}
spec:
  resources: {cpu: "1"}
  pipeline:
    - name: a
      command: ["sh", "-c", "echo run; sleep 9; echo done > \"$RSL_OUTPUT/r\""]
)yaml");
  ASSERT_TRUE(WaitFor([] { return Running("rsl-outage-a"); }, 30));
  Sh("bash " + ClusterScript() + " stop-ctld");
  auto down_at = std::chrono::steady_clock::now();
  // Submitted while slurmctld is down: it waits for Slurm (no retry spent), then runs.
  std::string late = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: outage-late}
spec:
  resources: {cpu: "1"}
  pipeline:
    - {name: a, command: ["true"]}
)yaml");
  backend::BackendOptions bo;
  bo.state_dir = dir_ + "/other";
  bo.slurm_conf = EnvVar("SLURM_CONF");
  auto other = backend::MakeBackend("slurm", bo);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("cannot reach Slurm"), std::string::npos)
      << other.error().ToString();
  // Longer than the backend's grace for a job missing from squeue (5 s).
  std::this_thread::sleep_until(down_at + std::chrono::seconds(6));
  Sh("bash " + ClusterScript() + " start-ctld");

  auto run = engine_->Wait(id, 90'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  auto steps = Steps(run->id);
  EXPECT_EQ(steps["a"].attempts, 1) << steps["a"].message;
  EXPECT_EQ(Slurp(engine::AttemptLogPath(run->run_dir, "a", 1)), "run\n");
  EXPECT_EQ(Slurp(run->run_dir + "/outputs/a/r"), "done\n");
  run = engine_->Wait(late, 60'000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(Steps(run->id)["a"].attempts, 1);
  EXPECT_EQ(Steps(run->id)["a"].retries_used, 0);
}

// Five 2-CPU steps on a cluster that runs four at once: the fifth waits in Slurm's queue
// (PENDING, with Slurm's reason, no node), and its timeout counts from when it runs. Each
// step sleeps 6 s under a 10 s timeout: counted from its submission, the fifth would pass
// 12 s; counted from RUNNING, each has 4 s for its job's start and the monitor's polls (2 s
// were too few on a loaded CI machine, four jobs starting at once).
TEST_F(SlurmFaultsTest, QueuedStepTimeoutCountsFromRunning) {
  StartEngine("slurm");
  std::string y =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: queued}\nspec:\n"
      "  resources: {cpu: \"2\"}\n  pipeline:\n";
  for (int i = 0; i < 5; ++i) {
    y += "    - {name: s" + std::to_string(i) + ", command: [\"sleep\", \"6\"], timeout: 10s}\n";
  }
  std::string id = Submit(y);
  auto run_id = engine_->ResolveRunId(id);
  ASSERT_TRUE(run_id.ok());
  store::Step queued;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (auto& [name, s] : Steps(*run_id)) {
          if (s.phase == spec::StepPhase::kPending && !s.attempt_id.empty() &&
              s.message.find("pending") != std::string::npos) {
            queued = s;
            return true;
          }
        }
        return false;
      },
      20));
  EXPECT_EQ(queued.node, "") << "not running anywhere yet";
  EXPECT_EQ(queued.started_at, 0);
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  for (auto& [name, s] : Steps(run->id)) {
    EXPECT_EQ(s.phase, spec::StepPhase::kSucceeded) << name << ": " << s.message;
    EXPECT_EQ(s.attempts, 1) << name;
    EXPECT_FALSE(s.node.empty()) << name;
  }
}

// A node busy when the controller starts and free later, then drained and resumed: the
// controller follows Slurm's nodes as they change, and the steps wait (reason shown)
// instead of being refused.
TEST_F(SlurmFaultsTest, NodeBusyThenIdleAndDrainThenResume) {
  std::string job =
      Trimmed(Sh("sbatch --parsable -w n1 -c 2 --gres=gpu:4 -o /dev/null --wrap 'sleep 4'"));
  ASSERT_FALSE(job.empty());
  ASSERT_TRUE(
      WaitFor([&] { return Sh("squeue -h -t R -o %A").find(job) != std::string::npos; }, 20));
  StartEngine("slurm");
  const char* gpu_step = R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: NAME}
spec:
  pipeline:
    - name: train
      command: ["true"]
      resources:
        cpu: "1"
        gpu: {count: 2, capability: [tensor_core]}
)yaml";
  auto named = [&](const std::string& name) {
    std::string y = gpu_step;
    y.replace(y.find("NAME"), 4, name);
    return y;
  };
  std::string busy = Submit(named("busy-then-idle"));
  auto run = engine_->Wait(busy, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(Steps(run->id)["train"].node, "n1");

  Sh("scontrol update nodename=n1 state=drain reason=rsl-test");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // the inventory follows
  std::string drained = Submit(named("drain-then-resume"));
  auto run_id = engine_->ResolveRunId(drained);
  ASSERT_TRUE(run_id.ok());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto waiting = store_->GetRun(*run_id);
  ASSERT_TRUE(waiting.ok());
  EXPECT_FALSE(spec::IsTerminal(waiting->phase)) << waiting->failure_message;
  auto step = Steps(*run_id)["train"];
  EXPECT_EQ(step.phase, spec::StepPhase::kPending);
  bool reason_shown = false;
  for (const auto& e : Events(*run_id)) {
    if (e.message.find("Drained") != std::string::npos ||
        e.message.find("pending") != std::string::npos) {
      reason_shown = true;
    }
  }
  EXPECT_TRUE(reason_shown);
  Sh("scontrol update nodename=n1 state=resume");
  run = engine_->Wait(drained, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
}

// A step with a secret survives a controller restart with its log still masked, and no
// secret value stays on disk once the run is over.
TEST_F(SlurmFaultsTest, AdoptedStepKeepsItsSecretsMaskedAndOffDisk) {
  const std::string secret = "s3cr3t-Value-42";
  StartEngine("slurm");
  store::ConfigMap cm;
  cm.namespace_ = "default";
  cm.name = "tok";
  cm.secret = true;
  cm.data = {{"TOKEN", secret}};
  ASSERT_TRUE(store_->PutConfigMap(cm).ok());
  std::string id = Submit(R"yaml(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: secret-adopt}
spec:
  resources: {cpu: "1"}
  pipeline:
    - name: a
      envFrom: [{secretRef: tok}]
      command: ["sh", "-c", "echo \"before $TOKEN\"; sleep 4; echo \"after $TOKEN\"; echo ok > \"$RSL_OUTPUT/x\""]
)yaml");
  auto run_id = engine_->ResolveRunId(id);
  ASSERT_TRUE(run_id.ok());
  std::string log =
      engine::AttemptLogPath(engine::RunDir(engine::DefaultRunsDir(dir_), *run_id), "a", 1);
  ASSERT_TRUE(WaitFor([&] { return Slurp(log) == "before ***\n"; }, 30)) << Slurp(log);
  RestartController();  // the job keeps running in Slurm meanwhile
  auto run = engine_->Wait(id, 60'000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->phase, spec::RunPhase::kSucceeded) << run->failure_message;
  EXPECT_EQ(Steps(run->id)["a"].attempts, 1);
  EXPECT_EQ(Slurp(log), "before ***\nafter ***\n");
  // The attempt's environment and Slurm's unmasked output are gone; nothing under the
  // Slurm files or the run holds the value.
  EXPECT_EQ(Sh("grep -rl '" + secret + "' '" + dir_ + "/slurm' '" + run->run_dir +
               "' 2>/dev/null || true"),
            "");
  EXPECT_EQ(Sh("find '" + dir_ + "/slurm' -name env -o -name output.raw"), "");
}

// What can be known at start is checked at start: the partition and the client commands.
TEST_F(SlurmFaultsTest, MisconfigurationIsFoundAtStart) {
  backend::BackendOptions bo;
  bo.state_dir = dir_;
  bo.slurm_conf = EnvVar("SLURM_CONF");
  bo.slurm_partition = "nosuch";
  auto b = backend::MakeBackend("slurm", bo);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(b.error().message, "Slurm partition \"nosuch\" not found");
  EXPECT_NE(b.error().hint.find("debug"), std::string::npos) << b.error().hint;

  bo.slurm_partition = "debug";
  std::string path = EnvVar("PATH");
  ::setenv("PATH", (dir_ + "/empty-bin").c_str(), 1);
  b = backend::MakeBackend("slurm", bo);
  ::setenv("PATH", path.c_str(), 1);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message, "Slurm client 'sbatch' not found");
}

}  // namespace
}  // namespace rsl
