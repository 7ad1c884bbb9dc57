// Config files end to end: a real rsl-controller started from `--config FILE` alone, driven by
// the real seedctl through contexts only (no --server, no SEEDCTL_* variables), and
// `seedctl config use-context` switching between two contexts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "harness.h"

namespace rsl::apitest {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = c_.root() + "/home";
    std::filesystem::create_directories(home_);
    config_ = c_.root() + "/etc/controller.yaml";
    std::filesystem::create_directories(c_.root() + "/etc");
  }

  // seedctl with a HOME of its own and nothing else saying where the server is.
  CmdResult Seedctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {SeedctlPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCmd(argv, {{"HOME", home_}, {"XDG_CONFIG_HOME", home_ + "/.config"}, {"TZ", "UTC"}},
                  c_.work_dir());
  }

  std::string TokenFile(const std::string& name, const std::string& ns) {
    std::string token = c_.CreateToken(ns, "editor");
    std::string path = home_ + "/" + name + ".token";
    WriteText(path, token + "\n");
    return path;
  }

  Controller c_;
  std::string home_;
  std::string config_;
};

TEST_F(ConfigTest, ControllerFromAConfigFileAndSeedctlThroughContexts) {
  // Relative paths in the file are taken from its directory: ../state is the state directory.
  WriteText(config_,
            "# rsl-controller settings\n"
            "listen: 127.0.0.1:0\n"
            "stateDir: ../state\n"
            "retainVersions: 10\n");
  c_.UseConfigFile(config_);
  ASSERT_TRUE(c_.Start()) << c_.Log();
  EXPECT_NE(c_.Log().find("(state " + c_.state_dir() + ", backend local)"), std::string::npos)
      << c_.Log();

  std::string risk = TokenFile("risk", "risk");
  std::string ads = TokenFile("ads", "ads");
  // No context yet: seedctl's default server is not this controller's.
  CmdResult none = Seedctl({"config", "current-context"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.LastErrLine(), "NOT_FOUND");

  CmdResult set = Seedctl({"config", "set-context", "risk", "--server", c_.server(), "--token-file",
                           risk, "-n", "risk"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  std::string contexts_file = home_ + "/.config/rsl/config.yaml";
  EXPECT_EQ(set.out, "Context \"risk\" created in " + contexts_file + ".\n");
  // The ads token, but the risk namespace: what it may not see.
  set = Seedctl({"config", "set-context", "ads", "--server", c_.server(), "--token-file", ads,
                 "--namespace", "risk"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  struct stat st {};
  ASSERT_EQ(::stat(contexts_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string text = ReadText(contexts_file);
  EXPECT_EQ(text.find("rsl_"), std::string::npos) << "a token value in the file:\n" << text;

  CmdResult use = Seedctl({"config", "use-context", "risk"});
  ASSERT_EQ(use.exit_code, 0) << use.err;
  EXPECT_EQ(use.out, "Switched to context \"risk\".\n");
  CmdResult list = Seedctl({"workload", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  CmdResult table = Seedctl({"config", "get-contexts"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  std::string server = c_.server();
  std::string pad(server.size() - 6, ' ');  // SERVER is 6 wide
  EXPECT_EQ(table.out, "CURRENT  NAME  SERVER" + pad + "  NAMESPACE\n" + "*        risk  " +
                           server + "  risk\n" + "         ads   " + server + "  risk\n");

  // Switched: the ads token in namespace risk is refused.
  ASSERT_EQ(Seedctl({"config", "use-context", "ads"}).exit_code, 0);
  EXPECT_EQ(Seedctl({"config", "current-context"}).out, "ads\n");
  CmdResult refused = Seedctl({"workload", "list"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.LastErrLine(), "FORBIDDEN") << refused.err;
  // Flags override the context: its namespace, or its token.
  CmdResult own = Seedctl({"workload", "list", "-n", "ads"});
  EXPECT_EQ(own.exit_code, 0) << own.err;
  std::string risk_token = ReadText(risk);
  risk_token.pop_back();  // the newline
  CmdResult token = Seedctl({"workload", "list", "--token", risk_token});
  EXPECT_EQ(token.exit_code, 0) << token.err;
  // And back.
  ASSERT_EQ(Seedctl({"config", "use-context", "risk"}).exit_code, 0);
  EXPECT_EQ(Seedctl({"workload", "list"}).exit_code, 0);

  // An unknown context names the known ones.
  CmdResult unknown = Seedctl({"config", "use-context", "prod"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no context named \"prod\" in " + contexts_file +
                             " (known contexts: risk, ads; "),
            std::string::npos)
      << unknown.err;
  EXPECT_EQ(unknown.LastErrLine(), "NOT_FOUND");

  // --config: another contexts file, with a context there.
  std::string other = home_ + "/other.yaml";
  ASSERT_EQ(Seedctl({"--config", other, "config", "set-context", "x", "--server", c_.server(),
                     "--token-file", risk})
                .exit_code,
            0);
  ASSERT_EQ(Seedctl({"config", "use-context", "x", "--config", other}).exit_code, 0);
  CmdResult via_other = Seedctl({"--config", other, "workload", "list", "-n", "risk"});
  EXPECT_EQ(via_other.exit_code, 0) << via_other.err;

  // Deleting the current context leaves none current.
  CmdResult del = Seedctl({"config", "delete-context", "risk"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_EQ(Seedctl({"config", "current-context"}).LastErrLine(), "NOT_FOUND");
  EXPECT_EQ(c_.Terminate(), 0);
}

// set-context changes only the fields it is given; a field given empty is cleared (kubectl's
// `set-context --namespace=""`), the others are kept.
TEST_F(ConfigTest, SetContextClearsAFieldGivenEmptyAndKeepsTheOthers) {
  const std::string token = home_ + "/t.token";
  WriteText(token, "x\n");
  ASSERT_EQ(Seedctl({"config", "set-context", "c", "--server", "https://rsl.example:7443",
                     "--token-file", token, "-n", "risk"})
                .exit_code,
            0);
  const std::string file = home_ + "/.config/rsl/config.yaml";
  std::string before = ReadText(file);
  EXPECT_NE(before.find("namespace: risk"), std::string::npos) << before;
  CmdResult cleared = Seedctl({"config", "set-context", "c", "--namespace", ""});
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_EQ(cleared.out, "Context \"c\" modified in " + file + ".\n");
  std::string after = ReadText(file);
  EXPECT_EQ(after.find("risk"), std::string::npos) << after;
  EXPECT_NE(after.find("server: https://rsl.example:7443"), std::string::npos) << after;
  EXPECT_NE(after.find(token), std::string::npos) << after;
  // Not given at all: kept.
  ASSERT_EQ(Seedctl({"config", "set-context", "c", "--server", "https://other:7443"}).exit_code, 0);
  after = ReadText(file);
  EXPECT_NE(after.find("server: https://other:7443"), std::string::npos) << after;
  EXPECT_NE(after.find(token), std::string::npos) << after;
  CmdResult list = Seedctl({"config", "get-contexts"});
  EXPECT_NE(list.out.find("https://other:7443"), std::string::npos) << list.out;
}

TEST_F(ConfigTest, AnUnknownKeyStopsTheController) {
  WriteText(config_, "listen: 127.0.0.1:0\nstateDir: ../state\nretainVersion: 10\n");
  c_.UseConfigFile(config_);
  EXPECT_FALSE(c_.Start());
  EXPECT_EQ(c_.exit_status(), 1);
  EXPECT_NE(
      c_.Log().find(config_ + ":3:1: CONFIG_INVALID retainVersion: unknown field \"retainVersion\" "
                              "(did you mean 'retainVersions'?)\nCONFIG_INVALID\n"),
      std::string::npos)
      << c_.Log();
}

}  // namespace
}  // namespace rsl::apitest
