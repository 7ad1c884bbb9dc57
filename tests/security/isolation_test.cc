// Steps cannot reach the control plane nor another namespace (docs/security.md): a hostile
// step of namespace team-b (attack.py) tries to forge an admin token in the database, read
// the database and its WAL for team-a's secret, list the state and runs directories, read
// and write team-a's staging while team-a's step runs, read team-a's step's environment
// through /proc and talk to the step supervisor's socket. Every attempt must fail, the
// forged token must not work, and nothing of team-a's secret may reach team-b's log, events
// or describe. The same step must still write its own output, working directory and
// metrics. Runs on the local backend against a real rsl-controller.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "harness.h"

namespace rsl::apitest {
namespace {

namespace fs = std::filesystem;

constexpr char kSecretPrefix[] = "TEAMA-SECRET-";

std::string Workload(const std::string& name, const std::string& ns, const std::string& step) {
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: " + name +
         ", namespace: " + ns +
         "}\nspec:\n  resources: {cpu: \"1\", memory: 256Mi}\n  pipeline:\n" + step;
}

int Mode(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return int(st.st_mode & 07777);
}

// The log of `step` once it holds `needle` ("" when it never does within the time).
std::string WaitLog(Controller& c, const std::string& token, const std::string& id,
                    const std::string& step, const std::string& needle) {
  for (int i = 0; i < 300; ++i) {
    CmdResult r = c.Seedctl(token, {"workload", "logs", "--id", id, "--step", step});
    if (r.out.find(needle) != std::string::npos) return r.out;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

TEST(IsolationTest, AHostileStepReachesNeitherTheControlPlaneNorAnotherNamespace) {
  Controller c;
  ASSERT_TRUE(c.Start()) << c.Log();
  std::string admin = c.CreateToken("*", "admin", "ada");
  std::string team_a = c.CreateToken("team-a", "editor", "alice");
  std::string team_b = c.CreateToken("team-b", "editor", "mallory");
  const std::string secret = std::string(kSecretPrefix) + std::to_string(getpid()) + "-q7Zx";

  CmdResult created =
      c.Seedctl(team_a, {"secret", "create", "api-key", "--from-literal", "API_KEY=" + secret});
  ASSERT_EQ(created.exit_code, 0) << created.err;

  // team-a: a step that holds the secret in its environment and a private output, and
  // stays alive while team-b's step runs.
  WriteText(
      c.work_dir() + "/victim.yaml",
      Workload("victim", "team-a",
               "    - name: hold\n"
               "      command: [\"sh\", \"-c\", \"echo private-$API_KEY > $RSL_OUTPUT/private.txt; "
               "echo staging=$RSL_OUTPUT; sleep 120\"]\n"
               "      envFrom: [{secretRef: api-key}]\n"));
  CmdResult va = c.Seedctl(team_a, {"workload", "submit", "-f", "victim.yaml"});
  ASSERT_EQ(va.exit_code, 0) << va.err;
  std::string victim_id = IdFromSubmit(va.out);
  std::string victim_log = WaitLog(c, team_a, victim_id, "hold", "staging=");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(victim_log, m, std::regex("staging=(\\S+)"))) << victim_log;
  std::string victim_staging = m[1];
  ASSERT_TRUE(fs::exists(victim_staging + "/private.txt"));

  // team-b: the attack, from a file every user may read.
  std::string attack = c.work_dir() + "/attack.py";
  WriteText(attack, ReadText(RSL_ATTACK_SCRIPT));
  chmod(attack.c_str(), 0644);
  chmod(c.work_dir().c_str(), 0755);
  std::string runs_dir = c.state_dir() + "-runs";
  std::string root_only = c.work_dir() + "/root-only.json";
  WriteText(root_only, "{\"stolen\": 1}");
  chmod(root_only.c_str(), 0600);
  WriteText(c.work_dir() + "/attack.yaml",
            Workload("attack", "team-b",
                     "    - name: attack\n"
                     "      command: [\"/usr/bin/python3\", \"" +
                         attack +
                         "\"]\n"
                         "      env:\n"
                         "        ATTACK_STATE_DIR: \"" +
                         c.state_dir() +
                         "\"\n"
                         "        ATTACK_RUNS_DIR: \"" +
                         runs_dir +
                         "\"\n"
                         "        ATTACK_VICTIM_STAGING: \"" +
                         victim_staging +
                         "\"\n"
                         "        ATTACK_SECRET_PREFIX: \"" +
                         kSecretPrefix +
                         "\"\n"
                         "    - name: after\n"
                         "      command: [\"true\"]\n"
                         "      dependsOn: [attack]\n"
                         "      when: \"output.attack.metrics.attacks == 1\"\n"
                         // Its metrics file a link to a file only root may read: the
                         // controller (root) must not follow it.
                         "    - name: planter\n"
                         "      command: [\"sh\", \"-c\", \"ln -s " +
                         root_only + " $RSL_METRICS_FILE\"]\n"));
  CmdResult vb = c.Seedctl(team_b, {"workload", "submit", "-f", "attack.yaml"});
  ASSERT_EQ(vb.exit_code, 0) << vb.err;
  std::string attack_id = IdFromSubmit(vb.out);
  ASSERT_EQ(c.WaitPhase(team_b, attack_id, 60000), "SUCCEEDED")
      << c.Seedctl(team_b, {"workload", "events", "--id", attack_id}).out;

  CmdResult log = c.Seedctl(team_b, {"workload", "logs", "--id", attack_id, "--step", "attack"});
  ASSERT_EQ(log.exit_code, 0) << log.err;
  for (const char* name :
       {"forge-token", "read-db", "grep-db", "grep-wal", "list-state", "list-runs",
        "list-victim-staging", "read-victim-output", "write-victim-staging", "list-victim-run",
        "read-victim-logs", "environ-of-others", "supervisor-socket"}) {
    EXPECT_NE(log.out.find(std::string(name) + ": DENIED"), std::string::npos)
        << name << " was not denied:\n"
        << log.out;
  }
  for (const char* name : {"own-output", "own-workdir"}) {
    EXPECT_NE(log.out.find(std::string(name) + ": ALLOWED"), std::string::npos)
        << name << " should work:\n"
        << log.out;
  }
  // It ran as an unprivileged identity of its own, not the controller's (root here).
  std::smatch uid;
  ASSERT_TRUE(std::regex_search(log.out, uid, std::regex("uid (\\d+) gid (\\d+) groups \\[\\]")))
      << log.out;
  EXPECT_NE(uid[1], std::to_string(getuid()));
  EXPECT_NE(uid[1], "0");

  // Nothing of team-a's secret anywhere team-b (or the audit) can see.
  std::vector<CmdResult> seen = {
      log,
      c.Seedctl(team_b, {"workload", "events", "--id", attack_id, "-o", "json"}),
      c.Seedctl(team_b, {"workload", "describe", "--id", attack_id, "-o", "json"}),
      c.Seedctl(team_b, {"workload", "status", "--id", attack_id, "-o", "json"}),
  };
  for (const auto& r : seen) EXPECT_EQ(r.out.find(secret), std::string::npos) << r.out;
  // The metrics the step wrote into its own working directory arrived: `after` ran. The
  // planted link was not followed: the metrics were ignored, with an event, and the file's
  // content is nowhere.
  auto status = nlohmann::json::parse(seen[3].out, nullptr, false);
  std::map<std::string, std::string> phase;
  for (const auto& st : status["status"]["steps"]) {
    phase[st.value("name", "")] = st.value("phase", "");
  }
  EXPECT_EQ(phase["after"], "SUCCEEDED") << seen[3].out;
  EXPECT_EQ(phase["planter"], "SUCCEEDED") << seen[3].out;
  EXPECT_NE(seen[1].out.find("MetricsIgnored"), std::string::npos) << seen[1].out;
  EXPECT_EQ(seen[1].out.find("stolen"), std::string::npos) << seen[1].out;

  // The forged token (had it been written) must not answer; the database holds no mallory.
  CmdResult forged = c.Seedctl("x", {"whoami"});
  EXPECT_NE(forged.exit_code, 0) << forged.out;
  // team-a's output is untouched, the injected supervisor launch never ran.
  EXPECT_FALSE(fs::exists(victim_staging + "/planted"));
  EXPECT_EQ(ReadText(victim_staging + "/private.txt"), "private-" + secret + "\n");
  EXPECT_FALSE(fs::exists("/tmp/evil.exit"));

  // The layout that makes it so.
  EXPECT_EQ(Mode(c.state_dir()), 0700);
  EXPECT_EQ(Mode(runs_dir), 0711);
  EXPECT_EQ(Mode(victim_staging), 0700);
  EXPECT_EQ(Mode(fs::path(victim_staging).parent_path().parent_path().string()), 0711);
  EXPECT_EQ(Mode(fs::path(victim_staging).parent_path().parent_path().string() + "/attempts"),
            0700);

  CmdResult cancel = c.Seedctl(team_a, {"workload", "cancel", "--id", victim_id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(c.WaitPhase(team_a, victim_id, 60000), "CANCELLED");
}

}  // namespace
}  // namespace rsl::apitest
