// Plan tests: every rule of the run plan, on fake time, without processes.
#include "engine/plan.h"

#include <gtest/gtest.h>

#include "base/codes.h"
#include "store/store.h"

namespace rsl::engine {
namespace {

using backend::AttemptExit;
using backend::ExitKind;

spec::Step MakeStep(const std::string& name, std::vector<std::string> deps = {}) {
  spec::Step s;
  s.name = name;
  s.command = {"true"};
  s.depends_on = std::move(deps);
  return s;
}

AttemptExit Exit(ExitKind kind, int code = 0, const std::string& msg = "") {
  AttemptExit e;
  e.kind = kind;
  e.exit_code = code;
  e.message = msg.empty() ? "exit code " + std::to_string(code) : msg;
  return e;
}

std::vector<int> Ready(const RunPlan& p) { return {p.ready().begin(), p.ready().end()}; }

std::vector<std::string> Reasons(RunPlan& p) {
  std::vector<std::string> out;
  for (const auto& t : p.TakeTransitions()) {
    out.push_back((t.step < 0 ? std::string("run") : p.step_spec(t.step).name) + ":" +
                  spec::Name(t.reason));
  }
  return out;
}

const WhenFn kAlwaysTrue = [](int, std::string*) { return Result<bool>(true); };

TEST(PlanTest, FanOutFanInRunsInDependencyOrder) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("a"), MakeStep("b", {"a"}), MakeStep("c", {"a"}),
                      MakeStep("d", {"b", "c"})};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  EXPECT_EQ(Ready(p), (std::vector<int>{0}));
  p.OnLaunched(0, 0);
  p.Advance(0, kAlwaysTrue);
  EXPECT_TRUE(p.ready().empty());
  p.OnExit(0, Exit(ExitKind::kSucceeded), "{}", 5);
  p.Advance(5, kAlwaysTrue);
  EXPECT_EQ(Ready(p), (std::vector<int>{1, 2}));  // independent steps together
  p.OnLaunched(1, 5);
  p.OnLaunched(2, 5);
  p.OnExit(1, Exit(ExitKind::kSucceeded), "{}", 6);
  p.Advance(6, kAlwaysTrue);
  EXPECT_TRUE(p.ready().empty());  // d waits for c
  p.OnExit(2, Exit(ExitKind::kSucceeded), "{}", 7);
  p.Advance(7, kAlwaysTrue);
  EXPECT_EQ(Ready(p), (std::vector<int>{3}));
  p.OnLaunched(3, 7);
  p.OnExit(3, Exit(ExitKind::kSucceeded), "{}", 8);
  p.Advance(8, kAlwaysTrue);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kSucceeded);
  EXPECT_EQ(Reasons(p),
            (std::vector<std::string>{"a:Started", "a:Succeeded", "b:Started", "c:Started",
                                      "b:Succeeded", "c:Succeeded", "d:Started", "d:Succeeded"}));
}

// A backend that knows the failure's stable code (a serving step never ready) gives it to the
// step and the run instead of STEP_FAILED.
TEST(PlanTest, AnExitsOwnCodeIsTheFailureCode) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("serve")};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  AttemptExit e = Exit(ExitKind::kFailed, -1, "0 of 1 replica(s) ready after 3s (readyTimeout)");
  e.code = codes::kServingNotReady;
  p.OnExit(0, e, "{}", 5);
  p.Advance(5, kAlwaysTrue);
  EXPECT_EQ(p.state(0).failure_code, codes::kServingNotReady);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(p.outcome()->failure_code, codes::kServingNotReady);
  EXPECT_EQ(p.outcome()->message, "step serve: 0 of 1 replica(s) ready after 3s (readyTimeout)");
}

TEST(PlanTest, RetriesWithBackoffFactorAndMaxBackoff) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("train")};
  w.pipeline.steps[0].retry = {3, 1000, 2.0, 3000};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.OnExit(0, Exit(ExitKind::kFailed, 1), "{}", 100);
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kRetrying);
  EXPECT_EQ(p.state(0).next_attempt_at, 1100);  // backoff 1s
  EXPECT_EQ(p.NextWakeup(), 1100);
  p.Advance(1099, kAlwaysTrue);
  EXPECT_TRUE(p.ready().empty());
  p.Advance(1100, kAlwaysTrue);
  EXPECT_EQ(Ready(p), (std::vector<int>{0}));
  p.OnLaunched(0, 1100);
  p.OnExit(0, Exit(ExitKind::kOomKilled, -1, "memory limit exceeded"), "{}", 1200);
  EXPECT_EQ(p.state(0).next_attempt_at, 1200 + 2000);  // x2
  p.Advance(3200, kAlwaysTrue);
  p.OnLaunched(0, 3200);
  p.OnExit(0, Exit(ExitKind::kFailed, 1), "{}", 3300);
  EXPECT_EQ(p.state(0).next_attempt_at, 3300 + 3000);  // 4s capped at maxBackoff 3s
  p.Advance(6300, kAlwaysTrue);
  p.OnLaunched(0, 6300);
  p.OnExit(0, Exit(ExitKind::kFailed, 2), "{}", 6400);  // retries exhausted
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kFailed);
  EXPECT_EQ(p.state(0).attempts, 4);
  EXPECT_EQ(p.state(0).retries_used, 3);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(p.outcome()->failure_code, codes::kStepFailed);
  EXPECT_EQ(p.outcome()->message, "step train: exit code 2 (after 4 attempts)");
  auto reasons = Reasons(p);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "train:Retrying"), 3);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "train:OOMKilled"), 1);
}

TEST(PlanTest, RetryDelayFormula) {
  spec::RetryPolicy p{5, 30000, 1.0, std::nullopt};
  EXPECT_EQ(RunPlan::RetryDelayMs(p, 1), 30000);
  EXPECT_EQ(RunPlan::RetryDelayMs(p, 4), 30000);
  p.backoff_factor = 3;
  EXPECT_EQ(RunPlan::RetryDelayMs(p, 3), 270000);
  p.max_backoff_ms = 60000;
  EXPECT_EQ(RunPlan::RetryDelayMs(p, 3), 60000);
}

TEST(PlanTest, WhenFalseSkipsAndCascades) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("pre"), MakeStep("train", {"pre"}), MakeStep("eval", {"train"}),
                      MakeStep("report", {"pre"})};
  w.pipeline.steps[1].when = "output.pre.metrics.f1 > 0.85";
  RunPlan p(&w, 0);
  WhenFn when = [](int i, std::string*) { return Result<bool>(i != 1); };
  p.Advance(0, when);
  p.OnLaunched(0, 0);
  p.OnExit(0, Exit(ExitKind::kSucceeded), "{\"f1\": 0.5}", 1);
  p.Advance(1, when);
  EXPECT_EQ(p.state(1).phase, spec::StepPhase::kSkipped);
  EXPECT_EQ(p.state(1).message, "when output.pre.metrics.f1 > 0.85 is false");
  EXPECT_EQ(p.state(2).phase, spec::StepPhase::kSkipped);  // cascades
  EXPECT_EQ(p.state(2).message, "dependency train is SKIPPED");
  EXPECT_EQ(Ready(p), (std::vector<int>{3}));  // the other branch runs
  p.OnLaunched(3, 1);
  p.OnExit(3, Exit(ExitKind::kSucceeded), "{}", 2);
  p.Advance(2, when);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kSucceeded);  // skips are not failures
  EXPECT_EQ(p.state(0).metrics_json, "{\"f1\": 0.5}");
}

TEST(PlanTest, WhenErrorFailsTheStepWithoutRetry) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("a")};
  w.pipeline.steps[0].when = "output.x.metrics.y > 1";
  w.pipeline.steps[0].retry.max_retries = 3;
  RunPlan p(&w, 0);
  p.Advance(0, [](int, std::string*) {
    return Result<bool>(Error(codes::kExpressionInvalid, "unknown reference"));
  });
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kFailed);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->failure_code, codes::kExpressionInvalid);
}

TEST(PlanTest, UpstreamFailureSkipsDependentsInNonAtomicRunOthersContinue) {
  spec::Workload w;
  w.pipeline.atomic = false;
  w.pipeline.steps = {MakeStep("a"), MakeStep("b", {"a"}), MakeStep("c"), MakeStep("d", {"c"})};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.OnLaunched(2, 0);
  p.OnExit(0, Exit(ExitKind::kFailed, 3), "{}", 1);
  p.Advance(1, kAlwaysTrue);
  EXPECT_EQ(p.state(1).phase, spec::StepPhase::kSkipped);
  EXPECT_TRUE(p.TakeStops().empty());  // c keeps running
  p.OnExit(2, Exit(ExitKind::kSucceeded), "{}", 2);
  p.Advance(2, kAlwaysTrue);
  EXPECT_EQ(Ready(p), (std::vector<int>{3}));
  p.OnLaunched(3, 2);
  p.OnExit(3, Exit(ExitKind::kSucceeded), "{}", 3);
  p.Advance(3, kAlwaysTrue);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(p.outcome()->message, "step a: exit code 3");
}

TEST(PlanTest, AtomicFailureStopsTheRestAndStartsNothing) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("a"), MakeStep("b"), MakeStep("c", {"b"})};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.OnLaunched(1, 0);
  p.OnExit(0, Exit(ExitKind::kFailed, 1), "{}", 1);
  auto stops = p.TakeStops();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].step, 1);
  EXPECT_FALSE(stops[0].timed_out);
  p.OnExit(1, Exit(ExitKind::kCancelled, -1, "stopped on request"), "{}", 2);
  p.Advance(2, kAlwaysTrue);
  EXPECT_EQ(p.state(1).phase, spec::StepPhase::kCancelled);
  EXPECT_EQ(p.state(2).phase, spec::StepPhase::kSkipped);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kFailed);
}

TEST(PlanTest, StepTimeoutStopsThenCountsAsFailure) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("slow")};
  w.pipeline.steps[0].timeout_ms = 500;
  w.pipeline.steps[0].retry = {1, 100, 1.0, std::nullopt};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  EXPECT_EQ(p.NextWakeup(), 500);
  p.Advance(499, kAlwaysTrue);
  EXPECT_TRUE(p.TakeStops().empty());
  p.Advance(500, kAlwaysTrue);
  auto stops = p.TakeStops();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_TRUE(stops[0].timed_out);
  p.Advance(600, kAlwaysTrue);
  EXPECT_TRUE(p.TakeStops().empty());  // asked once
  p.TakeTransitions();
  p.OnExit(0, Exit(ExitKind::kTimedOut, -1, "stopped: time limit exceeded"), "{}", 700);
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kRetrying);             // a timeout spends a retry
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"slow:Retrying"}));  // TimedOut came at 500
  p.Advance(800, kAlwaysTrue);
  p.OnLaunched(0, 800);
  p.Advance(1300, kAlwaysTrue);
  ASSERT_EQ(p.TakeStops().size(), 1u);
  p.OnExit(0, Exit(ExitKind::kTimedOut, -1, "stopped: time limit exceeded"), "{}", 1300);
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kTimedOut);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kFailed);
  EXPECT_EQ(p.outcome()->failure_code, codes::kStepTimedOut);
}

// On a backend with a queue (Slurm) the step waits there PENDING, and its timeout counts
// from the moment it runs: waiting in the queue is no time spent.
TEST(PlanTest, QueuedAttemptTimesOutFromRunningNotFromLaunch) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("queued")};
  w.pipeline.steps[0].timeout_ms = 500;
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0, /*queued=*/true);
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kPending);
  EXPECT_TRUE(p.state(0).running);
  EXPECT_EQ(p.state(0).started_at, 0);
  EXPECT_EQ(p.NextWakeup(), INT64_MAX);
  EXPECT_TRUE(Reasons(p).empty());
  p.OnQueued(0, "Slurm job 7 pending: Resources");
  EXPECT_EQ(p.state(0).message, "Slurm job 7 pending: Resources");
  p.Advance(5000, kAlwaysTrue);
  EXPECT_TRUE(p.TakeStops().empty());  // 5 s in the queue: no timeout
  EXPECT_TRUE(p.OnRunning(0, 5000));
  EXPECT_FALSE(p.OnRunning(0, 5100));  // once
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kRunning);
  EXPECT_EQ(p.state(0).started_at, 5000);
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"queued:Started"}));
  EXPECT_EQ(p.NextWakeup(), 5500);
  p.Advance(5499, kAlwaysTrue);
  EXPECT_TRUE(p.TakeStops().empty());
  p.Advance(5500, kAlwaysTrue);
  ASSERT_EQ(p.TakeStops().size(), 1u);
}

// A queued attempt cancelled before it ran: CANCELLED, and it never started.
TEST(PlanTest, QueuedAttemptCancelledNeverStarted) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("queued")};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0, /*queued=*/true);
  p.Cancel(100, "alice");
  ASSERT_EQ(p.TakeStops().size(), 1u);
  p.OnExit(0, Exit(ExitKind::kCancelled, -1, "cancelled by RSL"), "{}", 200);
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kCancelled);
  EXPECT_EQ(p.state(0).started_at, 0);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kCancelled);
}

// An attempt queued when the controller stopped is adopted again, still queued.
TEST(PlanTest, RestoredQueuedAttemptStaysQueued) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("queued")};
  w.pipeline.steps[0].timeout_ms = 500;
  RunPlan p(&w, 0);
  StepState s;
  s.phase = spec::StepPhase::kPending;
  s.attempts = 1;
  s.running = true;
  p.Restore(0, s);
  p.Advance(10000, kAlwaysTrue);
  EXPECT_TRUE(p.ready().empty());
  EXPECT_TRUE(p.TakeStops().empty());
  EXPECT_TRUE(p.OnRunning(0, 10000));
  EXPECT_EQ(p.NextWakeup(), 10500);
}

// The timeout is on record when it fires, not when the stopped attempt finally ends: phase
// TIMED_OUT and the TimedOut event at once, while the attempt still runs its grace period.
TEST(PlanTest, StepTimeoutIsRecordedWhenItFires) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("slow"), MakeStep("next", {"slow"})};
  w.pipeline.steps[0].timeout_ms = 500;
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.TakeTransitions();
  p.TakeDirty();
  p.Advance(500, kAlwaysTrue);
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kTimedOut);
  EXPECT_TRUE(p.state(0).running);
  EXPECT_EQ(p.state(0).failure_code, codes::kStepTimedOut);
  EXPECT_EQ(p.state(0).message, "step exceeded its time limit of 500ms");
  auto t = p.TakeTransitions();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].reason, spec::EventReason::kTimedOut);
  EXPECT_EQ(t[0].message, "step exceeded its time limit of 500ms");
  EXPECT_EQ(p.TakeDirty(), std::set<int>{0});
  EXPECT_EQ(p.TakeStops().size(), 1u);
  EXPECT_FALSE(p.outcome().has_value());  // the attempt has not ended yet
  EXPECT_EQ(p.state(1).phase, spec::StepPhase::kPending);
  // The grace period ends with SIGKILL: the exit completes it, without a second TimedOut.
  p.OnExit(0, Exit(ExitKind::kTimedOut, -1, "stopped: time limit exceeded (killed by SIGKILL)"),
           "{}", 10'500);
  p.Advance(10'500, kAlwaysTrue);
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"slow:Failed", "next:Skipped"}));
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(p.state(0).finished_at, 10'500);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->failure_code, codes::kStepTimedOut);
}

// An attempt that ends on its own before the stop reaches it still counts as timed out: the
// timeout was already on record.
TEST(PlanTest, AnExitAfterTheTimeoutFiredCountsAsTimedOut) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("slow")};
  w.pipeline.steps[0].timeout_ms = 500;
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.Advance(500, kAlwaysTrue);
  p.OnExit(0, Exit(ExitKind::kSucceeded, 0), "{}", 501);
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(p.state(0).message, "stopped: time limit of 500ms exceeded (exit code 0)");
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->failure_code, codes::kStepTimedOut);
}

// Both limits: the step's own fired first and stays the step's record when the run's limit
// passes during its grace period; the run still ends TIMED_OUT for its own limit.
TEST(PlanTest, AStepTimeoutBeforeTheRunTimeoutIsTheStepsRecord) {
  spec::Workload w;
  w.timeout_ms = 1000;
  w.pipeline.steps = {MakeStep("slow")};
  w.pipeline.steps[0].timeout_ms = 500;
  w.pipeline.steps[0].retry = {2, 100, 1.0, std::nullopt};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.TakeTransitions();
  p.Advance(500, kAlwaysTrue);
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"slow:TimedOut"}));
  EXPECT_EQ(p.TakeStops().size(), 1u);
  p.Advance(1000, kAlwaysTrue);  // the run's limit, while the step is in its grace period
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"run:TimedOut"}));
  EXPECT_TRUE(p.TakeStops().empty());  // already being stopped
  p.OnExit(0, Exit(ExitKind::kTimedOut, -1, "stopped: time limit exceeded (killed by SIGKILL)"),
           "{}", 1200);
  p.Advance(1200, kAlwaysTrue);
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"slow:Failed"}));  // no retry: the run ended
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(p.state(0).failure_code, codes::kStepTimedOut);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kTimedOut);
  EXPECT_EQ(p.outcome()->failure_code, codes::kWorkloadTimedOut);
}

// A step timed out and being stopped when the engine died: restored, it is stopped again
// (the stop may never have been sent) and not timed out twice.
TEST(PlanTest, ARestoredStepInItsTimeoutGraceIsStoppedAgain) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("slow")};
  w.pipeline.steps[0].timeout_ms = 500;
  RunPlan p(&w, 0);
  StepState s;
  s.phase = spec::StepPhase::kTimedOut;
  s.running = true;
  s.attempts = 1;
  s.started_at = 0;
  s.failure_code = codes::kStepTimedOut;
  p.Restore(0, s);
  p.Advance(2000, kAlwaysTrue);
  auto stops = p.TakeStops();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_TRUE(stops[0].timed_out);
  EXPECT_TRUE(p.TakeTransitions().empty());
  p.OnExit(0, Exit(ExitKind::kTimedOut, -1, "stopped: time limit exceeded"), "{}", 2100);
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"slow:Failed"}));
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->failure_code, codes::kStepTimedOut);
}

TEST(PlanTest, RunTimeoutStopsEverythingAndEndsTimedOut) {
  spec::Workload w;
  w.timeout_ms = 1000;
  w.pipeline.steps = {MakeStep("a"), MakeStep("b", {"a"})};
  RunPlan p(&w, 100);
  p.Advance(100, kAlwaysTrue);
  p.OnLaunched(0, 100);
  EXPECT_EQ(p.NextWakeup(), 1100);
  p.TakeTransitions();
  p.Advance(1100, kAlwaysTrue);
  auto stops = p.TakeStops();
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_TRUE(stops[0].timed_out);
  // The running step is timed out at once, for the run's limit.
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"run:TimedOut", "a:TimedOut"}));
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(p.state(0).failure_code, codes::kWorkloadTimedOut);
  EXPECT_FALSE(p.outcome().has_value());
  p.OnExit(0, Exit(ExitKind::kTimedOut, -1, "stopped"), "{}", 1150);
  p.Advance(1150, kAlwaysTrue);
  EXPECT_EQ(Reasons(p), (std::vector<std::string>{"b:Cancelled"}));
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kTimedOut);
  EXPECT_EQ(p.state(0).message, "stopped: the run's time limit passed");
  EXPECT_EQ(p.state(1).phase, spec::StepPhase::kCancelled);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kTimedOut);
  EXPECT_EQ(p.outcome()->failure_code, codes::kWorkloadTimedOut);
  EXPECT_EQ(p.outcome()->message, "the run exceeded its time limit of 1s");
}

TEST(PlanTest, NodeLostReschedulesWithoutSpendingARetry) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("a")};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.OnExit(0, Exit(ExitKind::kNodeLost, -1, "node n1 went away"), "{}", 5);
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kPending);
  EXPECT_EQ(p.state(0).retries_used, 0);
  EXPECT_EQ(Ready(p), (std::vector<int>{0}));
  p.OnLaunched(0, 6);
  EXPECT_EQ(p.state(0).attempts, 2);
  p.OnExit(0, Exit(ExitKind::kSucceeded), "{}", 7);
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kSucceeded);
}

TEST(PlanTest, CancelStopsRunningAndCancelsPending) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("a"), MakeStep("b", {"a"})};
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.Cancel(1, "alice");
  auto stops = p.TakeStops();
  ASSERT_EQ(stops.size(), 1u);
  p.OnExit(0, Exit(ExitKind::kCancelled, -1, "stopped on request"), "{}", 2);
  p.Advance(2, kAlwaysTrue);
  EXPECT_EQ(p.state(1).phase, spec::StepPhase::kCancelled);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kCancelled);
  EXPECT_EQ(p.outcome()->message, "cancelled by alice");
}

TEST(PlanTest, HookErrorFailsASucceededAttemptWithoutRetry) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("train")};
  w.pipeline.steps[0].retry.max_retries = 2;
  RunPlan p(&w, 0);
  p.Advance(0, kAlwaysTrue);
  p.OnLaunched(0, 0);
  p.OnExit(0, Exit(ExitKind::kSucceeded), "{}", 1,
           Error(codes::kOutputSchemaMismatch, "fraud_prob.dtype expected float32, got int32"));
  EXPECT_EQ(p.state(0).phase, spec::StepPhase::kFailed);
  EXPECT_EQ(p.outcome()->failure_code, codes::kOutputSchemaMismatch);
}

TEST(PlanTest, RestoreResumesAfterACrash) {
  spec::Workload w;
  w.pipeline.steps = {MakeStep("a"), MakeStep("b", {"a"}), MakeStep("c", {"b"})};
  RunPlan p(&w, 0);
  StepState done;
  done.phase = spec::StepPhase::kSucceeded;
  done.attempts = 1;
  StepState running;
  running.phase = spec::StepPhase::kRunning;
  running.attempts = 1;
  running.started_at = 10;
  p.Restore(0, done);
  p.Restore(1, running);
  p.Advance(20, kAlwaysTrue);
  EXPECT_TRUE(p.ready().empty());  // b is adopted, not relaunched
  EXPECT_EQ(p.running(), 1);
  p.OnExit(1, Exit(ExitKind::kSucceeded), "{}", 30);
  p.Advance(30, kAlwaysTrue);
  EXPECT_EQ(Ready(p), (std::vector<int>{2}));
  p.OnExit(1, Exit(ExitKind::kSucceeded), "{}", 31);  // a duplicate report changes nothing
  EXPECT_EQ(p.running(), 0);
}

TEST(PlanTest, EmptyPipelineSucceedsAtOnce) {
  spec::Workload w;
  RunPlan p(&w, 0);
  ASSERT_TRUE(p.outcome().has_value());
  EXPECT_EQ(p.outcome()->phase, spec::RunPhase::kSucceeded);
}

}  // namespace
}  // namespace rsl::engine
