// PlanContainer's OCI config for a step with placed GPUs (docs/image.md "GPUs in containers"):
// fake device nodes (symlinks to /dev/null, char 1:3) in a directory named by
// RSL_GPU_DEVICE_DIR, and a fake nvidia-container-runtime-hook on PATH. No runc here:
// container_test.cc runs the same config.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

#include "backend/container.h"
#include "base/codes.h"
#include "base/test_util.h"

namespace rsl::backend {
namespace {

using nlohmann::json;

class ContainerPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st;
    ASSERT_EQ(stat("/dev/null", &st), 0);
    null_major_ = int64_t(major(st.st_rdev));
    null_minor_ = int64_t(minor(st.st_rdev));
    ASSERT_EQ(mkdir(dir_.Sub("dev").c_str(), 0755), 0);
    for (const char* n : {"nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl"}) {
      ASSERT_EQ(symlink("/dev/null", dir_.Sub(std::string("dev/") + n).c_str()), 0);
    }
    setenv("RSL_GPU_DEVICE_DIR", dir_.Sub("dev").c_str(), 1);
    const char* path = getenv("PATH");
    old_path_ = path ? path : "";
    setenv("PATH", (dir_.Sub("nohook") + ":/usr/bin:/bin").c_str(), 1);
    image_.rootfs = dir_.Sub("rootfs");
    options_.runc = "runc";
    options_.runc_root = dir_.Sub("runc");
    options_.containers_dir = dir_.Sub("containers");
    options_.cinit = dir_.Sub("cinit");
    spec_.attempt_id = "run-1/train/1";
    spec_.argv = {"/bin/true"};
  }
  void TearDown() override {
    unsetenv("RSL_GPU_DEVICE_DIR");
    setenv("PATH", old_path_.c_str(), 1);
  }

  std::map<std::string, std::string> Env(const json& config) {
    std::map<std::string, std::string> out;
    for (const auto& kv : config["process"]["env"]) {
      std::string s = kv.get<std::string>();
      out[s.substr(0, s.find('='))] = s.substr(s.find('=') + 1);
    }
    return out;
  }

  rsl::testing::TempDir dir_{"rsl-container-plan"};
  std::string old_path_;
  image::CachedImage image_;
  ContainerOptions options_;
  LaunchSpec spec_;
  int64_t null_major_ = 0, null_minor_ = 0;
};

TEST_F(ContainerPlanTest, NoGpusNoDevicesNoHook) {
  auto p = PlanContainer(spec_, image_, options_);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_FALSE(p->config["linux"].contains("devices"));
  ASSERT_EQ(p->config["linux"]["resources"]["devices"].size(), 1u);
  EXPECT_EQ(p->config["linux"]["resources"]["devices"][0]["allow"], false);
  EXPECT_FALSE(p->config.contains("hooks"));
  EXPECT_EQ(Env(p->config).count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(Env(p->config).count("NVIDIA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(p->gpus, "");
}

TEST_F(ContainerPlanTest, PlacedGpusAreTheirDevicesRenumberedFromZero) {
  spec_.env["CUDA_VISIBLE_DEVICES"] = "1,3";
  auto p = PlanContainer(spec_, image_, options_);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  const json& devices = p->config["linux"]["devices"];
  std::vector<std::string> paths;
  for (const auto& d : devices) {
    paths.push_back(d["path"]);
    EXPECT_EQ(d["type"], "c");
    EXPECT_EQ(d["major"], null_major_);
    EXPECT_EQ(d["minor"], null_minor_);
    EXPECT_EQ(d["fileMode"], 0666);
    EXPECT_EQ(d["uid"], 0);
    EXPECT_EQ(d["gid"], 0);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidia3", "/dev/nvidiactl"}));
  const json& rules = p->config["linux"]["resources"]["devices"];
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_EQ(rules[0]["allow"], false);  // the default deny first
  for (size_t i = 1; i < rules.size(); ++i) {
    EXPECT_EQ(rules[i]["allow"], true);
    EXPECT_EQ(rules[i]["type"], "c");
    EXPECT_EQ(rules[i]["major"], null_major_);
    EXPECT_EQ(rules[i]["minor"], null_minor_);
    EXPECT_EQ(rules[i]["access"], "rwm");
  }
  auto env = Env(p->config);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "1,3");
  EXPECT_EQ(env["RSL_GPU_HOST_INDICES"], "1,3");
  EXPECT_FALSE(p->config.contains("hooks"));
  EXPECT_EQ(p->gpus, "GPUs 1,3 as 0,1: /dev/nvidia1 /dev/nvidia3 /dev/nvidiactl");
}

TEST_F(ContainerPlanTest, AMissingDeviceNodeFailsTheStep) {
  spec_.env["CUDA_VISIBLE_DEVICES"] = "2,5";
  auto p = PlanContainer(spec_, image_, options_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, codes::kGpuDeviceNotFound);
  EXPECT_NE(p.error().message.find(dir_.Sub("dev/nvidia5")), std::string::npos)
      << p.error().message;
  EXPECT_EQ(p.error().message.find("nvidia2"), std::string::npos) << p.error().message;
  EXPECT_EQ(p.error().value, dir_.Sub("dev/nvidia5"));
  EXPECT_NE(p.error().hint.find("RSL_GPU_DEVICE_DIR"), std::string::npos);
}

TEST_F(ContainerPlanTest, DeclaredNotProbedGpusRunWithoutTheMissingNodes) {
  spec_.env["CUDA_VISIBLE_DEVICES"] = "2,5";
  spec_.env["RSL_GPUS_DECLARED_NOT_PROBED"] = "1";
  auto p = PlanContainer(spec_, image_, options_);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  std::vector<std::string> paths;
  for (const auto& d : p->config["linux"]["devices"]) paths.push_back(d["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidia2", "/dev/nvidiactl"}));
  EXPECT_EQ(Env(p->config)["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_NE(p->gpus.find("no device node " + dir_.Sub("dev/nvidia5")), std::string::npos)
      << p->gpus;
}

TEST_F(ContainerPlanTest, NotAnIndexListIsLeftAlone) {
  spec_.env["CUDA_VISIBLE_DEVICES"] = "GPU-8a3c";
  auto p = PlanContainer(spec_, image_, options_);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_FALSE(p->config["linux"].contains("devices"));
  EXPECT_EQ(Env(p->config)["CUDA_VISIBLE_DEVICES"], "GPU-8a3c");
}

TEST_F(ContainerPlanTest, SlurmsPlanLeavesGpusToSlurm) {
  spec_.env["CUDA_VISIBLE_DEVICES"] = "7";  // no such node here: no error either
  options_.gpu_devices = false;
  auto p = PlanContainer(spec_, image_, options_);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_FALSE(p->config["linux"].contains("devices"));
  EXPECT_EQ(Env(p->config)["CUDA_VISIBLE_DEVICES"], "7");
}

TEST_F(ContainerPlanTest, TheToolkitHookWhereInstalled) {
  std::string bin = dir_.Sub("hookbin");
  ASSERT_EQ(mkdir(bin.c_str(), 0755), 0);
  std::string hook = dir_.Write("hookbin/nvidia-container-runtime-hook", "#!/bin/sh\nexit 0\n");
  ASSERT_EQ(chmod(hook.c_str(), 0755), 0);
  setenv("PATH", (bin + ":/usr/bin:/bin").c_str(), 1);
  spec_.env["CUDA_VISIBLE_DEVICES"] = "0";
  auto p = PlanContainer(spec_, image_, options_);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  ASSERT_TRUE(p->config.contains("hooks"));
  const json& pre = p->config["hooks"]["prestart"];
  ASSERT_EQ(pre.size(), 1u);
  EXPECT_EQ(pre[0]["path"], hook);
  EXPECT_EQ(pre[0]["args"], json({"nvidia-container-runtime-hook", "prestart"}));
  EXPECT_NE(std::find(pre[0]["env"].begin(), pre[0]["env"].end(), "NVIDIA_VISIBLE_DEVICES=0"),
            pre[0]["env"].end());
  // No GPUs placed: no hook, even where it is installed.
  spec_.env.erase("CUDA_VISIBLE_DEVICES");
  auto q = PlanContainer(spec_, image_, options_);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->config.contains("hooks"));
}

}  // namespace
}  // namespace rsl::backend
