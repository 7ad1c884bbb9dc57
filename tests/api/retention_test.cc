// Retention end to end: rsl-controller --retain-versions collects old finished runs' history
// (steps, events, logs, run directory) and keeps what audit and outputs need; `seedctl gc`
// does the same to a local state directory (label `api`).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness.h"

namespace rsl::apitest {
namespace {

using Json = nlohmann::json;

std::string Yaml(const std::string& name, const std::string& out_dir, const std::string& tag) {
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
         "metadata: {name: " +
         name +
         ", namespace: risk}\n"
         "spec:\n"
         "  data:\n    output: {uri: \"file://" +
         out_dir +
         "\"}\n"
         "  pipeline:\n"
         "    - name: train\n"
         "      command: [\"sh\", \"-c\", \"echo " +
         tag + "; echo " + tag + " > $RSL_OUTPUT/model.txt\"]\n";
}

Json StatusJson(Controller& c, const std::string& token, const std::string& id) {
  CmdResult s = c.Seedctl(token, {"workload", "status", "--id", id, "-o", "json"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  return Json::parse(s.out, nullptr, false);
}

TEST(RetentionTest, ControllerCollectsOldRunsAndKeepsSpecOutcomeAndOutputs) {
  Controller c;
  ASSERT_TRUE(c.Start()) << c.Log();
  std::string editor = c.CreateToken("risk", "editor", "eddie");
  std::string out = c.work_dir() + "/published";
  std::vector<std::string> ids;
  for (int i = 1; i <= 3; ++i) {
    WriteText(c.work_dir() + "/w.yaml",
              Yaml("kept", out + std::to_string(i), "v" + std::to_string(i)));
    CmdResult r = c.Seedctl(editor, {"workload", "submit", "-f", "w.yaml"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ids.push_back(IdFromSubmit(r.out));
    ASSERT_EQ(c.WaitPhase(editor, ids.back()), "SUCCEEDED") << c.Log();
  }
  std::vector<std::string> run_dirs;
  for (const auto& id : ids) {
    std::string run = StatusJson(c, editor, id)["status"]["runId"];
    run_dirs.push_back(c.state_dir() + "-runs/" + run);
    ASSERT_TRUE(std::filesystem::exists(run_dirs.back())) << run_dirs.back();
  }
  // Restarted with a policy: it applies it at once (then every minute).
  ASSERT_EQ(c.Terminate(), 0);
  c.UseArgs({"--retain-versions", "1"});
  ASSERT_TRUE(c.Start()) << c.Log();
  // Applied right after the listening line: wait for its report.
  for (int i = 0; i < 300 && c.Log().find("retention collected") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(c.Log().find("retention collected 2 finished runs"), std::string::npos) << c.Log();

  for (int i = 0; i < 2; ++i) {
    Json st = StatusJson(c, editor, ids[size_t(i)]);
    EXPECT_EQ(st["status"]["phase"], "SUCCEEDED") << "the outcome stays";
    EXPECT_FALSE(st["status"].value("historyCollectedAt", "").empty()) << st.dump();
    EXPECT_EQ(st["status"]["committedUri"], out + std::to_string(i + 1));
    EXPECT_TRUE(st["status"]["steps"].empty()) << st.dump();
    EXPECT_FALSE(std::filesystem::exists(run_dirs[size_t(i)])) << run_dirs[size_t(i)];
    // Committed outputs are never touched.
    EXPECT_EQ(ReadText(out + std::to_string(i + 1) + "/train/model.txt"),
              "v" + std::to_string(i + 1) + "\n");
    CmdResult d = c.Seedctl(editor, {"workload", "describe", "--id", ids[size_t(i)]});
    EXPECT_NE(d.out.find("History:"), std::string::npos) << d.out;
    EXPECT_NE(d.out.find("by the retention policy"), std::string::npos) << d.out;
  }
  Json newest = StatusJson(c, editor, ids[2]);
  EXPECT_EQ(newest["status"].value("historyCollectedAt", ""), "") << "the newest stays whole";
  EXPECT_EQ(newest["status"]["steps"].size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(run_dirs[2]));
  CmdResult logs = c.Seedctl(editor, {"workload", "logs", "--id", ids[2], "--step", "train"});
  EXPECT_EQ(logs.out, "v3\n");

  // The spec stays: a collected version can still be rolled back to, and runs as it was.
  CmdResult rb = c.Seedctl(editor, {"rollback", "--id", ids[0], "-o", "json"});
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  std::string again = Json::parse(rb.out)["metadata"]["id"];
  ASSERT_EQ(c.WaitPhase(editor, again), "SUCCEEDED") << c.Log();
  CmdResult rlogs = c.Seedctl(editor, {"workload", "logs", "--id", again, "--step", "train"});
  EXPECT_EQ(rlogs.out, "v1\n");
  CmdResult hist = c.Seedctl(editor, {"workload", "history", "--name", "kept", "-o", "json"});
  EXPECT_EQ(Json::parse(hist.out)["items"].size(), 4u) << "every version is still listed";
}

TEST(RetentionTest, SeedctlGcCollectsALocalStateDirectory) {
  Controller c;  // for its temporary directories and seedctl path only
  std::string state = c.work_dir() + "/state";
  for (int i = 1; i <= 3; ++i) {
    WriteText(c.work_dir() + "/w.yaml",
              Yaml("local", c.work_dir() + "/out" + std::to_string(i), "l" + std::to_string(i)));
    CmdResult r =
        RunCmd({SeedctlPath(), "run", "-f", "w.yaml", "--state-dir", state}, {}, c.work_dir());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  CmdResult none = RunCmd({SeedctlPath(), "gc", "--state-dir", state}, {}, c.work_dir());
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("INVALID_ARGUMENT"), std::string::npos) << none.err;

  CmdResult dry =
      RunCmd({SeedctlPath(), "gc", "--state-dir", state, "--keep-versions", "1", "--dry-run"}, {},
             c.work_dir());
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("would collect 2 finished runs"), std::string::npos) << dry.out;
  size_t runs_before = 0;
  for (auto& e : std::filesystem::directory_iterator(state + "-runs"))
    runs_before += e.is_directory();
  EXPECT_EQ(runs_before, 3u);

  CmdResult gc =
      RunCmd({SeedctlPath(), "gc", "--state-dir", state, "--keep-versions", "1"}, {}, c.work_dir());
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("collected 2 finished runs"), std::string::npos) << gc.out;
  size_t runs_after = 0;
  for (auto& e : std::filesystem::directory_iterator(state + "-runs"))
    runs_after += e.is_directory();
  EXPECT_EQ(runs_after, 1u);
  CmdResult twice =
      RunCmd({SeedctlPath(), "gc", "--state-dir", state, "--keep-versions", "1"}, {}, c.work_dir());
  EXPECT_NE(twice.out.find("collected 0 finished runs"), std::string::npos) << twice.out;

  CmdResult missing =
      RunCmd({SeedctlPath(), "gc", "--state-dir", c.work_dir() + "/nope", "--keep-for", "7d"}, {},
             c.work_dir());
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("NOT_FOUND"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace rsl::apitest
