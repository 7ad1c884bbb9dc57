#include "serve/serving_state.h"

#include <gtest/gtest.h>

namespace rsl::serve {
namespace {

backend::LaunchSpec Parent() {
  backend::LaunchSpec s;
  s.attempt_id = "run-20261202-0a1b2c3d/serve/2";
  s.run_id = "run-20261202-0a1b2c3d";
  s.step = "serve";
  s.attempt = 2;
  s.workdir = "/runs/run-20261202-0a1b2c3d/work/serve.2";
  s.exit_file = "/runs/run-20261202-0a1b2c3d/attempts/serve.2.exit";
  s.log_path = "/runs/run-20261202-0a1b2c3d/attempts/serve.2.log";
  s.env = {{"PATH", "/usr/bin"}};
  s.timeout_ms = 1'000;
  s.serving = backend::ServingLaunch{};
  return s;
}

TEST(ServingStateTest, RecordRoundTrips) {
  SetRecord r;
  r.proxy_pid = 4242;
  r.proxy_dir = "/runs/x/attempts/serve.1.exit.proxy";
  r.socket = "/tmp/rsl-serve-abc/admin.sock";
  r.port = 18080;
  r.endpoint = "http://127.0.0.1:18080";
  r.server_prefix = "0a1b2c3d.1-";
  r.desired = 3;
  r.next_index = 4;
  r.serving_ready = true;
  r.started_ms = 1764633600000;
  r.superseded_by = "wl-20261202-deadbeef";
  r.replicas = {{0, 2, 40001, "", "127.0.0.1", 1, false}, {3, 1, 40002, "n2", "10.0.0.2", 0, true}};
  auto back = SetRecordFromJson(SetRecordToJson(r));
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->proxy_pid, 4242);
  EXPECT_EQ(back->proxy_dir, r.proxy_dir);
  EXPECT_EQ(back->socket, r.socket);
  EXPECT_EQ(back->port, 18080);
  EXPECT_EQ(back->endpoint, r.endpoint);
  EXPECT_EQ(back->server_prefix, r.server_prefix);
  EXPECT_EQ(back->desired, 3);
  EXPECT_EQ(back->next_index, 4);
  EXPECT_TRUE(back->serving_ready);
  EXPECT_EQ(back->started_ms, r.started_ms);
  EXPECT_EQ(back->superseded_by, r.superseded_by);
  ASSERT_EQ(back->replicas.size(), 2u);
  EXPECT_EQ(back->replicas[0].index, 0);
  EXPECT_EQ(back->replicas[0].generation, 2);
  EXPECT_EQ(back->replicas[0].port, 40001);
  EXPECT_EQ(back->replicas[0].restarts, 1);
  EXPECT_FALSE(back->replicas[0].retiring);
  EXPECT_EQ(back->replicas[1].index, 3);
  EXPECT_TRUE(back->replicas[1].retiring);
  // Where a Slurm replica runs (its node chose the port): kept for adoption.
  EXPECT_EQ(back->replicas[1].node, "n2");
  EXPECT_EQ(back->replicas[1].host, "10.0.0.2");
  EXPECT_EQ(back->replicas[0].host, "127.0.0.1");
}

TEST(ServingStateTest, AGarbledRecordIsAnError) {
  for (const char* text :
       {"", "{", "[]", R"({"port": 1})", R"({"proxy_dir": "/x", "replicas": 3})"}) {
    auto r = SetRecordFromJson(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, "INTERNAL") << text;
  }
}

TEST(ServingStateTest, TheRecordLivesBesideTheAttemptsExitRecord) {
  EXPECT_EQ(SetRecordPath(Parent()),
            "/runs/run-20261202-0a1b2c3d/attempts/serve.2.exit.serving.json");
}

TEST(ServingStateTest, ServerPrefixIsUniquePerRunAndAttempt) {
  EXPECT_EQ(ServerPrefix(Parent()), "20261202_0a1b2c3d.2-");
  backend::LaunchSpec other = Parent();
  other.run_id = "run-20261202-ffff0000";
  EXPECT_NE(ServerPrefix(other), ServerPrefix(Parent()));
  // Ids are the second of the day: a version a day later at the same second differs too.
  other.run_id = "run-20261203-0a1b2c3d";
  EXPECT_NE(ServerPrefix(other), ServerPrefix(Parent()));
  other = Parent();
  other.attempt = 3;
  EXPECT_NE(ServerPrefix(other), ServerPrefix(Parent()));
}

// A launch and a later adoption derive the same attempt, files and port.
TEST(ServingStateTest, ReplicaLaunchNamesTheReplicasOwnAttemptFilesAndPort) {
  backend::LaunchSpec r = ReplicaLaunch(Parent(), 1, 3, 41234);
  EXPECT_EQ(r.attempt_id, "run-20261202-0a1b2c3d/serve/2/r1-3");
  EXPECT_EQ(r.workdir, "/runs/run-20261202-0a1b2c3d/work/serve.2.r1-3");
  EXPECT_EQ(r.exit_file, "/runs/run-20261202-0a1b2c3d/attempts/serve.2.r1-3.exit");
  EXPECT_EQ(r.log_path, "/runs/run-20261202-0a1b2c3d/attempts/serve.2.r1-3.log");
  EXPECT_EQ(r.env.at("RSL_PORT"), "41234");
  EXPECT_EQ(r.env.at("RSL_REPLICA"), "1");
  EXPECT_EQ(r.env.at("RSL_METRICS_FILE"), r.workdir + "/.rsl-metrics.json");
  EXPECT_EQ(r.env.at("RSL_PROGRESS_FILE"), r.workdir + "/.rsl-progress");
  EXPECT_EQ(r.env.at("PATH"), "/usr/bin");
  EXPECT_FALSE(r.serving.has_value());
  EXPECT_FALSE(r.timeout_ms.has_value());
}

}  // namespace
}  // namespace rsl::serve
