// The Slurm backend's decisions, driven by recorded real outputs through a fake runner: no
// processes, no threads (PollOnce is called by the test).
#include "backend/slurm_backend.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <deque>
#include <filesystem>
#include <mutex>

#include "backend/slurm_test_util.h"
#include "base/codes.h"
#include "base/fake_env.h"
#include "base/file.h"

namespace rsl::backend {
namespace {

// Answers each command (by argv[0]) with queued outputs; the last one repeats.
class FakeRunner : public CommandRunner {
 public:
  Result<CommandOutput> Run(const std::vector<std::string>& argv) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(argv);
    auto& q = answers[argv[0]];
    if (q.empty()) return CommandOutput{1, "", argv[0] + ": no answer scripted"};
    CommandOutput out = q.front();
    if (q.size() > 1) q.pop_front();
    return out;
  }
  void Answer(const std::string& cmd, std::string out, int code = 0, std::string err = "") {
    std::lock_guard<std::mutex> lock(mu);
    answers[cmd].push_back(CommandOutput{code, std::move(out), std::move(err)});
  }
  void Replace(const std::string& cmd, std::string out) {
    std::lock_guard<std::mutex> lock(mu);
    answers[cmd].clear();
    answers[cmd].push_back(CommandOutput{0, std::move(out), ""});
  }
  std::vector<std::vector<std::string>> Calls(const std::string& cmd) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::vector<std::string>> out;
    for (auto& c : calls) {
      if (c[0] == cmd) out.push_back(c);
    }
    return out;
  }
  std::mutex mu;
  std::map<std::string, std::deque<CommandOutput>> answers;
  std::vector<std::vector<std::string>> calls;
};

std::string SqueueWith(int64_t id, const std::string& state, const std::string& nodes,
                       int64_t exit_status = 0, const std::string& reason = "None") {
  return R"({"meta": {}, "errors": [], "jobs": [{"job_id": )" + std::to_string(id) +
         R"(, "name": "rsl-w-s", "job_state": ")" + state + R"(", "state_reason": ")" + reason +
         R"(", "nodes": ")" + nodes + R"(", "exit_code": )" + std::to_string(exit_status) +
         R"(, "start_time": 100, "end_time": 103, "comment": ""}]})";
}

class SlurmBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "slurm_backend_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(MakeDirs(dir_).ok());
    auto runner = std::make_unique<FakeRunner>();
    fake_ = runner.get();
    fake_->Answer("sinfo", Recorded("sinfo_idle.json"));
    SlurmBackendOptions o;
    o.backend.state_dir = dir_;
    o.start_monitor = false;
    o.vanished_grace_ms = 0;
    o.patience_ms = 60000;
    o.env = &clock_;
    backend_ = std::make_unique<SlurmBackend>(o, std::move(runner));
    backend_->on_exit = [this](const AttemptExit& e) { exits_.push_back(e); };
    backend_->on_event = [this](const AttemptEvent& e) { events_.push_back(e); };
  }

  LaunchSpec Spec(const std::string& step = "train") {
    LaunchSpec s;
    s.attempt_id = "run-1/" + step + "/1";
    s.run_id = "run-1";
    s.workload_name = "w";
    s.step = step;
    s.argv = {"true"};
    s.env = {{"PATH", "/usr/bin:/bin"}, {"TOKEN", "hunter2"}};
    s.secret_values = {"hunter2"};
    s.workdir = dir_;
    s.log_path = dir_ + "/logs/" + step + ".log";
    s.exit_file = dir_ + "/exit/" + step + ".json";
    s.cpu_millis = 1000;
    return s;
  }

  std::string dir_;
  FakeClockEnv clock_;
  FakeRunner* fake_ = nullptr;
  std::unique_ptr<SlurmBackend> backend_;
  std::vector<AttemptExit> exits_;
  std::vector<AttemptEvent> events_;
};

TEST_F(SlurmBackendTest, LaunchRunSucceed) {
  fake_->Answer("sbatch", "1\n");
  auto spec = Spec();
  ASSERT_TRUE(backend_->Launch(spec).ok());
  auto sb = fake_->Calls("sbatch");
  ASSERT_EQ(sb.size(), 1u);
  std::string script = dir_ + "/slurm/run-1_train_1/job.sh";
  EXPECT_EQ(sb[0].back(), script);
  // Secrets: Slurm writes the raw output privately; the backend copies it masked.
  EXPECT_EQ(sb[0][5], "--output=" + dir_ + "/slurm/run-1_train_1/output.raw");
  struct stat st;
  ASSERT_EQ(::stat((dir_ + "/slurm/run-1_train_1/env").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(*ReadFile(dir_ + "/slurm/run-1_train_1/job_id"), "1\n");
  EXPECT_EQ(backend_->JobIdOf(spec.attempt_id), 1);
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].reason, spec::EventReason::kSubmitted);

  fake_->Answer("squeue", Recorded("squeue_running.json"));  // job 1 COMPLETED on n1 there
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/slurm/run-1_train_1/output.raw", "token hunter2 ok\n").ok());
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].attempt_id, spec.attempt_id);
  EXPECT_EQ(exits_[0].kind, ExitKind::kSucceeded);
  EXPECT_EQ(exits_[0].node, "n1");
  EXPECT_EQ(*ReadFile(spec.log_path), "token *** ok\n");
  EXPECT_EQ(backend_->JobIdOf(spec.attempt_id), 0);
  // The secret values in clear (environment, unmasked output) are gone with the attempt.
  EXPECT_FALSE(PathExists(dir_ + "/slurm/run-1_train_1/env"));
  EXPECT_FALSE(PathExists(dir_ + "/slurm/run-1_train_1/output.raw"));
  backend_->PollOnce();
  EXPECT_EQ(exits_.size(), 1u) << "an exit is reported exactly once";
}

TEST_F(SlurmBackendTest, NodeDownIsNodeLostAndTheJobIsGivenUp) {
  fake_->Answer("sbatch", "4\n");  // recorded job 4 runs on n1
  auto spec = Spec();
  ASSERT_TRUE(backend_->Launch(spec).ok());
  fake_->Answer("squeue", SqueueWith(4, "RUNNING", "n2"));
  backend_->PollOnce();
  EXPECT_TRUE(exits_.empty());
  ASSERT_EQ(events_.size(), 2u);
  EXPECT_EQ(events_[1].reason, spec::EventReason::kRunning);
  EXPECT_EQ(events_[1].node, "n2");
  // Slurm marks n2 down; the job still shows RUNNING there (before its own NODE_FAIL).
  fake_->Replace("sinfo", Recorded("sinfo_n2down.json"));
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kNodeLost);
  EXPECT_EQ(exits_[0].node, "n2");
  EXPECT_EQ(exits_[0].message,
            "node n2 is down (Not responding); Slurm job 4 given up (its processes may live on "
            "there as orphans)");
  auto sc = fake_->Calls("scancel");
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0], (std::vector<std::string>{"scancel", "4"}));
  EXPECT_EQ(*ReadFile(dir_ + "/slurm/run-1_train_1/job_id"), "lost\n");
}

TEST_F(SlurmBackendTest, NodeFailStateIsNodeLost) {
  fake_->Answer("sbatch", "6\n");
  ASSERT_TRUE(backend_->Launch(Spec()).ok());
  fake_->Answer("squeue", Recorded("squeue_nodefail.json"));
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kNodeLost);
}

TEST_F(SlurmBackendTest, StopCancelsAndReportsTheIntent) {
  fake_->Answer("sbatch", "5\n");
  fake_->Answer("sbatch", "11\n");
  ASSERT_TRUE(backend_->Launch(Spec("a")).ok());
  ASSERT_TRUE(backend_->Launch(Spec("b")).ok());
  backend_->Stop("run-1/a/1", 1000, false);
  backend_->Stop("run-1/b/1", 1000, true);
  backend_->Stop("no-such-attempt", 1000, false);
  auto sc = fake_->Calls("scancel");
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0][1], "5");
  EXPECT_EQ(sc[1][1], "11");
  fake_->Answer("squeue", Recorded("squeue_final.json"));  // 5 CANCELLED, 11 TIMEOUT
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 2u);
  std::map<std::string, ExitKind> kinds;
  for (auto& e : exits_) kinds[e.attempt_id] = e.kind;
  EXPECT_EQ(kinds["run-1/a/1"], ExitKind::kCancelled);
  EXPECT_EQ(kinds["run-1/b/1"], ExitKind::kTimedOut);
}

// A job that outlives RSL's scancel (a stuck slurmstepd, or processes in D state on the node)
// holds its step only unkillable_grace_ms (120 s), then ends as asked.
TEST_F(SlurmBackendTest, JobStillRunningLongAfterScancelIsGivenUp) {
  fake_->Answer("sbatch", "7\n");
  fake_->Answer("scancel", "");
  ASSERT_TRUE(backend_->Launch(Spec()).ok());
  fake_->Answer("squeue", SqueueWith(7, "RUNNING", "n2"));
  backend_->PollOnce();
  backend_->Stop("run-1/train/1", 1000, /*timed_out=*/true);
  ASSERT_EQ(fake_->Calls("scancel").size(), 1u);
  clock_.Advance(119000);
  backend_->PollOnce();
  EXPECT_TRUE(exits_.empty()) << "given up before the grace ran out";
  fake_->Replace("squeue", SqueueWith(7, "COMPLETING", "n2"));
  clock_.Advance(1000);
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kTimedOut);
  EXPECT_EQ(exits_[0].node, "n2");
  EXPECT_EQ(exits_[0].message,
            "Slurm job 7 still COMPLETING on n2 120 s after scancel; given up (its processes may "
            "live on there as orphans)");
  EXPECT_EQ(backend_->JobIdOf("run-1/train/1"), 0);
  // Should it end after all, its batch script finds it is no longer the attempt's job.
  EXPECT_EQ(*ReadFile(dir_ + "/slurm/run-1_train_1/job_id"), "lost\n");
}

TEST_F(SlurmBackendTest, ImpossibleRequestsAreRefusedBeforeSbatch) {
  auto spec = Spec();
  spec.capabilities = {"low_latency"};
  auto st = backend_->Launch(spec);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), "INSUFFICIENT_RESOURCES");
  EXPECT_EQ(st.error().message,
            "step 'train': no Slurm node has capability 'low_latency' (node features: n1: "
            "tensor_core,fp16_support; n2: fp16_support; n3: cpu_only)");
  EXPECT_EQ(st.error().value, "low_latency");

  spec.capabilities = {"fp16_support"};
  spec.gpus = 5;
  st = backend_->Launch(spec);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "step 'train': no Slurm node with [fp16_support] has 5 GPUs (most: n1 with 4)");

  spec.capabilities = {"cpu_only", "tensor_core"};
  spec.gpus = 0;
  st = backend_->Launch(spec);
  EXPECT_EQ(st.error().message,
            "step 'train': no Slurm node has all of [cpu_only,tensor_core] at once");

  spec.capabilities = {};
  spec.cpu_millis = 64000;
  st = backend_->Launch(spec);
  EXPECT_EQ(st.error().message, "step 'train': no Slurm node has 64 CPUs (most: n3 with 4)");

  spec.cpu_millis = 1000;
  spec.memory_bytes = 100LL << 30;
  st = backend_->Launch(spec);
  EXPECT_EQ(st.error().message,
            "step 'train': no Slurm node has 102400Mi memory (most: n3 with 8000Mi)");

  spec.memory_bytes = 6000LL << 20;
  spec.gpus = 1;
  st = backend_->Launch(spec);
  EXPECT_EQ(st.error().message,
            "step 'train': no single Slurm node has 1 CPUs, 6000Mi memory and 1 GPUs at once");
  EXPECT_TRUE(fake_->Calls("sbatch").empty());
}

TEST_F(SlurmBackendTest, SbatchRefusalIsInsufficientResources) {
  fake_->Answer("sbatch", "", 1,
                "sbatch: error: Batch job submission failed: Requested node configuration is not "
                "available\n");
  auto st = backend_->Launch(Spec());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), "INSUFFICIENT_RESOURCES");
  EXPECT_NE(st.error().message.find("Requested node configuration is not available"),
            std::string::npos);
}

TEST_F(SlurmBackendTest, SbatchOtherFailureIsInternalWithHint) {
  fake_->Answer("sbatch", "", 1, "sbatch: error: Invalid account or account/partition\n");
  auto st = backend_->Launch(Spec());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), "INTERNAL");
  EXPECT_EQ(st.error().hint, "is slurmctld running and SLURM_CONF right? (scontrol ping)");
  EXPECT_FALSE(PathExists(dir_ + "/slurm/run-1_train_1/env"));  // no secrets left behind
}

// slurmctld down at submit time: the attempt waits (its reason shown) and is submitted once
// Slurm answers; launches meanwhile do not run sbatch again (each one cost the engine's loop
// a client time-out), and nothing spends a retry.
TEST_F(SlurmBackendTest, SbatchWithoutSlurmctldWaitsAndSubmitsLater) {
  fake_->Answer("sbatch", "", 1,
                "sbatch: error: Batch job submission failed: Unable to contact "
                "slurm controller (connect failure)\n");
  fake_->Answer("sbatch", "21\n");
  ASSERT_TRUE(backend_->Launch(Spec("a")).ok());
  ASSERT_TRUE(backend_->Launch(Spec("b")).ok());
  EXPECT_EQ(fake_->Calls("sbatch").size(), 1u);
  ASSERT_EQ(events_.size(), 2u);
  EXPECT_EQ(events_[0].reason, spec::EventReason::kPending);
  EXPECT_NE(events_[0].message.find("waiting for Slurm to answer before submitting"),
            std::string::npos);
  fake_->Answer("squeue", R"({"errors": [{"error": "Unable to contact slurm controller"}],)"
                          R"( "jobs": []})");
  backend_->PollOnce();
  EXPECT_TRUE(exits_.empty());
  EXPECT_EQ(fake_->Calls("sbatch").size(), 1u);
  backend_->Stop("run-1/b/1", 1000, false);  // cancelled before Slurm ever had it
  fake_->Replace("squeue", SqueueWith(21, "PENDING", "", 0, "Resources"));
  backend_->PollOnce();
  EXPECT_EQ(fake_->Calls("sbatch").size(), 2u);
  EXPECT_EQ(backend_->JobIdOf("run-1/a/1"), 21);
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].attempt_id, "run-1/b/1");
  EXPECT_EQ(exits_[0].kind, ExitKind::kCancelled);
  EXPECT_TRUE(fake_->Calls("scancel").empty());
  backend_->PollOnce();
  EXPECT_EQ(events_.back().message, "Slurm job 21 pending: Resources");
}

// Slurm 22.05's squeue --json while slurmctld is down: exit 0, "errors", no jobs. That is no
// news (the job is not gone); scancels wait for Slurm; after `patience_ms` the attempt fails.
TEST_F(SlurmBackendTest, OutageDecidesNothingUntilPatienceRunsOut) {
  fake_->Answer("sbatch", "4\n");
  ASSERT_TRUE(backend_->Launch(Spec()).ok());
  std::string down = R"({"errors": [{"error": "Unable to contact slurm controller"}], "jobs": []})";
  fake_->Answer("squeue", down);
  fake_->Replace("sinfo", R"({"errors": [{"error": "Unable to contact slurm controller"}], )"
                          R"("nodes": []})");
  backend_->PollOnce();
  clock_.Advance(30000);
  backend_->PollOnce();
  EXPECT_TRUE(exits_.empty());
  EXPECT_TRUE(fake_->Calls("sacct").empty()) << "an outage is not a vanished job";
  EXPECT_EQ(events_.back().reason, spec::EventReason::kPending);
  EXPECT_NE(events_.back().message.find("Slurm unreachable"), std::string::npos);
  auto nodes = backend_->ListNodes();
  ASSERT_FALSE(nodes.ok());  // `node list`: "Slurm unreachable", not "no nodes"
  EXPECT_NE(nodes.error().message.find("Slurm unreachable"), std::string::npos);
  clock_.Advance(30000);
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kFailed);
  EXPECT_NE(exits_[0].message.find("Slurm unreachable for 60s"), std::string::npos);
  EXPECT_EQ(*ReadFile(dir_ + "/slurm/run-1_train_1/job_id"), "lost\n");
}

// The scancel Stop could not send while Slurm was away goes out once it answers.
TEST_F(SlurmBackendTest, CancelDuringOutageIsSentWhenSlurmAnswers) {
  fake_->Answer("sbatch", "4\n");
  ASSERT_TRUE(backend_->Launch(Spec()).ok());
  fake_->Answer("squeue", R"({"errors": [{"error": "Unable to contact"}], "jobs": []})");
  fake_->Answer("squeue", SqueueWith(4, "RUNNING", "n1"));
  backend_->PollOnce();
  backend_->Stop("run-1/train/1", 1000, false);
  EXPECT_TRUE(fake_->Calls("scancel").empty()) << "Stop must not wait for a dead slurmctld";
  backend_->PollOnce();
  auto sc = fake_->Calls("scancel");
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0][1], "4");
}

// A step killed by a signal is named as the local backend names it, not "exited with 137".
TEST_F(SlurmBackendTest, SignalFromTheExitRecordIsNamed) {
  fake_->Answer("sbatch", "2\n");
  auto spec = Spec();
  ASSERT_TRUE(backend_->Launch(spec).ok());
  ASSERT_TRUE(WriteFileAtomic(spec.exit_file, "exit_code=-1\nsignal=9\nwall_ms=5\n").ok());
  fake_->Answer("squeue", SqueueWith(2, "FAILED", "n1", 137 << 8, "NonZeroExitCode"));
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kFailed);
  EXPECT_EQ(exits_[0].signal, 9);
  EXPECT_EQ(exits_[0].message, "Slurm job 2 failed on n1: killed by SIGKILL");
}

// The batch script's measurements reach the exit, whatever Slurm's verdict: a step Slurm
// OOM-killed keeps its CPU time and peak memory, and the message names the limit asked for.
TEST_F(SlurmBackendTest, UsageFromTheExitRecordAndTheOomLimitNamed) {
  fake_->Answer("sbatch", "3\n");
  auto spec = Spec();
  spec.memory_bytes = 96LL * 1024 * 1024;
  ASSERT_TRUE(backend_->Launch(spec).ok());
  ASSERT_TRUE(WriteFileAtomic(spec.exit_file,
                              "exit_code=-1\nsignal=9\noom=0\nstop=\nwall_ms=1500\ncpu_ms=1234\n"
                              "peak_memory_bytes=100663296\nlimits=slurm\nmessage=\n")
                  .ok());
  fake_->Answer("squeue", SqueueWith(3, "OUT_OF_MEMORY", "n2", 0, "OutOfMemory"));
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kOomKilled);
  EXPECT_EQ(exits_[0].message,
            "Slurm job 3 exceeded its memory limit of 96Mi (--mem=96M) on n2, OOM-killed");
  EXPECT_EQ(exits_[0].usage.wall_ms, 1500);
  EXPECT_EQ(exits_[0].usage.cpu_ms, 1234);
  EXPECT_EQ(exits_[0].usage.peak_memory_bytes, 100663296);
}

TEST_F(SlurmBackendTest, SucceededStepReportsTheRecordsUsage) {
  fake_->Answer("sbatch", "5\n");
  auto spec = Spec();
  ASSERT_TRUE(backend_->Launch(spec).ok());
  ASSERT_TRUE(WriteFileAtomic(spec.exit_file,
                              "exit_code=0\nsignal=0\noom=0\nstop=\nwall_ms=2100\ncpu_ms=2000\n"
                              "peak_memory_bytes=52428800\nlimits=slurm\nmessage=\n")
                  .ok());
  // Still RUNNING in Slurm (the script has only just ended): the record is final.
  fake_->Answer("squeue", SqueueWith(5, "RUNNING", "n1"));
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kSucceeded);
  EXPECT_EQ(exits_[0].usage.cpu_ms, 2000);
  EXPECT_EQ(exits_[0].usage.peak_memory_bytes, 52428800);
}

// Live usage: the batch script's sampler rewrites <exit_file>.usage while the step runs; the
// monitor reports each new sample once (on_usage), and not before the job runs.
TEST_F(SlurmBackendTest, RunningJobsSamplesAreReportedAsLiveUsage) {
  std::vector<AttemptUsage> usages;
  backend_->on_usage = [&usages](const AttemptUsage& u) { usages.push_back(u); };
  fake_->Answer("sbatch", "6\n");
  auto spec = Spec();
  ASSERT_TRUE(backend_->Launch(spec).ok());
  fake_->Answer("squeue", SqueueWith(6, "PENDING", "", 0, "Resources"));
  ASSERT_TRUE(WriteFileAtomic(slurm::UsageFile(spec), "wall_ms=1\ncpu_ms=0\n").ok());
  backend_->PollOnce();
  EXPECT_TRUE(usages.empty()) << "a pending job has no usage";
  fake_->Replace("squeue", SqueueWith(6, "RUNNING", "n1"));
  ASSERT_TRUE(WriteFileAtomic(slurm::UsageFile(spec),
                              "wall_ms=2000\ncpu_ms=1500\nmemory_bytes=1000\n"
                              "peak_memory_bytes=4096\npeak_cpu_millicores=800\n"
                              "cpu_from=proc\nmemory_from=cgroup-v1\n")
                  .ok());
  backend_->PollOnce();
  ASSERT_EQ(usages.size(), 1u);
  EXPECT_EQ(usages[0].attempt_id, spec.attempt_id);
  EXPECT_EQ(usages[0].usage.wall_ms, 2000);
  EXPECT_EQ(usages[0].usage.cpu_ms, 1500);
  EXPECT_EQ(usages[0].usage.peak_memory_bytes, 4096);
  EXPECT_EQ(usages[0].usage.peak_cpu_millicores, 800);
  clock_.Advance(1000);
  backend_->PollOnce();
  EXPECT_EQ(usages.size(), 1u) << "the same sample is reported once";
  ASSERT_TRUE(WriteFileAtomic(slurm::UsageFile(spec),
                              "wall_ms=4000\ncpu_ms=3500\npeak_memory_bytes=8192\n"
                              "peak_cpu_millicores=1000\n")
                  .ok());
  clock_.Advance(1000);
  backend_->PollOnce();
  ASSERT_EQ(usages.size(), 2u);
  EXPECT_EQ(usages[1].usage.cpu_ms, 3500);
  EXPECT_TRUE(exits_.empty());
}

// A step killed at its --time before its script wrote the exit record: its last sample is
// its usage (and the peak rate the sampler saw).
TEST_F(SlurmBackendTest, TimedOutStepsUsageIsItsLastSample) {
  fake_->Answer("sbatch", "7\n");
  auto spec = Spec();
  ASSERT_TRUE(backend_->Launch(spec).ok());
  ASSERT_TRUE(WriteFileAtomic(slurm::UsageFile(spec),
                              "wall_ms=58000\ncpu_ms=57000\nmemory_bytes=1000\n"
                              "peak_memory_bytes=73400320\npeak_cpu_millicores=1010\n")
                  .ok());
  fake_->Answer("squeue", SqueueWith(7, "TIMEOUT", "n1", 0, "TimeLimit"));
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kTimedOut);
  EXPECT_EQ(exits_[0].usage.wall_ms, 3000) << "Slurm's start and end times (100 to 103)";
  EXPECT_EQ(exits_[0].usage.cpu_ms, 57000);
  EXPECT_EQ(exits_[0].usage.peak_memory_bytes, 73400320);
  EXPECT_GE(exits_[0].usage.peak_cpu_millicores, 1010);
}

// Anti-affinity for serving replicas: off the nodes holding siblings when another node can
// take the job now; anywhere when none can (never a reason to wait).
TEST_F(SlurmBackendTest, ReplicaIsSpreadFromItsSiblingsWhereAnotherNodeFits) {
  auto exclude_of = [](const std::vector<std::string>& args) {
    for (const auto& a : args) {
      if (a.rfind("--exclude=", 0) == 0) return a.substr(10);
    }
    return std::string();
  };
  fake_->Answer("sbatch", "8\n");
  fake_->Answer("sbatch", "9\n");
  fake_->Answer("sbatch", "10\n");
  auto spread = Spec("serve");
  spread.spread_from = {"n1"};
  ASSERT_TRUE(backend_->Launch(spread).ok());
  // Only n1 has tensor_core: the replica goes there anyway.
  auto only_n1 = Spec("serve2");
  only_n1.spread_from = {"n1"};
  only_n1.capabilities = {"tensor_core"};
  ASSERT_TRUE(backend_->Launch(only_n1).ok());
  // 3 CPUs fit n3 alone (4 CPUs): off n3 nothing fits, so no exclusion.
  auto big = Spec("serve3");
  big.spread_from = {"n3"};
  big.cpu_millis = 3000;
  ASSERT_TRUE(backend_->Launch(big).ok());
  auto sb = fake_->Calls("sbatch");
  ASSERT_EQ(sb.size(), 3u);
  EXPECT_EQ(exclude_of(sb[0]), "n1");
  EXPECT_EQ(exclude_of(sb[1]), "");
  EXPECT_EQ(exclude_of(sb[2]), "");
  EXPECT_EQ(exclude_of(slurm::SbatchArgs(Spec(), "", "/dev/null")), "") << "batch steps: none";
}

TEST(SlurmUsageSample, ParsesTheSamplersRecord) {
  auto s = slurm::ParseUsageSample(
      "wall_ms=10\ncpu_ms=5\nmemory_bytes=7\npeak_memory_bytes=9\npeak_cpu_millicores=3\n"
      "cpu_from=cgroup-v2\nmemory_from=proc\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->usage.wall_ms, 10);
  EXPECT_EQ(s->usage.cpu_ms, 5);
  EXPECT_EQ(s->memory_bytes, 7);
  EXPECT_EQ(s->usage.peak_memory_bytes, 9);
  EXPECT_EQ(s->usage.peak_cpu_millicores, 3);
  EXPECT_EQ(s->cpu_from, "cgroup-v2");
  EXPECT_EQ(s->memory_from, "proc");
  EXPECT_FALSE(slurm::ParseUsageSample(""));
  EXPECT_FALSE(slurm::ParseUsageSample("wall_ms=10\n"));
  EXPECT_FALSE(slurm::ParseUsageSample("wall_ms=1x\ncpu_ms=2\n"));
  EXPECT_FALSE(slurm::ParseUsageSample("wall_ms=10\ncpu_ms=-2\n"));
}

// A slurmd killed between slurmctld's allocation and the batch script's start: the launch
// fails and Slurm requeues the job (even with --no-requeue). Nothing ended: the attempt says
// so and follows the job to the node where it runs next.
TEST_F(SlurmBackendTest, JobRequeuedAfterAFailedLaunchRunsOnElsewhere) {
  fake_->Answer("sbatch", "6\n");
  ASSERT_TRUE(backend_->Launch(Spec()).ok());
  fake_->Replace("squeue", SqueueWith(6, "RUNNING", "n1"));
  backend_->PollOnce();
  fake_->Replace("squeue", SqueueWith(6, "PENDING", "n1", 0, "BeginTime"));
  backend_->PollOnce();
  fake_->Replace("squeue", SqueueWith(6, "RUNNING", "n2"));
  backend_->PollOnce();
  EXPECT_TRUE(exits_.empty());
  std::vector<std::string> said;
  for (const auto& e : events_) {
    if (e.reason == spec::EventReason::kRunning) said.push_back("Running " + e.node);
    if (e.reason == spec::EventReason::kPending) said.push_back(e.message);
  }
  std::vector<std::string> want = {
      "Running n1", "Slurm job 6 requeued by Slurm: its launch on n1 failed; it waits to run again",
      "Slurm job 6 pending: BeginTime", "Running n2"};
  EXPECT_EQ(said, want);
}

// After a controller restart the stored LaunchSpec has "***" for secrets: the masker gets the
// values from the attempt's environment file, so the log keeps coming, masked.
TEST_F(SlurmBackendTest, AdoptRestoresSecretsForTheMasker) {
  fake_->Answer("sbatch", "4\n");
  auto spec = Spec();
  ASSERT_TRUE(backend_->Launch(spec).ok());
  auto stored = spec;
  stored.secret_values.clear();
  stored.env["TOKEN"] = "***";
  auto runner = std::make_unique<FakeRunner>();
  FakeRunner* fake2 = runner.get();
  fake2->Answer("sinfo", Recorded("sinfo_idle.json"));
  fake2->Answer("squeue", SqueueWith(4, "RUNNING", "n1"));
  SlurmBackendOptions o;
  o.backend.state_dir = dir_;
  o.start_monitor = false;
  SlurmBackend again(o, std::move(runner));
  again.Adopt(stored);
  ASSERT_TRUE(
      WriteFileAtomic(dir_ + "/slurm/run-1_train_1/output.raw", "before hunter2\nafter hunter2\n")
          .ok());
  again.PollOnce();
  EXPECT_EQ(*ReadFile(spec.log_path), "before ***\nafter ***\n");
}

TEST_F(SlurmBackendTest, VanishedJobIsAskedOfSacct) {
  fake_->Answer("sbatch", "2\n");
  ASSERT_TRUE(backend_->Launch(Spec()).ok());
  fake_->Answer("squeue", R"({"jobs": []})");
  fake_->Answer("sacct", Recorded("sacct.txt"));  // job 2: FAILED 3:0
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].kind, ExitKind::kFailed);
  EXPECT_EQ(exits_[0].exit_code, 3);
  auto calls = fake_->Calls("sacct");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0][5], "2");
}

TEST_F(SlurmBackendTest, SlurmctldDownDecidesNothing) {
  fake_->Answer("sbatch", "2\n");
  ASSERT_TRUE(backend_->Launch(Spec()).ok());
  fake_->Answer("squeue", "", 1, "slurm_load_jobs error: Unable to contact slurm controller");
  backend_->PollOnce();
  backend_->PollOnce();
  EXPECT_TRUE(exits_.empty());
  EXPECT_EQ(backend_->JobIdOf("run-1/train/1"), 2);
}

TEST_F(SlurmBackendTest, AdoptFindsTheJobAgain) {
  fake_->Answer("sbatch", "11\n");
  auto spec = Spec();
  ASSERT_TRUE(backend_->Launch(spec).ok());
  // A new backend (controller restarted) adopts the attempt through its job id file.
  auto runner = std::make_unique<FakeRunner>();
  FakeRunner* fake2 = runner.get();
  fake2->Answer("sinfo", Recorded("sinfo_idle.json"));
  fake2->Answer("squeue", Recorded("squeue_final.json"));  // 11: TIMEOUT
  SlurmBackendOptions o;
  o.backend.state_dir = dir_;
  o.start_monitor = false;
  SlurmBackend again(o, std::move(runner));
  std::vector<AttemptExit> exits;
  again.on_exit = [&](const AttemptExit& e) { exits.push_back(e); };
  again.Adopt(spec);
  EXPECT_EQ(again.JobIdOf(spec.attempt_id), 11);
  again.PollOnce();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].kind, ExitKind::kTimedOut);
}

TEST_F(SlurmBackendTest, AdoptWithoutJobUsesTheExitRecordOrNodeLost) {
  auto spec = Spec();
  ASSERT_TRUE(MakeDirs(dir_ + "/exit").ok());
  ASSERT_TRUE(
      WriteFileAtomic(spec.exit_file, "exit_code=7\nsignal=0\noom=0\nstop=\nwall_ms=5\n").ok());
  backend_->Adopt(spec);
  auto other = Spec("other");
  backend_->Adopt(other);
  fake_->Answer("squeue", R"({"jobs": []})");
  backend_->PollOnce();
  ASSERT_EQ(exits_.size(), 2u);
  std::map<std::string, AttemptExit> by;
  for (auto& e : exits_) by[e.attempt_id] = e;
  EXPECT_EQ(by["run-1/train/1"].kind, ExitKind::kFailed);
  EXPECT_EQ(by["run-1/train/1"].exit_code, 7);
  EXPECT_EQ(by["run-1/other/1"].kind, ExitKind::kNodeLost);
  EXPECT_EQ(by["run-1/other/1"].message, "no Slurm job was recorded for this attempt");
}

// Slurm Features extend the capability catalog for spec validation (cpu_only is not in it).
TEST_F(SlurmBackendTest, FeaturesAreDeclaredCapabilities) {
  EXPECT_TRUE(backend_->DeclaredCapabilities().empty());  // nothing read yet
  ASSERT_TRUE(backend_->ListNodes().ok());
  EXPECT_EQ(backend_->DeclaredCapabilities(),
            (std::vector<std::string>{"cpu_only", "fp16_support", "tensor_core"}));
}

TEST_F(SlurmBackendTest, EmptyCommandIsRefused) {
  auto spec = Spec();
  spec.argv.clear();
  EXPECT_EQ(backend_->Launch(spec).code(), "INVALID_ARGUMENT");
}

}  // namespace
}  // namespace rsl::backend

namespace rsl::backend {
namespace {

// The real runner over a scripted Env: the commands' environment and time limit, and what a
// timeout or a missing client becomes.
TEST(ProcessRunnerTest, RunsCommandsThroughTheEnv) {
  FakeEnv env;
  env.SetProcessScript([](const ProcessSpec& spec) -> Result<ProcessResult> {
    if (spec.argv[0] == "missing") return OsError(codes::kIoError, "cannot run", "missing", ENOENT);
    ProcessResult r;
    r.exit_code = spec.argv[0] == "sinfo" ? 0 : -1;
    r.signal = spec.argv[0] == "sinfo" ? 0 : SIGKILL;
    r.timed_out = spec.argv[0] != "sinfo";
    r.out = "{}";
    return r;
  });
  auto runner = NewProcessRunner({{"SLURM_CONF", "/etc/test.conf"}}, 30000, &env);
  auto ok = runner->Run({"sinfo", "--json"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->exit_code, 0);
  EXPECT_EQ(ok->out, "{}");
  ProcessSpec asked = env.processes_run().at(0);
  EXPECT_EQ(asked.argv, (std::vector<std::string>{"sinfo", "--json"}));
  EXPECT_EQ(asked.env->at("SLURM_CONF"), "/etc/test.conf");
  EXPECT_EQ(asked.timeout_ms, 30000);
  auto hung = runner->Run({"squeue"});
  ASSERT_TRUE(hung.ok());
  EXPECT_EQ(hung->exit_code, -1);
  EXPECT_EQ(hung->err, "\nsqueue: killed after 30000 ms");
  auto missing = runner->Run({"missing"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().hint, "is Slurm's client (slurm-client) installed and on PATH?");
}

}  // namespace
}  // namespace rsl::backend
