#include "backend/slurm_job.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/strings.h"
#include "base/test_util.h"

namespace rsl::backend::slurm {
namespace {

LaunchSpec Spec() {
  LaunchSpec s;
  s.attempt_id = "run-1/train/2";
  s.workload_name = "fraud-detect-daily";
  s.namespace_ = "risk";
  s.step = "train";
  s.argv = {"python3", "-c", "print('it''s')"};
  s.env = {{"PATH", "/usr/bin:/bin"}, {"TOKEN", "s3cr3t value"}};
  s.workdir = "/work/run 1";
  s.log_path = "/state/logs/train.log";
  s.exit_file = "/state/exit/train-2.json";
  s.cpu_millis = 2500;
  s.memory_bytes = 1536LL * 1024 * 1024 + 1;
  s.gpus = 2;
  s.capabilities = {"tensor_core", "fp16_support"};
  s.timeout_ms = 90 * 1000;
  s.labels = {{"team", "risk team"}};
  return s;
}

TEST(SlurmJob, SbatchArgsFollowTheMapping) {
  auto args = SbatchArgs(Spec(), "gpu", "/state/logs/train.log");
  std::vector<std::string> want = {
      "sbatch",
      "--parsable",
      "--no-requeue",
      "--job-name=rsl-fraud-detect-daily-train",
      "--chdir=/work/run 1",
      "--output=/state/logs/train.log",
      "--error=/state/logs/train.log",
      "--open-mode=append",
      "--cpus-per-task=3",
      "--mem=1537M",
      "--gres=gpu:2",
      "--constraint=tensor_core&fp16_support",
      "--time=2",
      "--partition=gpu",
      "--comment=rsl attempt=run-1/train/2 namespace=risk team=risk_team",
      "--wckey=risk",
      "--export=NONE"};
  EXPECT_EQ(args, want);
}

TEST(SlurmJob, MinimalSpecLeavesOutWhatIsNotAsked) {
  LaunchSpec s;
  s.attempt_id = "r/s/1";
  s.workload_name = "w";
  s.step = "s";
  s.argv = {"true"};
  auto args = SbatchArgs(s, "", "/dev/null");
  std::vector<std::string> want = {"sbatch",
                                   "--parsable",
                                   "--no-requeue",
                                   "--job-name=rsl-w-s",
                                   "--output=/dev/null",
                                   "--error=/dev/null",
                                   "--open-mode=append",
                                   "--cpus-per-task=1",
                                   "--comment=rsl attempt=r/s/1",
                                   "--export=NONE"};
  EXPECT_EQ(args, want);
}

TEST(SlurmJob, TimeLimitRoundsUpToMinutes) {
  EXPECT_EQ(TimeLimitMinutes(1), 1);
  EXPECT_EQ(TimeLimitMinutes(60000), 1);
  EXPECT_EQ(TimeLimitMinutes(60001), 2);
  EXPECT_EQ(TimeLimitMinutes(20 * 60000), 20);
}

TEST(SlurmJob, JobNameIsSanitised) {
  LaunchSpec s;
  s.workload_name = "a b";
  s.step = "x/y";
  EXPECT_EQ(JobName(s), "rsl-a_b-x_y");
}

TEST(SlurmJob, CommentSaysTheNamespaceOnce) {
  auto spec = Spec();
  spec.labels["namespace"] = "risk";  // the engine's own labels carry it too
  EXPECT_EQ(JobComment(spec), "rsl attempt=run-1/train/2 namespace=risk team=risk_team");
}

TEST(SlurmJob, ScriptKeepsBashReportsOutOfTheLog) {
  auto spec = Spec();
  spec.argv = {"sleep", "60"};
  auto script = BatchScript(spec, AttemptPaths("/st/slurm", spec.attempt_id));
  // The step's stderr goes to the log (fd 3); bash's "Killed" report goes nowhere.
  EXPECT_NE(script.find("exec 3>&2 2>/dev/null\n"), std::string::npos) << script;
  EXPECT_NE(script.find("'sleep' '60' 2>&3 3>&- 9>&-\n"), std::string::npos) << script;
}

std::string Slurp(const std::string& path) {
  auto text = ReadFile(path);
  return text.ok() ? *text : "";
}

std::map<std::string, std::string> ReadRecord(const std::string& path) {
  std::map<std::string, std::string> kv;
  auto text = ReadFile(path);
  if (!text.ok()) return kv;
  for (const auto& line : Split(*text, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

// The batch script run by bash itself, outside Slurm (no job cgroup): the step's CPU time
// is measured (bash `times`), peak memory is 0 rather than the memory of whatever cgroup
// the script happens to share.
TEST(SlurmJob, ScriptRecordsTheStepsCpuTime) {
  rsl::testing::TempDir dir("slurm-script");
  LaunchSpec spec;
  spec.attempt_id = "r/burn/1";
  spec.workload_name = "w";
  spec.step = "burn";
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  // A child that burns CPU in a grandchild: both are waited for, both are counted.
  spec.argv = {"sh", "-c", "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; exit 3"};
  spec.exit_file = dir.Sub("exit");
  auto files = AttemptPaths(dir.path(), spec.attempt_id);
  ASSERT_TRUE(MakeDirs(files.dir).ok());
  ASSERT_TRUE(WritePrivateFile(files.env, EnvFileContents(spec), 0600).ok());
  ASSERT_TRUE(WritePrivateFile(files.script, BatchScript(spec, files), 0700).ok());
  int rc = std::system(("env -u SLURM_JOB_ID /bin/bash " + files.script + " >/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 3);
  auto kv = ReadRecord(spec.exit_file);
  ASSERT_EQ(kv["exit_code"], "3");
  int64_t cpu = std::atoll(kv["cpu_ms"].c_str()), wall = std::atoll(kv["wall_ms"].c_str());
  EXPECT_GE(cpu, 50) << "300,000 shell loop iterations take far more than 50 ms";
  EXPECT_LE(cpu, wall + 20) << "one CPU-bound process cannot use more CPU than wall time";
  EXPECT_EQ(kv["peak_memory_bytes"], "0");
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".times."), std::string::npos)
        << "left behind: " << entry.path();
  }
}

// The sampler beside the step, outside Slurm (no job cgroup: /proc of the script's process
// tree): while a step burns CPU in a grandchild and holds memory, the usage file says so and
// grows; after the step the sampler is gone and the last sample stays.
TEST(SlurmJob, ScriptSamplesUsageWhileTheStepRuns) {
  rsl::testing::TempDir dir("slurm-sample");
  LaunchSpec spec;
  spec.attempt_id = "r/burn/1";
  spec.workload_name = "w";
  spec.step = "burn";
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.argv = {"sh", "-c",
               "python3 -c \"import time\nx = b'a' * (40 << 20)\nt = time.process_time()\n"
               "while time.process_time() - t < 4.5: pass\""};
  spec.exit_file = dir.Sub("exit");
  auto files = AttemptPaths(dir.path(), spec.attempt_id);
  ASSERT_TRUE(MakeDirs(files.dir).ok());
  ASSERT_TRUE(WritePrivateFile(files.env, EnvFileContents(spec), 0600).ok());
  ASSERT_TRUE(WritePrivateFile(files.script, BatchScript(spec, files), 0700).ok());
  ASSERT_EQ(
      std::system(("env -u SLURM_JOB_ID /bin/bash " + files.script + " >/dev/null 2>&1 &").c_str()),
      0);
  std::vector<UsageSample> seen;
  for (int i = 0; i < 600; ++i) {  // up to 60 s (a loaded machine)
    auto text = ReadFileIfExists(UsageFile(spec), 4096);
    if (text.ok() && *text) {
      if (auto s = ParseUsageSample(**text);
          s && (seen.empty() || s->usage.wall_ms != seen.back().usage.wall_ms)) {
        seen.push_back(*s);
      }
    }
    if (PathExists(spec.exit_file)) break;
    usleep(100'000);
  }
  ASSERT_TRUE(PathExists(spec.exit_file)) << "the step did not end";
  ASSERT_GE(seen.size(), 2u) << "a sample every 2 s while the step runs (over 4.5 s)";
  std::string trace;
  for (const auto& u : seen) {
    trace +=
        " wall " + std::to_string(u.usage.wall_ms) + " cpu " + std::to_string(u.usage.cpu_ms) + ";";
  }
  SCOPED_TRACE("samples:" + trace);
  const UsageSample& last = seen.back();
  EXPECT_EQ(last.cpu_from, "proc");
  EXPECT_EQ(last.memory_from, "proc");
  EXPECT_GE(last.usage.wall_ms, 2000);
  // Some of the 4.5 s of CPU it burns (how much by 2 s of wall depends on the machine's load),
  // never more than the wall time of one thread, nor more than the script's own total.
  EXPECT_GE(last.usage.cpu_ms, 100);
  EXPECT_LE(last.usage.cpu_ms, last.usage.wall_ms + 500);
  auto record = ReadRecord(spec.exit_file);
  EXPECT_LE(last.usage.cpu_ms, std::atoll(record["cpu_ms"].c_str()) + 200);
  EXPECT_GE(last.usage.peak_memory_bytes, 40LL << 20) << "the 40 MiB it held";
  EXPECT_GT(last.usage.peak_cpu_millicores, 0);
  EXPECT_LE(last.usage.peak_cpu_millicores, 1500);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GE(seen[i].usage.cpu_ms, seen[i - 1].usage.cpu_ms) << "CPU time never decreases";
  }
  // The sampler ends with the script: no process of it is left, nor a temporary file.
  usleep(300'000);
  std::string left = "pgrep -f '^/bin/bash " + files.script + "' >/dev/null";
  EXPECT_NE(std::system(left.c_str()), 0) << "the script or its sampler still runs";
  EXPECT_FALSE(PathExists(UsageFile(spec) + ".nap")) << "the sampler's FIFO is removed";
  EXPECT_FALSE(PathExists(UsageFile(spec) + ".tmp"));
}

// A step that ends at once (`true`) ends its script at once, every time. The script stops
// its usage sampler right after the step; a TERM alone did not always do it: bash 5.2 lost
// one sent while the sampler's subshell was still starting, the script then waited for its
// sampler forever, and Slurm showed the job RUNNING until scancel (1 job in ~1,000 on a
// loaded node). Once with TERM ignored (the lost TERM, made certain), then lanes of runs side
// by side (RSL_SCRIPT_RUNS in all, default 240), each run given 30 s.
TEST(SlurmJob, ScriptOfAnInstantStepAlwaysEnds) {
  rsl::testing::TempDir dir("slurm-instant");
  const char* env_runs = std::getenv("RSL_SCRIPT_RUNS");
  const int runs = env_runs != nullptr ? std::atoi(env_runs) : 240;
  const int lanes = 8;
  std::string lanes_cmd;
  for (int lane = 0; lane < lanes; ++lane) {
    LaunchSpec spec;
    spec.attempt_id = "r/instant/" + std::to_string(lane + 1);
    spec.workload_name = "w";
    spec.step = "instant";
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.argv = {"true"};
    spec.exit_file = dir.Sub("exit-" + std::to_string(lane));
    auto files = AttemptPaths(dir.path(), spec.attempt_id);
    ASSERT_TRUE(MakeDirs(files.dir).ok());
    ASSERT_TRUE(WritePrivateFile(files.env, EnvFileContents(spec), 0600).ok());
    ASSERT_TRUE(WritePrivateFile(files.script, BatchScript(spec, files), 0700).ok());
    lanes_cmd += "(for i in $(seq " + std::to_string(runs / lanes) +
                 "); do timeout 30 env -u SLURM_JOB_ID /bin/bash " + ShellQuote(files.script) +
                 " >/dev/null 2>&1; echo \"rc=$?\"; done) & ";
  }
  // Deterministically: with TERM ignored (inherited SIG_IGN, which bash cannot trap), the
  // sampler ends by its FIFO alone.
  std::string script = AttemptPaths(dir.path(), "r/instant/1").script;
  auto t0 = std::chrono::steady_clock::now();
  int deaf =
      std::system(("timeout -s KILL 30 /bin/bash -c \"trap '' TERM; exec env -u SLURM_JOB_ID "
                   "/bin/bash " +
                   ShellQuote(script) + "\" >/dev/null 2>&1")
                      .c_str());
  EXPECT_EQ(WEXITSTATUS(deaf), 0) << "137: killed after 30 s, the script waited for its sampler";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  std::string out = dir.Sub("rcs");
  ASSERT_EQ(std::system(("{ " + lanes_cmd + "wait; } > " + out).c_str()), 0);
  auto rcs = Split(std::string(Trim(Slurp(out))), '\n');
  std::map<std::string, int> counts;
  for (const auto& rc : rcs) counts[rc]++;
  std::string seen;
  for (const auto& [rc, n] : counts) seen += " " + rc + " x" + std::to_string(n);
  EXPECT_EQ(counts["rc=0"], runs / lanes * lanes)
      << "exit statuses:" << seen << " (124: the script hung for 30 s)";
}

// A serving replica's port is chosen by the batch script on its node: a port nothing listens
// on there, below the ephemeral range, passed to the step as RSL_PORT (over the env file's)
// and written to the port file with the node's name.
TEST(SlurmJob, ScriptPicksAFreePortForAServingReplica) {
  rsl::testing::TempDir dir("slurm-port");
  LaunchSpec spec;
  spec.attempt_id = "r/serve/1/r0-1";
  spec.workload_name = "w";
  spec.step = "serve";
  spec.env = {{"PATH", "/usr/bin:/bin"}, {"RSL_PORT", kPortOnNode}};
  spec.argv = {"sh", "-c", "echo \"$RSL_PORT\" > " + dir.Sub("seen")};
  spec.exit_file = dir.Sub("exit");
  auto files = AttemptPaths(dir.path(), spec.attempt_id);
  ASSERT_TRUE(MakeDirs(files.dir).ok());
  ASSERT_TRUE(WritePrivateFile(files.env, EnvFileContents(spec), 0600).ok());
  ASSERT_TRUE(WritePrivateFile(files.script, BatchScript(spec, files), 0700).ok());
  int rc = std::system(
      ("env -u SLURM_JOB_ID SLURMD_NODENAME=n7 /bin/bash " + files.script + " >/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  EXPECT_EQ(PortFile(spec), dir.Sub("exit") + ".port");
  auto kv = ReadRecord(PortFile(spec));
  int port = std::atoi(kv["port"].c_str());
  EXPECT_GE(port, 1024);
  EXPECT_LT(port, 65536);
  EXPECT_EQ(kv["node"], "n7");
  auto seen = ReadFileIfExists(dir.Sub("seen"), 64);
  ASSERT_TRUE(seen.ok() && *seen);
  EXPECT_EQ(**seen, std::to_string(port) + "\n");
  // Without the marker nothing is picked.
  EXPECT_EQ(BatchScript(Spec(), AttemptPaths("/st/slurm", "a")).find("rsl_port"),
            std::string::npos);
}

// A container attempt for BatchScript: the attempt's directory and environment file, and a
// ContainerJob `id` whose runc is a fake shell script (`runc_body` after its shebang) and whose
// config template is `config`.
void PrepareContainerAttempt(rsl::testing::TempDir& dir, const LaunchSpec& spec,
                             const std::string& id, const std::string& runc_root,
                             const std::string& runc_body, const std::string& config,
                             AttemptFiles* files, ContainerJob* c) {
  *files = AttemptPaths(dir.path(), spec.attempt_id);
  ASSERT_TRUE(MakeDirs(files->dir).ok());
  ASSERT_TRUE(WritePrivateFile(files->env, EnvFileContents(spec), 0600).ok());
  c->id = id;
  c->config_template = files->dir + "/container.json";
  c->bundle_dir = files->dir + "/" + c->id;
  c->runc = dir.Sub("fake-runc");
  c->runc_root = dir.Sub(runc_root);
  c->in_use = dir.Sub("in-use");
  c->args = {"run", "--bundle", c->bundle_dir, c->id};
  dir.Write("in-use", "");
  dir.Write("fake-runc", "#!/bin/sh\n" + runc_body);
  ASSERT_EQ(::chmod(c->runc.c_str(), 0755), 0);
  ASSERT_TRUE(WritePrivateFile(c->config_template, config, 0600).ok());
}

// A container step (ContainerJob) with a fake runc that records what it was given: the
// script fills in the config's placeholders (no job cgroup here: /rsl-slurm/ID; Slurm's
// variables into the container's environment), runs `runc run` without dropping to the
// step's identity (the config's user is the step's), passes its exit code on, and deletes
// the container and the filled-in config afterwards.
TEST(SlurmJob, ScriptRunsAContainerStepWithRunc) {
  rsl::testing::TempDir dir("slurm-container");
  LaunchSpec spec;
  spec.attempt_id = "r/img/1";
  spec.workload_name = "w";
  spec.step = "img";
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.argv = {"never", "runs", "on", "the", "host"};
  spec.exit_file = dir.Sub("exit");
  AttemptFiles files;
  ContainerJob c;
  ASSERT_NO_FATAL_FAILURE(PrepareContainerAttempt(
      dir, spec, "rsl-r_img_1", "runc root",
      "echo \"$*\" >> " + dir.Sub("calls") + "\n" +
          "[ \"$3\" = run ] || exit 0\ncp \"$5/config.json\" " + dir.Sub("seen.json") +
          "\nexit 7\n",
      std::string("{\"linux\": {\"cgroupsPath\": \"") + kJobCgroupPlaceholder +
          "\"}, \"env\": [\"A=1\", \"" + kSlurmEnvPlaceholder + "\"]}\n",
      &files, &c));
  StepIdentity who;
  who.uid = 4242;
  who.gid = 4242;
  std::string script = BatchScript(spec, files, who, &c);
  EXPECT_EQ(script.find("setpriv"), std::string::npos);
  ASSERT_TRUE(WritePrivateFile(files.script, script, 0700).ok());
  int rc = std::system(
      ("env -u SLURM_JOB_ID SLURMD_NODENAME=n7 /bin/bash " + files.script + " >/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 7);
  EXPECT_EQ(ReadRecord(spec.exit_file)["exit_code"], "7");
  EXPECT_EQ(Slurp(dir.Sub("calls")), "--root " + c.runc_root + " run --bundle " + c.bundle_dir +
                                         " " + c.id + "\n--root " + c.runc_root +
                                         " delete --force " + c.id + "\n");
  EXPECT_EQ(Slurp(dir.Sub("seen.json")),
            "{\"linux\": {\"cgroupsPath\": \"/rsl-slurm/rsl-r_img_1\"}, \"env\": [\"A=1\", "
            "\"RSL_SLURM=1\",\"SLURMD_NODENAME=n7\"]}\n");
  EXPECT_FALSE(PathExists(c.bundle_dir + "/config.json"));
}

// A GPU container (ContainerJob::gpus): the script adds the device node of each GPU Slurm bound
// (SLURM_JOB_GPUS, in its order) from the device directory, the control node, an allow rule
// each after the deny-all, and the step's own CUDA_VISIBLE_DEVICES (0..n-1) instead of Slurm's.
TEST(SlurmJob, ScriptGivesAGpuContainerTheGpusSlurmBound) {
  rsl::testing::TempDir dir("slurm-gpu-container");
  LaunchSpec spec;
  spec.attempt_id = "r/gpu/1";
  spec.workload_name = "w";
  spec.step = "gpu";
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.argv = {"train"};
  spec.exit_file = dir.Sub("exit");
  ASSERT_TRUE(MakeDirs(dir.Sub("dev")).ok());
  for (std::string n : {"nvidia0", "nvidia2", "nvidiactl"}) {
    ASSERT_EQ(::mknod(dir.Sub("dev/" + n).c_str(), S_IFCHR | 0660,
                      makedev(195, n == "nvidia2"   ? 2
                                   : n == "nvidia0" ? 0
                                                    : 255)),
              0)
        << n;
    ASSERT_EQ(::chmod(dir.Sub("dev/" + n).c_str(), 0660), 0);  // not the umask's
  }
  AttemptFiles files;
  ContainerJob c;
  ASSERT_NO_FATAL_FAILURE(PrepareContainerAttempt(
      dir, spec, "rsl-r_gpu_1", "runc",
      "[ \"$3\" = run ] || exit 0\ncp \"$5/config.json\" " + dir.Sub("seen.json") + "\n",
      std::string("{\"env\": [\"") + kSlurmEnvPlaceholder + "\"], \"devices\": [\"" +
          kGpuDevicesPlaceholder + "\"], \"rules\": [{\"allow\": false, \"access\": \"rwm\"}, \"" +
          kGpuRulesPlaceholder + "\"]}\n",
      &files, &c));
  c.gpus = true;
  c.gpu_device_dir = dir.Sub("dev");
  ASSERT_TRUE(
      WritePrivateFile(files.script, BatchScript(spec, files, std::nullopt, &c), 0700).ok());
  int rc =
      std::system(("env -u SLURM_JOB_ID SLURM_JOB_GPUS=2,0 CUDA_VISIBLE_DEVICES=0,1 /bin/bash " +
                   files.script + " >/dev/null")
                      .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  std::string dev = "{\"path\":\"/dev/nvidia";
  EXPECT_EQ(
      Slurp(dir.Sub("seen.json")),
      "{\"env\": [\"RSL_SLURM=1\",\"SLURM_JOB_GPUS=2,0\",\"CUDA_VISIBLE_DEVICES=0,1\","
      "\"NVIDIA_VISIBLE_DEVICES=2,0\",\"RSL_GPU_HOST_INDICES=2,0\"], \"devices\": [" +
          dev +
          "2\",\"type\":\"c\",\"major\":195,\"minor\":2,\"fileMode\":432,\"uid\":0,"
          "\"gid\":0}," +
          dev +
          "0\",\"type\":\"c\",\"major\":195,\"minor\":0,\"fileMode\":432,"
          "\"uid\":0,\"gid\":0},{\"path\":\"/dev/nvidiactl\",\"type\":\"c\",\"major\":195,"
          "\"minor\":255,\"fileMode\":432,\"uid\":0,\"gid\":0}], \"rules\": [{\"allow\": "
          "false, \"access\": \"rwm\"}, {\"allow\":false,\"access\":\"rwm\"},"
          "{\"allow\":true,\"type\":\"c\",\"major\":195,\"minor\":2,\"access\":\"rwm\"},"
          "{\"allow\":true,\"type\":\"c\",\"major\":195,\"minor\":0,\"access\":\"rwm\"},"
          "{\"allow\":true,\"type\":\"c\",\"major\":195,\"minor\":255,\"access\":\"rwm\"}]}\n");

  // A bound GPU without its node: the job fails before runc, saying which.
  ::unlink(dir.Sub("seen.json").c_str());
  rc = std::system(("env -u SLURM_JOB_ID SLURM_JOB_GPUS=1 SLURMD_NODENAME=n1 /bin/bash " +
                    files.script + " 2>" + dir.Sub("err") + " >/dev/null")
                       .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 126);
  EXPECT_FALSE(PathExists(dir.Sub("seen.json")));
  EXPECT_NE(Slurp(dir.Sub("err"))
                .find("rsl: GPU_DEVICE_NOT_FOUND: the job's GPU 1 "
                      "(SLURM_JOB_GPUS=1) has no device node " +
                      dir.Sub("dev") + "/nvidia1 on n1"),
            std::string::npos)
      << Slurp(dir.Sub("err"));
}

// A serving replica in its image on Slurm: the port the script picks on the node (PickPort)
// replaces RSL_PORT=on-node in the container's environment too, and is written to the port file.
TEST(SlurmJob, ScriptGivesAContainerReplicaThePortItPicked) {
  rsl::testing::TempDir dir("slurm-port-container");
  LaunchSpec spec;
  spec.attempt_id = "r/serve-0/1";
  spec.workload_name = "w";
  spec.step = "serve";
  spec.env = {{"PATH", "/usr/bin:/bin"}, {"RSL_PORT", kPortOnNode}};
  spec.argv = {"serve"};
  spec.exit_file = dir.Sub("exit");
  AttemptFiles files;
  ContainerJob c;
  ASSERT_NO_FATAL_FAILURE(PrepareContainerAttempt(
      dir, spec, "rsl-r_serve-0_1", "runc",
      "[ \"$3\" = run ] || exit 0\ncp \"$5/config.json\" " + dir.Sub("seen.json") + "\n",
      std::string("{\"env\": [\"PATH=/bin\", \"RSL_PORT=") + kPortOnNode + "\", \"" +
          kSlurmEnvPlaceholder + "\"]}\n",
      &files, &c));
  ASSERT_TRUE(
      WritePrivateFile(files.script, BatchScript(spec, files, std::nullopt, &c), 0700).ok());
  int rc = std::system(
      ("env -u SLURM_JOB_ID SLURMD_NODENAME=n2 /bin/bash " + files.script + " >/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  auto record = ReadRecord(PortFile(spec));
  ASSERT_FALSE(record["port"].empty()) << Slurp(PortFile(spec));
  EXPECT_EQ(record["node"], "n2");
  EXPECT_EQ(Slurp(dir.Sub("seen.json")), "{\"env\": [\"PATH=/bin\", \"RSL_PORT=" + record["port"] +
                                             "\", \"RSL_SLURM=1\",\"SLURMD_NODENAME=n2\"]}\n");
}

TEST(SlurmJob, AttemptPathsAreFlat) {
  auto f = AttemptPaths("/st/slurm", "run-1/train/2");
  EXPECT_EQ(f.dir, "/st/slurm/run-1_train_2");
  EXPECT_EQ(f.env, "/st/slurm/run-1_train_2/env");
  EXPECT_EQ(f.job_id, "/st/slurm/run-1_train_2/job_id");
}

TEST(SlurmJob, ScriptQuotesArgvAndKeepsSecretsOut) {
  auto spec = Spec();
  auto script = BatchScript(spec, AttemptPaths("/st/slurm", spec.attempt_id));
  EXPECT_NE(script.find("env -i \"${rsl_env[@]}\" 'python3' '-c' 'print('\\''it'\\'''\\''s'\\'')'"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("cd '/work/run 1' || exit 126"), std::string::npos);
  EXPECT_EQ(script.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(EnvFileContents(spec), std::string("PATH=/usr/bin:/bin\0TOKEN=s3cr3t value\0", 38));
}

TEST(SlurmJob, ShellQuote) {
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a'b"), "'a'\\''b'");
  EXPECT_EQ(ShellQuote("$HOME `x`"), "'$HOME `x`'");
}

TEST(SlurmJob, MaskerHidesSecretsAcrossChunks) {
  LogMasker m({"hunter2", "hunter2-long", ""});
  std::string out;
  out += m.Feed("user=bob pass=hun");
  EXPECT_EQ(out, "user=bob pass=");  // "hun" could start a secret: held back
  out += m.Feed("ter2 and hunter2-lo");
  out += m.Feed("ng done h");
  out += m.Finish();
  EXPECT_EQ(out, "user=bob pass=*** and *** done h");
}

TEST(SlurmJob, MaskerWithoutSecretsPassesThrough) {
  LogMasker m({});
  EXPECT_EQ(m.Feed("abc"), "abc");
  EXPECT_EQ(m.Finish(), "");
}

}  // namespace
}  // namespace rsl::backend::slurm
