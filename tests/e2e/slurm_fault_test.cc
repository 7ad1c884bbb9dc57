// The seed's first fault (seed 000 §4.4): node loss during train, on the Slurm backend.
// Label `fault-slurm` (selected by both `ctest -L fault` and `ctest -L slurm`); it runs
// against the Slurm cluster of tests/slurm (three slurmd on this host, CTest fixture
// `slurm_cluster`, scripts/slurm-cluster.sh).
//
// rsl-controller --backend slurm runs a small variant of the fraud workload (train asks for
// a GPU with fp16_support, which n1 and n2 both have, and trains slowly enough to be killed
// mid-way). The test kill -9s the slurmd of the node running train and asserts: the step is
// rescheduled on another node (event Rescheduled) without spending a retry (no Retrying
// event), the run SUCCEEDS, and the published model is the replacement's. It measures
// (seed: 48 s; targets < 40 s with SlurmdTimeout=10, resubmitted < 5 s after Slurm marks the
// node down):
//   killed -> Slurm marks the node down -> train running again elsewhere.
//
// The slurmd is killed once train really runs (its progress file exists), not when squeue
// first says RUNNING: that is slurmctld's allocation, and slurmd starts the batch script up
// to ~2 s later here. A slurmd killed in between never gets the launch; Slurm then requeues
// the job itself (even with --no-requeue: "requeue JobId=N per user/system request") and runs
// it on the other node: no step was lost, no Rescheduled event, and the test failed on it
// (once in a run of the `slurm` label, on a loaded machine). Commands are polled every
// 100 ms, not back to back, so the test does not load the machine it times.
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "e2e_util.h"

namespace rsl::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kKilledToRunningTargetS = 40.0;
constexpr double kDownToResubmittedTargetS = 5.0;
constexpr double kControllerReadyS = 30.0;
constexpr double kPollS = 0.1;  // commands polled this often (sinfo, squeue, seedctl)
constexpr char kTrainJob[] = "rsl-fraud-detect-daily-train";

std::string Sh(const std::string& cmd) {
  CmdResult r =
      RunCmd({"/bin/sh", "-c", cmd}, {{"SLURM_CONF", RSL_SLURM_TEST_DIR "/etc/slurm.conf"}});
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

class SlurmNodeLoss : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = {{"SLURM_CONF", RSL_SLURM_TEST_DIR "/etc/slurm.conf"},
            {"RSL_SLURM_DIR", RSL_SLURM_TEST_DIR},
            {"RSL_SLURM_CTLD_PORT", RSL_SLURM_TEST_CTLD_PORT},
            {"RSL_SLURM_SLURMD_PORT_BASE", RSL_SLURM_TEST_SLURMD_PORT_BASE}};
    EnsureNodesIdle();
    state_ = dir_.Sub("state");
    hdfs_ = dir_.Sub("hdfs-ns1");
    ceph_ = dir_.Sub("ceph-models");
    fs::create_directories(hdfs_);
    fs::create_directories(ceph_);
    port_ = FreePort();
    std::map<std::string, std::string> cenv = env_;
    controller_ = std::make_unique<Process>(
        std::vector<std::string>{ControllerPath(), "--listen", "127.0.0.1:" + std::to_string(port_),
                                 "--state-dir", state_, "--backend", "slurm"},
        cenv, dir_.Sub("controller.log"));
    CmdResult token = Seedctl(
        {"token", "create", "--state-dir", state_, "--namespace", "default", "--role", "admin"});
    env_["SEEDCTL_TOKEN"] = token.LastLine();
    env_["SEEDCTL_SERVER"] = "http://127.0.0.1:" + std::to_string(port_);
    ASSERT_TRUE(WaitUntil(
        [&] {
          return RunCmd({SeedctlPath(), "cluster", "status"}, env_).exit_code == 0;
        },
        kControllerReadyS, kPollS))
        << ReadText(dir_.Sub("controller.log"));
    for (const char* image : {"volc/ingest:v1.0", "volc/preprocess-fraud:v1.1",
                              "volc/train-fraud-pytorch:v2.1", "volc/validate-fraud:v1.0"}) {
      Seedctl({"env", "register", image, "--state-dir", state_, "--python",
               ExampleDir() + "/image/python3"});
    }
  }

  void TearDown() override {
    controller_.reset();
    Sh("squeue -h -o %A | xargs -r scancel");
    EnsureNodesIdle();
  }

  // A slurmd killed by this test comes back for the next one.
  void EnsureNodesIdle() {
    for (const char* n : {"n1", "n2", "n3"}) {
      std::string pid = Sh(std::string("cat " RSL_SLURM_TEST_DIR "/run/slurmd-") + n + ".pid");
      if (pid.empty() || ::kill(std::atoi(pid.c_str()), 0) != 0) {
        RunCmd({"/bin/bash", SourceDir() + "/scripts/slurm-cluster.sh", "start-node", n}, env_);
      }
    }
    WaitUntil(
        [] {
          std::string s = Sh("sinfo -h -N -o '%N %T'");
          return s.find("n1 idle\n") != std::string::npos &&
                 s.find("n2 idle\n") != std::string::npos;
        },
        60, kPollS);
  }

  // train.py writes its progress file (<runs>/<run>/work/train.1/.rsl-progress) as it starts.
  bool TrainProgressWritten() {
    std::error_code ec;
    for (const auto& run : fs::directory_iterator(state_ + "-runs", ec)) {
      if (fs::exists(run.path() / "work" / "train.1" / ".rsl-progress", ec)) return true;
    }
    return false;
  }

  CmdResult Seedctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {SeedctlPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    CmdResult r = RunCmd(argv, env_);
    EXPECT_EQ(r.exit_code, 0) << "seedctl " << args[0] << ":\n" << r.output;
    return r;
  }

  TempDir dir_;
  std::map<std::string, std::string> env_;
  std::string state_, hdfs_, ceph_;
  int port_ = 0;
  std::unique_ptr<Process> controller_;
};

TEST_F(SlurmNodeLoss, TrainIsRescheduledOnAnotherNodeWithoutSpendingARetry) {
  CmdResult gen = RunCmd({kPython, ExampleDir() + "/gen_transactions.py", "--out", hdfs_, "--rows",
                          "50000", "--files", "2"});
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  // train must outlive Slurm's detection of the lost node (~26 s with SlurmdTimeout=10): a
  // job whose slurmstepd finishes first is reported COMPLETED by slurmstepd itself, and the
  // node loss would never matter. 8 epochs with 6 s pauses: about 50 s.
  std::string yaml = ReadText(ExampleDir() + "/fraud-detect-workload.yaml");
  // file:// URIs: the fault under test does not depend on the datasource mapping.
  yaml = ReplaceOnce(yaml, "hdfs://ns1/", "file://" + hdfs_ + "/");
  yaml = ReplaceOnce(yaml, "ceph://models/", "file://" + ceph_ + "/");
  yaml = ReplaceOnce(yaml, "capability: [\"tensor_core\", \"fp16_support\"]",
                     "capability: [\"fp16_support\"]");
  yaml = ReplaceOnce(yaml, "command: [\"python\", \"train.py\"]",
                     "command: [\"python\", \"train.py\", \"--epoch-delay-ms\", \"6000\"]");
  // Slurm nodes here have 2-4 CPUs and 4-8 GB.
  yaml = ReplaceOnce(yaml, "    memory: \"8Gi\"\n", "    memory: \"1Gi\"\n");
  yaml = ReplaceOnce(yaml, "          memory: \"8Gi\"\n", "          memory: \"1Gi\"\n");
  std::string no_pin;
  for (size_t at = 0, next; at < yaml.size(); at = next + 1) {
    next = yaml.find('\n', at);
    if (next == std::string::npos) next = yaml.size();
    std::string line = yaml.substr(at, next - at);
    if (line.find("buildFingerprint:") == std::string::npos) no_pin += line + "\n";
  }
  WriteText(dir_.Sub("variant.yaml"), no_pin);
  CmdResult submit = Seedctl({"workload", "submit", "-f", dir_.Sub("variant.yaml")});
  size_t at = submit.output.find("ID: ");
  ASSERT_NE(at, std::string::npos) << submit.output;
  std::string id = submit.output.substr(at + 4, submit.output.find('\n', at) - at - 4);

  std::string node, phase;
  ASSERT_TRUE(WaitUntil(
      [&] {
        node = Sh(std::string("squeue -h -t R -n ") + kTrainJob + " -o %N");
        if (!node.empty()) return true;
        CmdResult s = RunCmd({SeedctlPath(), "workload", "status", "--id", id, "-o", "json"}, env_);
        if (s.exit_code == 0) phase = json::parse(s.output)["status"].value("phase", "");
        return phase != "" && phase != "PENDING" && phase != "RUNNING";
      },
      120, kPollS))
      << Seedctl({"workload", "events", "--id", id}).output;
  ASSERT_FALSE(node.empty()) << "the run ended " << phase << " before train ran\n"
                             << Seedctl({"workload", "events", "--id", id}).output;
  // The step itself runs (train.py wrote its first progress), well inside the first epochs.
  ASSERT_TRUE(WaitUntil([&] { return TrainProgressWritten(); }, 60, kPollS))
      << "Slurm says train runs on " << node << " but train.py never started\n"
      << Seedctl({"workload", "events", "--id", id}).output;
  std::string pid = Sh(std::string("cat " RSL_SLURM_TEST_DIR "/run/slurmd-") + node + ".pid");
  ASSERT_FALSE(pid.empty());
  auto killed_at = Clock::now();
  ASSERT_EQ(::kill(std::atoi(pid.c_str()), SIGKILL), 0);

  double down_s = -1, running_again_s = -1;
  std::string new_node;
  ASSERT_TRUE(WaitUntil(
      [&] {
        if (down_s < 0 && Sh("sinfo -h -n " + node + " -o %T").rfind("down", 0) == 0) {
          down_s = SecondsSince(killed_at);
        }
        std::string running = Sh(std::string("squeue -h -t R -n ") + kTrainJob + " -o %N");
        if (!running.empty() && running != node) {
          new_node = running;
          running_again_s = SecondsSince(killed_at);
          return true;
        }
        return false;
      },
      90, kPollS))
      << Seedctl({"workload", "events", "--id", id}).output;

  ASSERT_TRUE(WaitUntil(
      [&] {
        CmdResult s = RunCmd({SeedctlPath(), "workload", "status", "--id", id, "-o", "json"}, env_);
        if (s.exit_code != 0) return false;
        std::string phase = json::parse(s.output)["status"].value("phase", "");
        return phase != "RUNNING" && phase != "PENDING";
      },
      180, kPollS));
  CmdResult status = Seedctl({"workload", "status", "--id", id, "-o", "json"});
  CmdResult events = Seedctl({"workload", "events", "--id", id});
  std::printf(
      "[fault] node loss during train (Slurm): slurmd of %s killed -> node down %.1f s "
      "-> train running again on %s %.1f s after the kill (target < %.0f s); "
      "down -> running again %.1f s (target: resubmitted < %.0f s after down)\n",
      node.c_str(), down_s, new_node.c_str(), running_again_s, kKilledToRunningTargetS,
      running_again_s - down_s, kDownToResubmittedTargetS);
  EXPECT_EQ(json::parse(status.output)["status"].value("phase", ""), "SUCCEEDED") << events.output;
  EXPECT_NE(events.output.find("Rescheduled"), std::string::npos) << events.output;
  EXPECT_EQ(events.output.find("Retrying"), std::string::npos)
      << "node loss must not spend a retry\n"
      << events.output;
  EXPECT_GT(down_s, 0);
  EXPECT_LT(running_again_s, kKilledToRunningTargetS);
  // The target is printed above; the bound allows a loaded CI machine.
  EXPECT_LT(running_again_s - down_s, kDownToResubmittedTargetS * 3);
  EXPECT_NE(new_node, node);
}

}  // namespace
}  // namespace rsl::e2e
