// Two workloads into one output root through rsl-controller (one engine, both runs in
// flight together): replace records the replaced run as superseded, refuse rejects the
// second with OUTPUT_CONFLICT, and the controller serves reads throughout (label `api`).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "harness.h"

namespace rsl::apitest {
namespace {

using Json = nlohmann::json;

class SharedOutputControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.Start()) << c_.Log();
    token_ = c_.CreateToken("risk", "editor", "eddie");
  }
  // Two steps into `root` with `policy`; `a` sleeps `sleep_s` first.
  std::string Submit(const std::string& name, const std::string& root, const std::string& policy,
                     int sleep_s) {
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
        "\n  namespace: risk\nspec:\n  resources: {cpu: \"1\", memory: 128Mi}\n"
        "  data:\n    output: {uri: \"file://" +
        root + "\", policy: " + policy +
        "}\n  pipeline:\n"
        "    - {name: a, command: [sh, -c, 'sleep " +
        std::to_string(sleep_s) +
        "; echo $RSL_RUN_ID > $RSL_OUTPUT/who']}\n"
        "    - {name: b, command: [sh, -c, 'echo $RSL_RUN_ID > $RSL_OUTPUT/who']}\n";
    WriteText(c_.work_dir() + "/" + name + ".yaml", yaml);
    CmdResult r = c_.Seedctl(token_, {"workload", "submit", "-f", name + ".yaml"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return IdFromSubmit(r.out);
  }
  Json Status(const std::string& id) {
    CmdResult r = c_.Seedctl(token_, {"workload", "status", "--id", id, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out, nullptr, false);
  }
  std::string Events(const std::string& id) {
    CmdResult r = c_.Seedctl(token_, {"workload", "events", "--id", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  Controller c_;
  std::string token_;
};

TEST_F(SharedOutputControllerTest, ReplaceRecordsTheEarlierCommitAsSuperseded) {
  std::string root = c_.work_dir() + "/scores";
  std::string first = Submit("first", root, "replace", 1);
  std::string second = Submit("second", root, "replace", 2);  // commits after the first
  ASSERT_EQ(c_.WaitPhase(token_, first), "SUCCEEDED") << c_.Log();
  ASSERT_EQ(c_.WaitPhase(token_, second), "SUCCEEDED") << c_.Log();
  std::string first_run = Status(first)["status"]["runId"];
  std::string second_run = Status(second)["status"]["runId"];
  auto manifest = Json::parse(ReadText(root + "/_RSL_COMMIT"));
  EXPECT_EQ(manifest["run_id"], second_run);
  for (const char* step : {"a", "b"}) {
    EXPECT_EQ(std::string(Trim(ReadText(root + "/" + step + "/who"))), second_run) << step;
  }
  std::string events = Events(first);
  EXPECT_NE(events.find("OutputSuperseded"), std::string::npos) << events;
  EXPECT_NE(events.find("replaced by run " + second_run), std::string::npos) << events;
  EXPECT_EQ(Events(second).find("OutputSuperseded"), std::string::npos);
  EXPECT_NE(Events(second).find("replaced the outputs of run " + first_run), std::string::npos);
}

TEST_F(SharedOutputControllerTest, RefuseRejectsTheSecondWhileTheFirstIsInFlight) {
  std::string root = c_.work_dir() + "/scores";
  std::string first = Submit("first", root, "refuse", 3);
  std::string second = Submit("second", root, "refuse", 0);
  ASSERT_EQ(c_.WaitPhase(token_, second), "REJECTED") << c_.Log();
  Json st = Status(second)["status"];
  EXPECT_EQ(st["failureCode"], "OUTPUT_CONFLICT");
  std::string first_run = Status(first)["status"]["runId"];
  EXPECT_NE(st["failureMessage"].get<std::string>().find(
                "run " + first_run + " is writing to the same output root " + root),
            std::string::npos)
      << st.dump();
  // The controller goes on serving, and the first run commits alone.
  CmdResult list = c_.Seedctl(token_, {"workload", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  ASSERT_EQ(c_.WaitPhase(token_, first), "SUCCEEDED") << c_.Log();
  EXPECT_EQ(Json::parse(ReadText(root + "/_RSL_COMMIT"))["run_id"], first_run);
  // Once it has ended, the same workload is admitted.
  std::string third = Submit("third", root, "refuse", 0);
  EXPECT_EQ(c_.WaitPhase(token_, third), "SUCCEEDED") << c_.Log();
}

// A real file-system failure in the commit (the root's lock cannot be made: a file where its
// directory should be): the run ends FAILED with IO_ERROR and the events say why, nothing is
// published, and the controller stays up and serves reads.
TEST_F(SharedOutputControllerTest, ACommitThatCannotLockItsRootFailsCleanlyAndReadsGoOn) {
  WriteText(c_.work_dir() + "/not-a-dir", "x");
  std::string root = c_.work_dir() + "/not-a-dir/scores";
  std::string id = Submit("blocked", root, "replace", 0);
  ASSERT_EQ(c_.WaitPhase(token_, id), "FAILED") << c_.Log();
  Json st = Status(id)["status"];
  EXPECT_EQ(st["failureCode"], "IO_ERROR");
  EXPECT_EQ(st["failureMessage"], "output commit failed: cannot create directory " + c_.work_dir() +
                                      "/not-a-dir/.scores.rsl-output: Not a directory");
  EXPECT_EQ(st["commitState"], "discarded");
  std::string events = Events(id);
  EXPECT_NE(events.find("OutputCommitFailed"), std::string::npos) << events;
  EXPECT_NE(events.find("OutputDiscarded"), std::string::npos) << events;
  EXPECT_EQ(ReadText(c_.work_dir() + "/not-a-dir"), "x");
  CmdResult list = c_.Seedctl(token_, {"workload", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("blocked"), std::string::npos) << list.out;
  // And it still runs the next workload.
  std::string next = Submit("next", c_.work_dir() + "/scores", "replace", 0);
  EXPECT_EQ(c_.WaitPhase(token_, next), "SUCCEEDED") << c_.Log();
}

}  // namespace
}  // namespace rsl::apitest
