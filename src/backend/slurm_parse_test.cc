// Parsing and state mapping against outputs recorded from the real Slurm 22.05 cluster that
// scripts/slurm-cluster.sh starts (tests/slurm/testdata/README.md says how they were made).
#include "backend/slurm_parse.h"

#include <gtest/gtest.h>

#include <map>

#include "backend/slurm_test_util.h"
#include "base/file.h"

namespace rsl::backend::slurm {
namespace {

std::map<int64_t, Job> ById(const std::vector<Job>& jobs) {
  std::map<int64_t, Job> m;
  for (const auto& j : jobs) m[j.job_id] = j;
  return m;
}

TEST(SlurmParse, SinfoIdleClusterBecomesNodes) {
  std::vector<NodeState> states;
  auto nodes = ParseSinfoJson(Recorded("sinfo_idle.json"), "", &states);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  const auto& n1 = (*nodes)[0];
  EXPECT_EQ(n1.name, "n1");
  EXPECT_EQ(n1.state, spec::NodeState::kReady);
  EXPECT_EQ(n1.cpu_millis, 2000);
  EXPECT_EQ(n1.memory_bytes, 4000LL * 1024 * 1024);
  ASSERT_EQ(n1.gpus.size(), 4u);
  EXPECT_EQ(n1.gpus[0].model, "gpu");
  EXPECT_EQ(n1.gpus[0].capabilities, (std::vector<std::string>{"tensor_core", "fp16_support"}));
  EXPECT_EQ(n1.capabilities, (std::vector<std::string>{"tensor_core", "fp16_support"}));
  EXPECT_EQ(n1.used_gpus, 0);
  EXPECT_EQ((*nodes)[1].gpus.size(), 2u);
  EXPECT_EQ((*nodes)[2].name, "n3");
  EXPECT_EQ((*nodes)[2].gpus.size(), 0u);
  EXPECT_EQ((*nodes)[2].cpu_millis, 4000);
  EXPECT_EQ((*nodes)[2].capabilities, (std::vector<std::string>{"cpu_only"}));
  EXPECT_EQ((*nodes)[2].labels.at("slurm.partitions"), "debug");
  EXPECT_EQ((*nodes)[2].labels.at("slurm.address"), "127.0.0.1");  // NodeAddr
  ASSERT_EQ(states.size(), 3u);
  EXPECT_FALSE(states[0].down());
}

TEST(SlurmParse, SinfoDownNodeAndCurrentUse) {
  std::vector<NodeState> states;
  auto nodes = ParseSinfoJson(Recorded("sinfo_n2down.json"), "", &states);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[1].state, spec::NodeState::kDown);
  EXPECT_EQ((*nodes)[1].labels.at("slurm.state"), "down+not_responding");
  EXPECT_EQ((*nodes)[1].labels.at("slurm.reason"), "Not responding");
  EXPECT_TRUE(states[1].down());
  EXPECT_EQ(states[1].reason, "Not responding");
  // n1 runs a job with --gres=gpu:2 -c 1 --mem=200M.
  EXPECT_EQ((*nodes)[0].state, spec::NodeState::kReady);
  EXPECT_EQ((*nodes)[0].used_gpus, 2);
  EXPECT_EQ((*nodes)[0].used_cpu_millis, 1000);
  EXPECT_EQ((*nodes)[0].used_memory_bytes, 200LL * 1024 * 1024);
}

TEST(SlurmParse, SinfoPartitionFilter) {
  auto nodes = ParseSinfoJson(Recorded("sinfo_idle.json"), "gpu-only", nullptr);
  ASSERT_TRUE(nodes.ok());
  EXPECT_TRUE(nodes->empty());
  nodes = ParseSinfoJson(Recorded("sinfo_idle.json"), "debug", nullptr);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->size(), 3u);
}

TEST(SlurmParse, GarbageIsAnErrorNotACrash) {
  for (std::string bad : {"", "{", "[]", "{\"nodes\": 3}", "sinfo: error: Unable to contact"}) {
    auto nodes = ParseSinfoJson(bad, "", nullptr);
    ASSERT_FALSE(nodes.ok()) << bad;
    EXPECT_EQ(nodes.error().code, "INTERNAL");
    auto jobs = ParseSqueueJson(bad);
    ASSERT_FALSE(jobs.ok()) << bad;
  }
  auto jobs = ParseSqueueJson("{\"jobs\": [1, \"x\", {\"job_id\": \"no\"}]}");
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 1u);
  EXPECT_EQ(ParseSacct("1|x|COMPLETED").status().code(), "INTERNAL");
  EXPECT_FALSE(ParseSbatchOutput("sbatch: error: x").ok());
}

// Slurm 22.05 while slurmctld is down: exit 0, an "errors" array and empty lists. Such a
// reply says nothing about jobs or nodes; read as truth it ended live attempts.
TEST(SlurmParse, ReplyWithErrorsIsNoInformation) {
  std::string down = R"j({"meta": {}, "errors": [{"error": "Unable to contact slurm )j"
                     R"j(controller (connect failure)", "errno": 1007}], "jobs": [], )j"
                     R"j("nodes": []})j";
  auto jobs = ParseSqueueJson(down);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.error().message,
            "Slurm unreachable: squeue --json reported Unable to contact slurm controller "
            "(connect failure)");
  auto nodes = ParseSinfoJson(down, "", nullptr);
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.error().message.find("Slurm unreachable: sinfo"), std::string::npos);
  EXPECT_EQ(nodes.error().hint, "is slurmctld running and SLURM_CONF right? (scontrol ping)");
}

// gpu.memory can be asked for on Slurm: the cluster says it by node feature or GRES type.
TEST(SlurmParse, GpuMemoryFromFeaturesOrGresType) {
  EXPECT_EQ(GpuMemoryBytes("", {"tensor_core", "gpumem_80g"}), 80LL << 30);
  EXPECT_EQ(GpuMemoryBytes("a100_40g", {"tensor_core"}), 40LL << 30);
  EXPECT_EQ(GpuMemoryBytes("A10_24G", {}), 24LL << 30);
  EXPECT_EQ(GpuMemoryBytes("a100", {"fp16_support"}), 0);
  EXPECT_EQ(GpuMemoryBytes("", {"gpumem_xg"}), 0);
  std::string sinfo = R"({"errors": [], "nodes": [{"name": "g1", "state": "idle", "cpus": 8,
      "real_memory": 64000, "features": "tensor_core,gpumem_24g", "gres": "gpu:2",
      "partitions": ["debug"]}]})";
  auto nodes = ParseSinfoJson(sinfo, "", nullptr);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ((*nodes)[0].gpus.size(), 2u);
  EXPECT_EQ((*nodes)[0].gpus[0].memory_bytes, 24LL << 30);
}

TEST(SlurmParse, GpuCountFormats) {
  std::string model;
  EXPECT_EQ(GpuCount("gpu:4"), 4);
  EXPECT_EQ(GpuCount("gpu:a100:2(S:0-1),shard:8", &model), 2);
  EXPECT_EQ(model, "a100");
  EXPECT_EQ(GpuCount("gpu:2(IDX:0,2),gpu:h200:1(IDX:3)"), 3);
  EXPECT_EQ(GpuCount("(null)"), 0);
  EXPECT_EQ(GpuCount(""), 0);
  EXPECT_EQ(GpuCount("gpu:x"), 0);
}

TEST(SlurmParse, SqueueStatesMapOntoExitKinds) {
  auto jobs = ParseSqueueJson(Recorded("squeue_final.json"));
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  auto by_id = ById(*jobs);
  // Recorded: 1 `echo hi`, 2 `exit 3`, 4 sleeping with gpu:2, 5 scancel'ed, 3 and 6 on n2
  // whose slurmd was killed, 11 past --time=1, 8/9 refused, 10 cancelled while pending.
  ASSERT_TRUE(by_id.count(1) && by_id.count(2) && by_id.count(6) && by_id.count(11));
  EXPECT_EQ(by_id[1].state, "COMPLETED");
  EXPECT_EQ(by_id[1].nodes, "n1");
  EXPECT_EQ(by_id[1].comment, "rsl ns=risk");
  auto o = Classify(by_id[1], false, false);
  EXPECT_EQ(o.phase, Phase::kFinished);
  EXPECT_EQ(o.kind, ExitKind::kSucceeded);

  EXPECT_EQ(by_id[2].exit_code, 3);
  o = Classify(by_id[2], false, false);
  EXPECT_EQ(o.kind, ExitKind::kFailed);
  EXPECT_EQ(o.message, "Slurm job 2 failed on n1: exited with 3");

  o = Classify(by_id[4], false, false);
  EXPECT_EQ(o.phase, Phase::kRunning);

  EXPECT_EQ(by_id[5].signal, 15);
  EXPECT_EQ(Classify(by_id[5], true, false).kind, ExitKind::kCancelled);
  EXPECT_EQ(Classify(by_id[5], true, true).kind, ExitKind::kTimedOut);
  // A cancel nobody here asked for fails the attempt (retried by retryPolicy), never kCancelled.
  EXPECT_EQ(Classify(by_id[5], false, false).kind, ExitKind::kFailed);
  EXPECT_EQ(Classify(by_id[5], false, false).message,
            "Slurm job 5 cancelled outside RSL on " + by_id[5].nodes);

  EXPECT_EQ(by_id[6].state, "NODE_FAIL");
  EXPECT_EQ(by_id[6].reason, "NodeDown");
  EXPECT_EQ(Classify(by_id[6], false, false).kind, ExitKind::kNodeLost);

  EXPECT_EQ(by_id[11].state, "TIMEOUT");
  EXPECT_EQ(Classify(by_id[11], false, false).kind, ExitKind::kTimedOut);
  EXPECT_EQ(by_id[11].end_time - by_id[11].start_time, 77);

  EXPECT_EQ(Classify(by_id[8], false, false).message,
            "Slurm job 8 failed: killed by SIGHUP (BadConstraints)");
}

TEST(SlurmParse, PendingAndUnknownStatesNeverEndAnAttempt) {
  Job j;
  j.job_id = 7;
  for (std::string s : {"PENDING", "CONFIGURING", "REQUEUED", "SOMETHING_NEW"}) {
    j.state = s;
    EXPECT_EQ(Classify(j, false, false).phase, Phase::kPending) << s;
  }
  j.nodes = "n1";
  for (std::string s : {"RUNNING", "COMPLETING", "SUSPENDED", "SOMETHING_NEW"}) {
    j.state = s;
    EXPECT_EQ(Classify(j, false, false).phase, Phase::kRunning) << s;
  }
  j.state = "OUT_OF_MEMORY";
  EXPECT_EQ(Classify(j, false, false).kind, ExitKind::kOomKilled);
  j.state = "PREEMPTED";
  EXPECT_EQ(Classify(j, false, false).kind, ExitKind::kNodeLost);
  j.state = "BOOT_FAIL";
  EXPECT_EQ(Classify(j, false, false).kind, ExitKind::kNodeLost);
  j.state = "DEADLINE";
  EXPECT_EQ(Classify(j, false, false).kind, ExitKind::kTimedOut);
  j.state = "COMPLETED";
  j.exit_code = 2;
  EXPECT_EQ(Classify(j, false, false).kind, ExitKind::kFailed);
}

TEST(SlurmParse, RunningJobsWhileANodeIsDown) {
  auto jobs = ParseSqueueJson(Recorded("squeue_nodefail.json"));
  ASSERT_TRUE(jobs.ok());
  auto by_id = ById(*jobs);
  EXPECT_EQ(by_id[3].state, "NODE_FAIL");
  EXPECT_EQ(by_id[4].state, "RUNNING");
  EXPECT_EQ(by_id[4].nodes, "n1");
  EXPECT_EQ(by_id[11].state, "RUNNING");
  EXPECT_EQ(by_id[11].nodes, "n3");
}

TEST(SlurmParse, SacctFromJobcompFile) {
  auto jobs = ParseSacct(Recorded("sacct.txt"));
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  auto by_id = ById(*jobs);
  EXPECT_EQ(by_id[2].state, "FAILED");
  EXPECT_EQ(by_id[2].exit_code, 3);
  EXPECT_EQ(by_id[2].nodes, "n1");
  EXPECT_EQ(by_id[8].nodes, "");
  EXPECT_EQ(by_id[8].signal, 1);
  EXPECT_EQ(by_id[11].state, "TIMEOUT");
  EXPECT_EQ(by_id[11].end_time - by_id[11].start_time, 77);
  EXPECT_EQ(Classify(by_id[6], false, false).kind, ExitKind::kNodeLost);
  auto cancelled = ParseSacct(
      "5|x|CANCELLED by "
      "0|0:15|n1|2026-11-29T07:55:58|Unknown\n5.batch|batch|CANCELLED|0:15|n1|2026-11-29T07:55:58|"
      "Unknown\n");
  ASSERT_TRUE(cancelled.ok());
  ASSERT_EQ(cancelled->size(), 1u);
  EXPECT_EQ((*cancelled)[0].state, "CANCELLED");
  EXPECT_EQ((*cancelled)[0].end_time, 0);
}

TEST(SlurmParse, SbatchParsable) {
  EXPECT_EQ(*ParseSbatchOutput("12\n"), 12);
  EXPECT_EQ(*ParseSbatchOutput("345;rsl\n"), 345);
  EXPECT_EQ(ParseSbatchOutput("").error().code, "INTERNAL");
}

}  // namespace
}  // namespace rsl::backend::slurm
