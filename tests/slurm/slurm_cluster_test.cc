// The Slurm backend against a real Slurm 22.05 cluster (three slurmd on this host, started by
// the CTest fixture `slurm_cluster` through scripts/slurm-cluster.sh; SLURM_CONF and
// RSL_SLURM_DIR come from the test's environment).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "backend/slurm.h"
#include "backend/slurm_parse.h"
#include "backend/slurm_runner.h"
#include "base/file.h"
#include "base/strings.h"
#include "cluster_util.h"
#include "recorder.h"

namespace rsl::backend {
namespace {

using namespace rsl::slurm_test;  // NOLINT

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Collects what the backend reports, and lets the test wait for it.

class SlurmClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UseFixtureCluster();
    ASSERT_TRUE(PathExists(EnvVar("SLURM_CONF"))) << "run through ctest (fixture slurm_cluster)";
    EnsureAllNodesIdle();
    dir_ = ::testing::TempDir() + "slurm_cluster_test/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(MakeDirs(dir_).ok());
    BackendOptions o;
    o.state_dir = dir_ + "/state";
    o.slurm_conf = EnvVar("SLURM_CONF");
    // The backend's mechanics, with steps writing into the test's directories as our user;
    // isolation on Slurm is tested in slurm_seedctl_test.
    o.isolation = "none";
    auto b = NewSlurmBackend(o);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    backend_ = std::move(*b);
    rec_.Attach(backend_.get());
  }

  void TearDown() override {
    backend_.reset();
    // Nothing of this test may stay in Slurm.
    Sh("squeue -h -o %A | xargs -r scancel");
  }

  LaunchSpec Spec(const std::string& step, std::vector<std::string> argv, int attempt = 1) {
    LaunchSpec s;
    s.run_id =
        "run-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    s.step = step;
    s.attempt = attempt;
    s.attempt_id = s.run_id + "/" + step + "/" + std::to_string(attempt);
    s.workload_name = "wl";
    s.namespace_ = "risk";
    s.labels = {{"team", "risk"}};
    s.argv = std::move(argv);
    std::string adir = dir_ + "/runs/" + step + "/" + std::to_string(attempt);
    (void)MakeDirs(adir + "/out");
    s.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
             {"RSL_OUTPUT", adir + "/out"},
             {"RSL_METRICS_FILE", adir + "/metrics.json"},
             {"RSL_STEP", step}};
    s.workdir = dir_;
    s.log_path = adir + "/log";
    s.exit_file = adir + "/exit";
    s.cpu_millis = 1000;
    s.memory_bytes = 100LL << 20;
    return s;
  }

  std::string dir_;
  std::unique_ptr<Backend> backend_;
  Recorder rec_;
};

TEST_F(SlurmClusterTest, ListNodesShowsTheCluster) {
  auto nodes = backend_->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  std::map<std::string, sched::Node> by;
  for (auto& n : *nodes) by[n.name] = n;
  EXPECT_EQ(by["n1"].gpus.size(), 4u);
  EXPECT_EQ(by["n2"].gpus.size(), 2u);
  EXPECT_EQ(by["n3"].gpus.size(), 0u);
  EXPECT_EQ(by["n3"].cpu_millis, 4000);
  EXPECT_EQ(by["n1"].capabilities, (std::vector<std::string>{"tensor_core", "fp16_support"}));
  EXPECT_EQ(by["n1"].state, spec::NodeState::kReady);
}

// The fraud example's structure (ingest -> preprocess -> train -> validate, train on a GPU
// with tensor_core+fp16_support, validate only when train's metric allows) with true/python.
TEST_F(SlurmClusterTest, FraudStructureRunsToSucceeded) {
  auto ingest = Spec("ingest", {"sh", "-c", "echo rows=100 > \"$RSL_OUTPUT/rows\"; echo ingested"});
  auto pre = Spec("preprocess", {"true"});
  auto train =
      Spec("train", {"python3", "-c",
                     "import json, os\n"
                     "print('gpus', os.environ.get('CUDA_VISIBLE_DEVICES', '-'))\n"
                     "json.dump({'auc': 0.95}, open(os.environ['RSL_METRICS_FILE'], 'w'))\n"});
  train.gpus = 1;
  train.capabilities = {"tensor_core", "fp16_support"};
  train.env["SECRET_TOKEN"] = "hunter2";
  train.secret_values = {"hunter2"};
  train.argv.back() += "print('token', os.environ['SECRET_TOKEN'])\n";
  auto validate = Spec("validate", {"python3", "-c", "import sys; sys.exit(0)"});

  for (auto* s : {&ingest, &pre, &train}) {
    ASSERT_TRUE(backend_->Launch(*s).ok());
    auto e = rec_.WaitExit(s->attempt_id, 60);
    ASSERT_TRUE(e.has_value()) << s->step << " did not end within 60 s\n" << ClusterDiagnostics();
    EXPECT_EQ(e->kind, ExitKind::kSucceeded) << s->step << ": " << e->message << "\n"
                                             << ReadFile(s->log_path).value();
  }
  // `when: output.train.metrics.auc > 0.92`
  auto metrics = ReadFile(dir_ + "/runs/train/1/metrics.json");
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(*metrics, "{\"auc\": 0.95}");
  ASSERT_TRUE(backend_->Launch(validate).ok());
  auto e = rec_.WaitExit(validate.attempt_id, 60);
  ASSERT_TRUE(e.has_value()) << ClusterDiagnostics();
  EXPECT_EQ(e->kind, ExitKind::kSucceeded);

  EXPECT_EQ(*ReadFile(dir_ + "/runs/ingest/1/out/rows"), "rows=100\n");
  EXPECT_EQ(*ReadFile(ingest.log_path), "ingested\n");
  auto train_exit = rec_.WaitExit(train.attempt_id, 0);
  EXPECT_EQ(train_exit->node, "n1");  // the only node with tensor_core
  std::string log = *ReadFile(train.log_path);
  EXPECT_NE(log.find("gpus 0"), std::string::npos) << log;  // Slurm's gres/gpu sets it
  EXPECT_NE(log.find("token ***"), std::string::npos) << log;
  EXPECT_EQ(log.find("hunter2"), std::string::npos) << log;
  // The exit record, in the local backend's format.
  auto rec = ReadFile(train.exit_file);
  ASSERT_TRUE(rec.ok());
  EXPECT_TRUE(StartsWith(*rec, "exit_code=0\nsignal=0\n")) << *rec;
}

TEST_F(SlurmClusterTest, ExitCodeAndEnvironmentAreTheStepsOwn) {
  auto s = Spec("env", {"sh", "-c", "printf '[%s]\\n' \"$ODD\"; env | sort; exit 3"});
  s.env["ODD"] = "a b\nc'd";
  ASSERT_TRUE(backend_->Launch(s).ok());
  auto e = rec_.WaitExit(s.attempt_id, 60);
  ASSERT_TRUE(e.has_value()) << ClusterDiagnostics();
  EXPECT_EQ(e->kind, ExitKind::kFailed);
  EXPECT_EQ(e->exit_code, 3);
  std::string log = *ReadFile(s.log_path);
  EXPECT_TRUE(StartsWith(log, "[a b\nc'd]\n")) << log;
  EXPECT_EQ(log.find("SLURM_CONF"), std::string::npos) << "the controller's environment leaked";
  EXPECT_NE(log.find("RSL_STEP=env\n"), std::string::npos);
}

TEST_F(SlurmClusterTest, CapabilityOnlySomeNodesHaveLandsThere) {
  std::vector<LaunchSpec> specs;
  for (int i = 0; i < 3; ++i) {
    auto s = Spec("tc" + std::to_string(i), {"sleep", "1"});
    s.capabilities = {"tensor_core"};
    s.gpus = 1;
    specs.push_back(s);
    auto f = Spec("fp" + std::to_string(i), {"sleep", "1"});
    f.capabilities = {"fp16_support"};
    specs.push_back(f);
    auto c = Spec("cpu" + std::to_string(i), {"sleep", "1"});
    c.capabilities = {"cpu_only"};
    specs.push_back(c);
  }
  for (auto& s : specs) ASSERT_TRUE(backend_->Launch(s).ok());
  for (auto& s : specs) {
    auto e = rec_.WaitExit(s.attempt_id, 90);
    ASSERT_TRUE(e.has_value()) << s.step << " did not end in time\n" << ClusterDiagnostics();
    EXPECT_EQ(e->kind, ExitKind::kSucceeded);
    if (s.capabilities[0] == "tensor_core") {
      EXPECT_EQ(e->node, "n1") << s.step;
    } else if (s.capabilities[0] == "fp16_support") {
      EXPECT_TRUE(e->node == "n1" || e->node == "n2") << s.step << " on " << e->node;
    } else {
      EXPECT_EQ(e->node, "n3") << s.step;
    }
  }
}

TEST_F(SlurmClusterTest, ImpossibleRequestIsRefusedNotLeftPending) {
  auto s = Spec("lowlat", {"true"});
  s.capabilities = {"low_latency"};
  auto st = backend_->Launch(s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), "INSUFFICIENT_RESOURCES");
  EXPECT_NE(st.error().message.find("no Slurm node has capability 'low_latency'"),
            std::string::npos);
  auto big = Spec("big", {"true"});
  big.cpu_millis = 16000;
  st = backend_->Launch(big);
  EXPECT_EQ(st.code(), "INSUFFICIENT_RESOURCES");
  EXPECT_EQ(Sh("squeue -h -t all -o %j | grep -c -E '^rsl-wl-(lowlat|big)$' || true"), "0\n");
}

// The engine stops a step past its timeout (Stop with timed_out): Slurm cancels the job and
// the attempt ends TIMED_OUT. (Slurm's own --time kill is the next test.)
TEST_F(SlurmClusterTest, StepPastItsTimeLimitIsTimedOut) {
  auto s = Spec("slow", {"sleep", "300"});
  s.timeout_ms = 2000;
  ASSERT_TRUE(backend_->Launch(s).ok());
  ASSERT_TRUE(rec_.WaitStarted(s.attempt_id, 30).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(*s.timeout_ms));
  auto t0 = Clock::now();
  backend_->Stop(s.attempt_id, 1000, /*timed_out=*/true);
  auto e = rec_.WaitExit(s.attempt_id, 30);
  ASSERT_TRUE(e.has_value()) << ClusterDiagnostics();
  EXPECT_EQ(e->kind, ExitKind::kTimedOut);
  EXPECT_LT(Seconds(t0, rec_.ExitAt(s.attempt_id)), 10.0);
  EXPECT_EQ(JobsLeft(), "");
}

// Nobody stops it here: Slurm's own time limit (--time, whole minutes: 1) kills the job,
// which Slurm reports TIMEOUT, and the attempt ends timed out. slurmctld checks limits every
// 30 s or so, then gives KillWait (5 s): 60 to ~100 s.
TEST_F(SlurmClusterTest, StepPastItsSlurmTimeLimitIsTimedOutBySlurm) {
  auto s = Spec("overtime", {"sleep", "300.5"});
  s.timeout_ms = 1000;
  ASSERT_TRUE(backend_->Launch(s).ok());
  ASSERT_TRUE(rec_.WaitStarted(s.attempt_id, 30).has_value());
  auto started = rec_.StartedAt(s.attempt_id);
  auto e = rec_.WaitExit(s.attempt_id, 150);
  ASSERT_TRUE(e.has_value()) << "Slurm did not end the job within 150 s of its 1 minute limit\n"
                             << ClusterDiagnostics();
  double after_s = Seconds(started, rec_.ExitAt(s.attempt_id));
  std::printf("Slurm --time=1: job ended %.1f s after it started running\n", after_s);
  EXPECT_EQ(e->kind, ExitKind::kTimedOut) << e->message;
  EXPECT_NE(e->message.find("reached its Slurm time limit"), std::string::npos) << e->message;
  EXPECT_GE(after_s, 55.0);
  EXPECT_EQ(JobsLeft(), "");
}

TEST_F(SlurmClusterTest, CancellingLeavesNoSlurmJobBehind) {
  std::vector<LaunchSpec> specs;
  // A duration no other test uses: the process check below looks at the whole machine, where
  // other tests (run in parallel by ctest -j) sleep 300 too.
  for (int i = 0; i < 4; ++i) specs.push_back(Spec("c" + std::to_string(i), {"sleep", "300.25"}));
  specs[3].cpu_millis = 4000;  // pending behind the others on a busy node... or running
  for (auto& s : specs) ASSERT_TRUE(backend_->Launch(s).ok());
  ASSERT_TRUE(rec_.WaitStarted(specs[0].attempt_id, 30).has_value());
  for (auto& s : specs) backend_->Stop(s.attempt_id, 1000, false);
  for (auto& s : specs) {
    auto e = rec_.WaitExit(s.attempt_id, 30);
    ASSERT_TRUE(e.has_value()) << s.step << " did not end in time\n" << ClusterDiagnostics();
    EXPECT_EQ(e->kind, ExitKind::kCancelled) << s.step;
  }
  EXPECT_EQ(JobsLeft("PD,R,CG,S"), "");
  EXPECT_EQ(Sh("pgrep -f '^sleep 300.25$' || true"), "");
}

// Kill the slurmd running a step: the attempt is reported kNodeLost as soon as Slurm marks
// the node down (no waiting for Slurm's requeue), a replacement attempt runs elsewhere, and
// the orphan (still running on the "lost" node) finishes after the replacement started
// without writing its exit record or being reported.
TEST_F(SlurmClusterTest, KilledSlurmdLosesTheNodeAndTheStepRunsElsewhere) {
  // The orphan sleeps past node-down (~30 s) and the replacement's start, then writes.
  auto first =
      Spec("train", {"sh", "-c", "echo started; sleep 40; echo orphan > \"$RSL_OUTPUT/result\""});
  ASSERT_TRUE(backend_->Launch(first).ok());
  auto started = rec_.WaitStarted(first.attempt_id, 30);
  ASSERT_TRUE(started.has_value());
  // RUNNING in Slurm comes a moment before slurmd has started the script: wait for the step.
  auto until = Clock::now() + std::chrono::seconds(20);
  while (Slurp(first.log_path) != "started\n" && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(Slurp(first.log_path), "started\n");
  std::string node = started->node;
  int pid = SlurmdPid(node);
  ASSERT_GT(pid, 0);

  // Watch Slurm's own view of the node, independently of the backend.
  Clock::time_point down_at{};
  std::thread watcher([&] {
    auto until = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < until) {
      std::string st = Sh("sinfo -h -n " + node + " -o %T");
      if (StartsWith(st, "down")) {
        down_at = Clock::now();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto killed_at = Clock::now();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);

  auto lost = rec_.WaitExit(first.attempt_id, 60);
  watcher.join();
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(lost->kind, ExitKind::kNodeLost) << lost->message;
  EXPECT_EQ(lost->node, node);
  auto lost_at = rec_.ExitAt(first.attempt_id);

  // What the engine does on kNodeLost: launch again (no retry spent) on another node.
  auto second =
      Spec("train", {"sh", "-c", "sleep 3; echo replacement > \"$RSL_OUTPUT/result\""}, 2);
  ASSERT_TRUE(backend_->Launch(second).ok());
  auto resubmitted_at = Clock::now();
  auto started2 = rec_.WaitStarted(second.attempt_id, 30);
  ASSERT_TRUE(started2.has_value());
  EXPECT_NE(started2->node, node);
  auto running_again_at = rec_.StartedAt(second.attempt_id);
  auto e2 = rec_.WaitExit(second.attempt_id, 60);
  ASSERT_TRUE(e2.has_value());
  EXPECT_EQ(e2->kind, ExitKind::kSucceeded);

  ASSERT_NE(down_at, Clock::time_point{}) << "Slurm never marked " << node << " down";
  double down_s = Seconds(killed_at, down_at);
  double detect_s = Seconds(down_at, lost_at);
  double resubmit_s = Seconds(down_at, resubmitted_at);
  double total_s = Seconds(killed_at, running_again_at);
  std::printf(
      "node-loss: slurmd killed -> Slurm marks %s down %.1f s; down -> kNodeLost %.2f s; "
      "down -> resubmitted %.2f s; killed -> running again on %s %.1f s\n",
      node.c_str(), down_s, detect_s, resubmit_s, started2->node.c_str(), total_s);
  RecordProperty("node_down_s", std::to_string(down_s));
  RecordProperty("resubmit_after_down_s", std::to_string(resubmit_s));
  RecordProperty("killed_to_running_s", std::to_string(total_s));
  EXPECT_LT(resubmit_s, 5.0);
  EXPECT_LT(total_s, 40.0);

  // The orphan finishes ~40 s after it started, after the replacement: it must not write the
  // exit record (its job id file says "lost") and must not be reported again.
  std::string orphan_out = dir_ + "/runs/train/1/out/result";
  auto deadline = Clock::now() + std::chrono::seconds(40);
  while (!PathExists(orphan_out) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(PathExists(orphan_out)) << "the orphan should have lived on";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(PathExists(first.exit_file)) << *ReadFile(first.exit_file);
  EXPECT_EQ(*ReadFile(dir_ + "/runs/train/2/out/result"), "replacement\n");
  EXPECT_TRUE(StartsWith(*ReadFile(second.exit_file), "exit_code=0\n"));
  EXPECT_EQ(rec_.ExitCount(first.attempt_id), 1u);
  EXPECT_EQ(rec_.ExitCount(second.attempt_id), 1u);
}

}  // namespace
}  // namespace rsl::backend
