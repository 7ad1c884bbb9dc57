// Registry images on Slurm: the batch script runs the step in its image with runc (the same OCI
// config as the local backend, rsl-cinit as PID 1) from the image cache in the state directory,
// which every node of the fixture's single-host cluster sees. A real registry (Debian's
// docker-registry on loopback, src/image/testing.h), a real Slurm cluster (fixture
// `slurm_cluster`) and real runc; each image holds a static busybox and /etc/rsl-image-marker,
// which the host does not have.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "backend/slurm.h"
#include "backend/slurm_job.h"
#include "base/file.h"
#include "base/strings.h"
#include "cluster_util.h"
#include "image/testing.h"
#include "recorder.h"
#include "spec/phase.h"

namespace rsl::backend {
namespace {

using namespace rsl::slurm_test;  // NOLINT
using image::testing::LocalRegistry;

constexpr char kMarker[] = "/etc/rsl-image-marker";
// A host file the image does not have: a step that sees it runs on the host.
constexpr char kHostFile[] = "/etc/debian_version";

class SlurmImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access("/bin/busybox", X_OK), 0) << "busybox-static is needed (scripts/deps)";
    ASSERT_NE(access(kMarker, F_OK), 0) << "the host must not have " << kMarker;
    ASSERT_EQ(access(kHostFile, F_OK), 0) << "the host must have " << kHostFile;
    ASSERT_FALSE(FindInPath("runc").empty()) << "runc is needed";
    ASSERT_FALSE(registry_.host().empty()) << registry_.Log();
    UseFixtureCluster();
    ASSERT_TRUE(PathExists(EnvVar("SLURM_CONF"))) << "run through ctest (fixture slurm_cluster)";
    EnsureAllNodesIdle();
    ::unsetenv("RSL_CONTAINER_RUNTIME");
    dir_ = ::testing::TempDir() + "slurm_image_test/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(MakeDirs(dir_).ok());
    BackendOptions o;
    o.state_dir = dir_ + "/state";
    o.slurm_conf = EnvVar("SLURM_CONF");
    o.isolation = "none";
    auto b = NewSlurmBackend(o);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    backend_ = std::move(*b);
    rec_.Attach(backend_.get());
  }

  void TearDown() override {
    backend_.reset();
    Sh("squeue -h -o %A | xargs -r scancel");
  }

  // Pushes host/volc/slurm:TAG holding busybox and the marker; returns its digest.
  std::string Push(const std::string& tag, const std::string& marker) {
    std::string why;
    std::string digest = registry_.Push("volc/slurm", tag, "linux/amd64",
                                        {"bin/busybox=@/bin/busybox", "bin/sh=@/bin/busybox",
                                         std::string(kMarker + 1) + "=" + marker},
                                        &why);
    EXPECT_FALSE(digest.empty()) << why;
    return digest;
  }

  LaunchSpec Spec(const std::string& step, const std::string& tag, const std::string& digest,
                  const std::string& script) {
    LaunchSpec s;
    s.run_id = "run-img";
    s.step = step;
    s.attempt = 1;
    s.attempt_id = s.run_id + "/" + step + "/1";
    s.workload_name = "wl";
    s.namespace_ = "risk";
    s.argv = {"/bin/busybox", "sh", "-c", script};
    std::string adir = dir_ + "/runs/" + step;
    (void)MakeDirs(adir + "/out");
    (void)MakeDirs(adir + "/work");
    s.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
             {"RSL_OUTPUT", adir + "/out"},
             {"RSL_STEP", step},
             {"RSL_IMAGE", registry_.host() + "/volc/slurm:" + tag},
             {"RSL_IMAGE_DIGEST", digest}};
    s.make_dirs = {adir + "/out"};
    s.workdir = adir + "/work";
    s.log_path = adir + "/log";
    s.exit_file = adir + "/exit";
    s.cpu_millis = 1000;
    s.memory_bytes = 100LL << 20;
    return s;
  }

  std::string RuncRoot() { return dir_ + "/state/slurm/runc"; }
  std::string RuncList() { return Sh("runc --root " + RuncRoot() + " list -q 2>&1"); }

  LocalRegistry registry_;
  std::string dir_;
  std::unique_ptr<Backend> backend_;
  Recorder rec_;
};

TEST_F(SlurmImageTest, TwoStepsRunInTheirImageOnTwoNodes) {
  std::string digest = Push("v1", "slurm-image");
  ASSERT_FALSE(digest.empty());
  std::string script = std::string("echo marker=$(cat ") + kMarker + "); [ -e " + kHostFile +
                       " ] && echo sees-host-file || echo no-host-file; "
                       "echo node=$SLURMD_NODENAME container=$RSL_CONTAINER out=$RSL_OUTPUT; "
                       "echo written > $RSL_OUTPUT/result";
  LaunchSpec on_n1 = Spec("a", "v1", digest, script);
  on_n1.capabilities = {"tensor_core"};  // only n1 has it
  LaunchSpec on_n2 = Spec("b", "v1", digest, script);
  on_n2.spread_from = {"n1", "n3"};  // n2 is free: kept off the others
  ASSERT_TRUE(backend_->Launch(on_n1).ok());
  ASSERT_TRUE(backend_->Launch(on_n2).ok());
  for (const auto& [s, node] : {std::pair{&on_n1, "n1"}, std::pair{&on_n2, "n2"}}) {
    auto e = rec_.WaitExit(s->attempt_id, 180);
    ASSERT_TRUE(e.has_value()) << s->step << "\n" << rec_.Events(s->attempt_id);
    std::string log = Slurp(s->log_path);
    EXPECT_EQ(e->kind, ExitKind::kSucceeded)
        << s->step << ": " << e->message << "\n"
        << log << Slurp(s->log_path + ".runc") << rec_.Events(s->attempt_id);
    EXPECT_EQ(e->node, node) << s->step;
    EXPECT_NE(log.find("marker=slurm-image"), std::string::npos) << log;
    EXPECT_NE(log.find("no-host-file"), std::string::npos) << log;
    EXPECT_NE(log.find(std::string("node=") + node + " container=rsl-run-img_" + s->step +
                       "_1 out=/rsl/output"),
              std::string::npos)
        << log;
    EXPECT_EQ(Slurp(dir_ + "/runs/" + s->step + "/out/result"), "written\n");
    std::string events = rec_.Events(s->attempt_id);
    EXPECT_NE(events.find("(runc) from " + digest), std::string::npos) << events;
  }
  // Pulled into the one cache the nodes share, once.
  std::string hex = digest.substr(digest.find(':') + 1);
  EXPECT_TRUE(PathExists(dir_ + "/state/images/bundles/" + hex + "/rootfs/etc/rsl-image-marker"));
  EXPECT_EQ(RuncList(), "");
  EXPECT_EQ(JobsLeft(), "");
  // runc made the jobs' cgroup paths in hierarchies Slurm does not use: none stays behind
  // (Slurm removes its own a moment after the job).
  std::string left;
  for (int i = 0; i < 300; ++i) {
    left = Sh("ls -d /sys/fs/cgroup/*/slurm_n[12]/uid_*/job_* 2>/dev/null");
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(left, "");
}

TEST_F(SlurmImageTest, CancellingARunningContainerStepLeavesNoContainer) {
  std::string digest = Push("v2", "sleeper");
  ASSERT_FALSE(digest.empty());
  // A duration no other test uses, to find its processes on the machine.
  LaunchSpec s = Spec("sleeper", "v2", digest, "echo started; exec /bin/busybox sleep 311.75");
  ASSERT_TRUE(backend_->Launch(s).ok());
  std::string id = "rsl-run-img_sleeper_1";
  bool running = false;
  for (int i = 0; i < 1200 && !running; ++i) {  // up to 120 s on a loaded machine
    running =
        Sh("runc --root " + RuncRoot() + " list 2>/dev/null").find(id + " ") != std::string::npos &&
        Slurp(s.log_path).find("started") != std::string::npos;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(running) << Slurp(s.log_path) << Slurp(s.log_path + ".runc")
                       << rec_.Events(s.attempt_id);
  EXPECT_NE(Sh("pgrep -f '^/bin/busybox sleep 311.75$' || true"), "");
  backend_->Stop(s.attempt_id, 1000, false);  // scancel
  auto e = rec_.WaitExit(s.attempt_id, 120);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kCancelled) << e->message;
  EXPECT_EQ(RuncList(), "");
  EXPECT_EQ(Sh("pgrep -f '^/bin/busybox sleep 311.75$' || true"), "");
  EXPECT_EQ(JobsLeft(), "");
}

// Slurm's limit is the job's cgroup, whose child the container's is: a container step over its
// --mem is OOM-killed there and reported as a host step's is.
TEST_F(SlurmImageTest, AContainerStepOverItsMemoryIsOomKilled) {
  std::string digest = Push("v3", "hog");
  ASSERT_FALSE(digest.empty());
  // dd's one 300 MiB block is read from /dev/zero into memory: three times the 100 MiB limit.
  LaunchSpec s =
      Spec("hog", "v3", digest, "exec /bin/busybox dd if=/dev/zero of=/dev/null bs=300M count=1");
  ASSERT_TRUE(backend_->Launch(s).ok());
  auto e = rec_.WaitExit(s.attempt_id, 180);
  ASSERT_TRUE(e.has_value()) << rec_.Events(s.attempt_id);
  EXPECT_EQ(e->kind, ExitKind::kOomKilled) << e->message << "\n" << Slurp(s.log_path);
  EXPECT_EQ(RuncList(), "");
  EXPECT_EQ(JobsLeft(), "");
}

// GPUs in a container on Slurm: Slurm binds them (gres, SLURM_JOB_GPUS: the node's indices);
// the batch script adds exactly those device nodes from RSL_GPU_DEVICE_DIR (here mknod'ed
// clones of /dev/null named nvidia0..3 and nvidiactl) with their allow rules, and the step
// sees them numbered 0..n-1. A bound GPU without its node fails the job before runc.
TEST_F(SlurmImageTest, AGpuStepSeesExactlyTheGpusSlurmBoundToIt) {
  std::string devdir = dir_ + "/gpudev";
  ASSERT_TRUE(MakeDirs(devdir).ok());
  for (std::string n : {"nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl"}) {
    ASSERT_EQ(::mknod((devdir + "/" + n).c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << n;
  }
  ::setenv("RSL_GPU_DEVICE_DIR", devdir.c_str(), 1);
  std::string digest = Push("v4", "gpu");
  ASSERT_FALSE(digest.empty());
  std::string script =
      "echo devs=$(ls /dev | grep nvidia | tr '\\n' ' '); "
      "echo cuda=$CUDA_VISIBLE_DEVICES host=$RSL_GPU_HOST_INDICES nv=$NVIDIA_VISIBLE_DEVICES "
      "job=$SLURM_JOB_GPUS; for d in /dev/nvidia[0-9]*; do echo x > $d && echo wrote $d; done";
  LaunchSpec s = Spec("gpu", "v4", digest, script);
  s.gpus = 2;
  s.capabilities = {"tensor_core"};  // n1 (gpu:4)
  ASSERT_TRUE(backend_->Launch(s).ok());
  auto e = rec_.WaitExit(s.attempt_id, 180);
  ASSERT_TRUE(e.has_value()) << rec_.Events(s.attempt_id);
  std::string log = Slurp(s.log_path);
  ASSERT_EQ(e->kind, ExitKind::kSucceeded) << e->message << "\n"
                                           << log << Slurp(s.log_path + ".runc");
  // Which two Slurm chose is Slurm's: read them back from the job's own variable.
  size_t at = log.find("job=");
  ASSERT_NE(at, std::string::npos) << log;
  std::string job = log.substr(at + 4, log.find('\n', at) - at - 4);
  std::vector<std::string> idx = Split(job, ',');
  ASSERT_EQ(idx.size(), 2u) << log;
  EXPECT_NE(log.find("devs=nvidia" + idx[0] + " nvidia" + idx[1] + " nvidiactl\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("cuda=0,1 host=" + job + " nv=" + job + " job=" + job), std::string::npos)
      << log;
  for (const auto& i : idx) {
    EXPECT_NE(log.find("wrote /dev/nvidia" + i + "\n"), std::string::npos) << log;
  }

  // A device directory without nvidia1..3: whichever GPU beyond 0 Slurm binds has no node.
  for (std::string n : {"nvidia1", "nvidia2", "nvidia3"}) {
    ASSERT_EQ(::unlink((devdir + "/" + n).c_str()), 0);
  }
  LaunchSpec missing = Spec("gpu2", "v4", digest, "echo ran");
  missing.gpus = 2;
  missing.capabilities = {"tensor_core"};
  ASSERT_TRUE(backend_->Launch(missing).ok());
  e = rec_.WaitExit(missing.attempt_id, 180);
  ::unsetenv("RSL_GPU_DEVICE_DIR");
  ASSERT_TRUE(e.has_value()) << rec_.Events(missing.attempt_id);
  log = Slurp(missing.log_path);
  EXPECT_EQ(e->kind, ExitKind::kFailed) << e->message;
  EXPECT_EQ(e->exit_code, 126) << e->message;
  EXPECT_NE(log.find("rsl: GPU_DEVICE_NOT_FOUND: the job's GPU "), std::string::npos) << log;
  EXPECT_NE(log.find("has no device node " + devdir + "/nvidia"), std::string::npos) << log;
  EXPECT_EQ(log.find("ran"), std::string::npos) << log;
  EXPECT_EQ(RuncList(), "");
  EXPECT_EQ(JobsLeft(), "");
}

// A serving replica in its image on Slurm (what serve::ReplicaSet launches there): its job
// picks a free port on its node, writes it to the port file and gives it to the container's
// RSL_PORT; the image's own httpd answers on node:port.
TEST_F(SlurmImageTest, AReplicaInItsImageServesOnThePortItsNodePicked) {
  std::string digest = Push("v5", "served-from-the-image");
  ASSERT_FALSE(digest.empty());
  LaunchSpec s = Spec("serve-0", "v5", digest,
                      "cp /etc/rsl-image-marker $RSL_OUTPUT/index.html && "
                      "exec /bin/busybox httpd -f -p $RSL_PORT -h $RSL_OUTPUT");
  s.env["RSL_PORT"] = slurm::kPortOnNode;
  ASSERT_TRUE(backend_->Launch(s).ok());
  std::string port_file = slurm::PortFile(s), body;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < until) {
    std::string rec = Slurp(port_file);
    size_t at = rec.find("port=");
    if (at != std::string::npos) {
      std::string port = rec.substr(at + 5, rec.find('\n', at) - at - 5);
      body = Sh("curl -s -m 2 http://127.0.0.1:" + port + "/");
      if (!body.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(body, "served-from-the-image")
      << Slurp(port_file) << Slurp(s.log_path) << Slurp(s.log_path + ".runc")
      << rec_.Events(s.attempt_id);
  backend_->Stop(s.attempt_id, 1000, false);
  auto e = rec_.WaitExit(s.attempt_id, 120);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kCancelled) << e->message;
  EXPECT_EQ(RuncList(), "");
  EXPECT_EQ(JobsLeft(), "");
}

}  // namespace
}  // namespace rsl::backend
