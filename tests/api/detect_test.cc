// `rsl-controller detect` end to end: the real binary on a machine made by the test (a HOME
// with AWS files, a Hadoop configuration, a PATH without Slurm), its output saved as the
// config file, and a real controller started from that file alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace rsl::apitest {
namespace {

TEST(DetectEndToEndTest, ItsOutputStartsTheController) {
  Controller c;
  const std::string home = c.root() + "/home";
  const std::string hadoop = c.root() + "/hadoop";
  const std::string bin = c.root() + "/empty-bin";
  std::filesystem::create_directories(bin);
  std::filesystem::create_directories(c.root() + "/etc");
  std::filesystem::create_directories(home + "/.aws");
  std::filesystem::create_directories(hadoop);
  WriteText(home + "/.aws/credentials",
            "[default]\naws_access_key_id = AKIAE2EKEY\naws_secret_access_key = e2e-secret\n");
  WriteText(hadoop + "/core-site.xml",
            "<configuration><property><name>fs.defaultFS</name><value>hdfs://nn.example:8020"
            "</value></property></configuration>\n");
  // Broken on purpose: a warning on stderr, not a failure.
  WriteText(hadoop + "/hdfs-site.xml", "<configuration>\n  <property>\n");
  const std::map<std::string, std::string> env = {{"HOME", home},
                                                  {"PATH", bin},
                                                  {"HADOOP_CONF_DIR", hadoop},
                                                  {"KUBECONFIG", ""},
                                                  {"AWS_ENDPOINT_URL", "http://127.0.0.1:9000"},
                                                  {"AWS_ENDPOINT_URL_S3", ""},
                                                  {"AWS_ACCESS_KEY_ID", ""},
                                                  {"AWS_SECRET_ACCESS_KEY", ""},
                                                  {"AWS_CONFIG_FILE", ""},
                                                  {"AWS_SHARED_CREDENTIALS_FILE", ""},
                                                  {"SLURM_CONF", ""}};
  CmdResult r =
      RunCmd({ControllerPath(), "detect", "--state-dir", c.state_dir(), "--listen", "127.0.0.1:0"},
             env, c.root());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# Slurm: not used: scontrol not found on PATH\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# S3: profile default, credentials found in ~/.aws/credentials "
                       "[default]\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("#   WebHDFS http://nn.example:9870/webhdfs/v1\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("backend: \"local\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("rsl-controller detect: warning: " + hadoop +
                       "/hdfs-site.xml:3:1: CONFIG_INVALID: malformed XML: no element found"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rsl-controller detect: backend local ("), std::string::npos) << r.err;
  for (const std::string& text : {r.out, r.err}) {
    EXPECT_EQ(text.find("AKIAE2EKEY"), std::string::npos) << text;
    EXPECT_EQ(text.find("e2e-secret"), std::string::npos) << text;
  }

  const std::string config = c.root() + "/etc/controller.yaml";
  WriteText(config, r.out);
  c.UseConfigFile(config);
  ASSERT_TRUE(c.Start()) << c.Log() << "\nconfig:\n" << r.out;
  EXPECT_NE(c.Log().find("(state " + c.state_dir() + ", backend local)"), std::string::npos)
      << c.Log();
  EXPECT_EQ(c.Terminate(), 0);

  CmdResult j = RunCmd({ControllerPath(), "detect", "-o", "json"}, env, c.root());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << j.out;
  EXPECT_EQ(doc["config"]["backend"], "local");
  EXPECT_EQ(doc["config"]["stateDir"], "/var/lib/rsl");
  EXPECT_EQ(doc["found"]["hdfs"]["namenodes"][0], "nn.example:8020");

  CmdResult bad = RunCmd({ControllerPath(), "detect", "--output", "xml"}, env, c.root());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.LastErrLine(), "INVALID_ARGUMENT");
}

}  // namespace
}  // namespace rsl::apitest
