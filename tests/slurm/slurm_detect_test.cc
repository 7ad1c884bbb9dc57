// `rsl-controller detect` against the fixture's real Slurm cluster (three nodes, partition
// debug): it finds slurmctld answering, writes the slurm backend with the default partition,
// and a controller starts from that file alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "harness.h"

namespace rsl::apitest {
namespace {

TEST(SlurmDetectTest, FindsTheClusterAndItsConfigStartsTheController) {
  Controller c;
  const std::string home = c.root() + "/home";
  std::filesystem::create_directories(home);
  std::filesystem::create_directories(c.root() + "/etc");
  const std::string slurm_conf = RSL_SLURM_TEST_DIR "/etc/slurm.conf";
  const char* path = std::getenv("PATH");
  const std::map<std::string, std::string> env = {
      {"SLURM_CONF", slurm_conf},
      {"HOME", home},
      {"KUBECONFIG", ""},
      {"HADOOP_CONF_DIR", ""},
      {"PATH", path == nullptr ? "/usr/bin:/bin" : path}};
  CmdResult r =
      RunCmd({ControllerPath(), "detect", "--state-dir", c.state_dir(), "--listen", "127.0.0.1:0"},
             env, c.root());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("#   cluster rsl, 3 nodes, partitions debug (default debug)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("#   features: cpu_only, fp16_support, tensor_core\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("backend: \"slurm\"\nslurmConf: \"" + slurm_conf +
                       "\"\nslurmPartition: \"debug\"\n"),
            std::string::npos)
      << r.out;

  const std::string config = c.root() + "/etc/controller.yaml";
  WriteText(config, r.out);
  c.UseConfigFile(config);
  ASSERT_TRUE(c.Start()) << c.Log() << "\nconfig:\n" << r.out;
  EXPECT_NE(c.Log().find("backend slurm)"), std::string::npos) << c.Log();
  EXPECT_EQ(c.Terminate(), 0) << c.Log();
}

}  // namespace
}  // namespace rsl::apitest
