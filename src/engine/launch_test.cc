// Engine tests of launches: the placement defaults, launches in bounded turns, and the launch
// record (what recovery adopts an attempt with).
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>

#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/engine_test_util.h"
#include "engine/testing.h"
#include "spec/parse.h"

namespace rsl::engine {
namespace {

using testing::FakeBackend;
using testing::FakeClock;
using testing::Find;
using testing::Fixture;
using testing::FreshDir;
using testing::Has;
using testing::Header;
using testing::Parse;
using testing::WaitUntil;

TEST(PlacementDefaultsTest, UnrequestedStepsRunCoresPlusFourAtOnce) {
  sched::Node two, sixteen;
  two.cpu_millis = 2000;
  sixteen.cpu_millis = 16000;
  EXPECT_EQ(DefaultCpuMillis({two}), 333);           // 6 at once (ninja's default: 4)
  EXPECT_EQ(DefaultCpuMillis({two, sixteen}), 800);  // the largest node: 20 at once
  EXPECT_EQ(DefaultCpuMillis({}), 1000);
}

TEST(EngineTest, UnrequestedStepsFillTheNodeWithFourExtra) {
  Fixture f("jobs");  // one node of 8 cores
  std::string pipeline = "  pipeline:\n";
  for (int i = 0; i < 14; ++i) {
    pipeline += "    - {name: s" + std::to_string(i) + ", command: [x]}\n";
  }
  auto id = f.engine->Submit(Parse(Header("jobs") + pipeline), "alice");
  ASSERT_TRUE(id.ok());
  auto first = f.backend.WaitLaunch(12);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(f.backend.launch_count(), 12u);  // 8 cores + 4, the other two wait
  f.backend.Succeed(first.attempt_id);
  EXPECT_FALSE(f.backend.WaitLaunch(13).attempt_id.empty());  // a slot freed: the next one
}

// A run with more ready steps than a turn may launch: each turn launches at most the cap, and
// the rest follow in the next turns at once (no exit or timer needed). Seen from the backend:
// when it is asked to launch an attempt, the store holds that turn's attempts and no more.
TEST(EngineTest, AReadyStepFloodIsLaunchedInBoundedTurns) {
  struct CountingBackend : FakeBackend {
    store::Store* store = nullptr;
    std::mutex mu;
    std::vector<size_t> durable_at_launch;  // attempts in the store at each launch
    Status Launch(const backend::LaunchSpec& spec) override {
      auto attempts = store->ListAttempts(spec.run_id);
      {
        std::lock_guard<std::mutex> lock(mu);
        durable_at_launch.push_back(attempts.ok() ? attempts->size() : 0);
      }
      return FakeBackend::Launch(spec);
    }
  };
  std::string dir = FreshDir("flood");
  auto s = store::OpenSqliteStore(dir);
  ASSERT_TRUE(s.ok());
  CountingBackend backend;
  backend.queues = true;  // every step is handed over at once, as a cluster scheduler takes them
  backend.store = s->get();
  FakeClock clock;
  EngineOptions opts;
  opts.state_dir = dir;
  opts.env = &clock;
  opts.max_launches_per_run_per_turn = 4;
  Engine engine(s->get(), &backend, Hooks{}, opts);
  ASSERT_TRUE(engine.Start().ok());
  std::string pipeline = "  pipeline:\n";
  for (int i = 0; i < 10; ++i)
    pipeline += "    - {name: s" + std::to_string(i) + ", command: [x]}\n";
  auto id = engine.Submit(Parse(Header("flood") + pipeline), "alice");
  ASSERT_TRUE(id.ok());
  ASSERT_FALSE(backend.WaitLaunch(10).attempt_id.empty());
  std::lock_guard<std::mutex> lock(backend.mu);
  // Turns of 4, 4 and 2: the k-th launch (1-based) sees the attempts of its own turn and of
  // the turns before it, never those of a later turn.
  EXPECT_EQ(backend.durable_at_launch, (std::vector<size_t>{4, 4, 4, 4, 8, 8, 8, 8, 10, 10}));
}

TEST(LaunchJsonTest, RoundTripsEveryFieldAndMasksSecrets) {
  backend::LaunchSpec s;
  s.attempt_id = "wl-1/train/2";
  s.run_id = "wl-1";
  s.workload_name = "fraud";
  s.namespace_ = "team-a";
  s.step = "train";
  s.attempt = 2;
  s.argv = {"sh", "-c", "echo \"$X\"\n\\ done"};
  s.env = {{"PATH", "/usr/bin"},
           {"TOKEN", "s3cr3t"},
           {"ODD",
            "bad\xFF"
            "byte\x01"}};
  s.secret_values = {"s3cr3t"};
  s.workdir = "/w/train.2";
  s.make_dirs = {"/s/train.2"};
  s.log_path = "/a/train.2.log";
  s.exit_file = "/a/train.2.exit";
  s.cpu_millis = 1500;
  s.memory_bytes = int64_t{1} << 40;
  s.gpus = 2;
  s.capabilities = {"fp16", "nvlink"};
  s.node = "n1";
  s.labels = {{"team", "risk"}};
  s.timeout_ms = 90'000;
  std::string text = LaunchToJson(s, LaunchBase{});
  EXPECT_EQ(text.find("s3cr3t"), std::string::npos) << text;
  auto back = LaunchFromJson(text, LaunchBase{});
  ASSERT_TRUE(back.ok()) << text;
  EXPECT_EQ(back->attempt_id, s.attempt_id);
  EXPECT_EQ(back->run_id, s.run_id);
  EXPECT_EQ(back->workload_name, s.workload_name);
  EXPECT_EQ(back->namespace_, s.namespace_);
  EXPECT_EQ(back->step, s.step);
  EXPECT_EQ(back->attempt, 2);
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->env.at("PATH"), "/usr/bin");
  EXPECT_EQ(back->env.at("TOKEN"), "***");
  EXPECT_EQ(back->env.at("ODD"),
            "bad\xEF\xBF\xBD"
            "byte\x01");
  EXPECT_TRUE(back->secret_values.empty());
  EXPECT_EQ(back->workdir, s.workdir);
  EXPECT_EQ(back->make_dirs, s.make_dirs);
  EXPECT_EQ(back->log_path, s.log_path);
  EXPECT_EQ(back->exit_file, s.exit_file);
  EXPECT_EQ(back->cpu_millis, 1500);
  EXPECT_EQ(back->memory_bytes, int64_t{1} << 40);
  EXPECT_EQ(back->gpus, 2);
  EXPECT_EQ(back->capabilities, s.capabilities);
  EXPECT_EQ(back->node, "n1");
  EXPECT_EQ(back->labels, s.labels);
  ASSERT_TRUE(back->timeout_ms.has_value());
  EXPECT_EQ(*back->timeout_ms, 90'000);
  s.timeout_ms.reset();
  back = LaunchFromJson(LaunchToJson(s, LaunchBase{}), LaunchBase{});
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->timeout_ms.has_value());
  EXPECT_FALSE(back->serving.has_value());
}

// A serving step's settings survive the launch record whole: recovery adopts its replica set
// with them (the endpoint's port, the probe, the autoscaling bounds).
TEST(LaunchJsonTest, ServingSettingsRoundTrip) {
  backend::LaunchSpec s;
  s.attempt_id = "run-1/serve/1";
  s.version_id = "wl-20261202-0a1b2c3d";
  backend::ServingLaunch sv;
  sv.autoscaling = {70, 2, 4, 5'000};
  sv.readiness.path = "/ready";
  sv.readiness.port = 9000;
  sv.readiness.period_ms = 2'000;
  sv.readiness.failure_threshold = 5;
  sv.port = 18080;
  sv.ready_timeout_ms = 60'000;
  s.serving = sv;
  auto back = LaunchFromJson(LaunchToJson(s, LaunchBase{}), LaunchBase{});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->version_id, s.version_id);
  ASSERT_TRUE(back->serving.has_value());
  EXPECT_EQ(back->serving->autoscaling.target_utilization, 70);
  EXPECT_EQ(back->serving->autoscaling.min_replicas, 2);
  EXPECT_EQ(back->serving->autoscaling.max_replicas, 4);
  EXPECT_EQ(back->serving->autoscaling.scale_down_delay_ms, 5'000);
  EXPECT_EQ(back->serving->readiness.path, "/ready");
  EXPECT_EQ(back->serving->readiness.port, 9000);
  EXPECT_EQ(back->serving->readiness.period_ms, 2'000);
  EXPECT_EQ(back->serving->readiness.failure_threshold, 5);
  EXPECT_EQ(back->serving->port, 18080);
  EXPECT_EQ(back->serving->ready_timeout_ms, 60'000);
  // A record from before the settings were kept: serving, with the defaults.
  back = LaunchFromJson(R"({"attempt_id":"run-1/serve/1","serving":1})", LaunchBase{});
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->serving.has_value());
  EXPECT_EQ(back->serving->autoscaling.min_replicas, 1);
  EXPECT_FALSE(back->serving->port.has_value());
}

// What a run's attempts share is left out of their records and comes back from the base:
// exactly, field by field, including the values that only look like the shared ones.
TEST(LaunchJsonTest, ARecordLeavesOutWhatItsRunSharesAndReadsBackWhole) {
  std::map<std::string, std::string> labels = {
      {"namespace", "team-a"}, {"team", "risk"}, {"workload", "fraud"}};
  std::map<std::string, std::string> inherited = {
      {"HOME", "/root"}, {"LANG", "C.UTF-8"}, {"PATH", "/usr/local/bin:/usr/bin:/bin"}};
  LaunchBase base;
  base.run_id = "run-1";
  base.version_id = "wl-1";
  base.workload_name = "fraud";
  base.namespace_ = "team-a";
  base.run_dir = "/var/rsl/runs/run-1";
  base.labels = &labels;
  base.env = &inherited;
  backend::LaunchSpec s;
  s.run_id = "run-1";
  s.version_id = "wl-1";
  s.workload_name = "fraud";
  s.namespace_ = "team-a";
  s.step = "train";
  s.attempt = 3;
  s.attempt_id = "run-1/train/3";
  s.argv = {"python3", "train.py"};
  s.env = {{"HOME", "/root"},                                      // inherited
           {"LANG", "en_US.UTF-8"},                                // set by the step: not inherited
           {"PATH", "/usr/local/bin:/usr/bin:/bin"},               // inherited
           {"RSL_OUTPUT", "/var/rsl/runs/run-1/staging/train.3"},  // under the run
           {"RUN_ITSELF", "/var/rsl/runs/run-1"},                  // the directory, not under it
           {"NEIGHBOUR", "/var/rsl/runs/run-10/staging/x"},        // shares only a prefix
           {"SLASHED", "/var/rsl/runs/run-1/"},                    // nothing after the slash
           {"RELATIVE", "staging/train"},                          // relative as written
           {"TOKEN", "/var/rsl/runs/run-1/secret"}};               // a secret that is a path
  s.secret_values = {"/var/rsl/runs/run-1/secret"};
  s.workdir = "/var/rsl/runs/run-1/work/train.3";
  s.make_dirs = {"/var/rsl/runs/run-1/staging/train.3"};
  s.log_path = "/var/rsl/runs/run-1/attempts/train.3.log";
  s.exit_file = "/elsewhere/train.3.exit";
  s.node = "n1";
  s.labels = labels;
  std::string text = LaunchToJson(s, base);
  for (const char* gone :
       {"/var/rsl/runs/run-1/work", "/var/rsl/runs/run-1/attempts", "wl-1", "fraud", "team-a",
        "/usr/local/bin", "risk", "\"attempt_id\"", "cpu_millis", "capabilities"}) {
    EXPECT_EQ(text.find(gone), std::string::npos) << gone << " in " << text;
  }
  // The shared variables it has with their shared values are not in it at all.
  EXPECT_EQ(text.find("HOME"), std::string::npos) << text;
  EXPECT_EQ(text.find("PATH"), std::string::npos) << text;
  EXPECT_NE(text.find("en_US.UTF-8"), std::string::npos) << text;
  EXPECT_EQ(text.find("unset"), std::string::npos) << text;
  auto back = LaunchFromJson(text, base);
  ASSERT_TRUE(back.ok()) << text;
  EXPECT_EQ(back->run_id, s.run_id);
  EXPECT_EQ(back->version_id, s.version_id);
  EXPECT_EQ(back->workload_name, s.workload_name);
  EXPECT_EQ(back->namespace_, s.namespace_);
  EXPECT_EQ(back->attempt_id, s.attempt_id);
  EXPECT_EQ(back->step, "train");
  EXPECT_EQ(back->attempt, 3);
  EXPECT_EQ(back->argv, s.argv);
  std::map<std::string, std::string> want = s.env;
  want["TOKEN"] = "***";
  EXPECT_EQ(back->env, want);
  EXPECT_EQ(back->workdir, s.workdir);
  EXPECT_EQ(back->make_dirs, s.make_dirs);
  EXPECT_EQ(back->log_path, s.log_path);
  EXPECT_EQ(back->exit_file, s.exit_file);
  EXPECT_EQ(back->node, "n1");
  EXPECT_EQ(back->labels, labels);
  EXPECT_EQ(back->cpu_millis, 0);
  EXPECT_TRUE(back->capabilities.empty());

  // What differs from the base is stored whole: another attempt id, labels a hook changed,
  // a directory list only partly under the run.
  s.attempt_id = "custom-id";
  s.labels["extra"] = "1";
  s.make_dirs = {"/var/rsl/runs/run-1/staging/train.3", "/tmp/elsewhere"};
  s.workload_name = "renamed";
  s.env.erase("HOME");  // a shared variable it lacks
  text = LaunchToJson(s, base);
  EXPECT_NE(text.find("\"unset\":[\"HOME\"]"), std::string::npos) << text;
  back = LaunchFromJson(text, base);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->attempt_id, "custom-id");
  EXPECT_EQ(back->labels, s.labels);
  EXPECT_EQ(back->make_dirs, s.make_dirs);
  EXPECT_EQ(back->workload_name, "renamed");
  EXPECT_EQ(back->env.count("HOME"), 0u);
  EXPECT_EQ(back->env.at("PATH"), "/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(back->run_id, "run-1");
}

// A record from before the base (every field whole, no "v") reads as written: nothing of
// the base is mixed in, so a run recovered after an upgrade adopts what was launched.
TEST(LaunchJsonTest, AWholeRecordIgnoresTheBase) {
  std::map<std::string, std::string> inherited = {{"PATH", "/now/bin"}};
  std::map<std::string, std::string> labels = {{"team", "now"}};
  LaunchBase base;
  base.run_id = "run-9";
  base.run_dir = "/now/run-9";
  base.labels = &labels;
  base.env = &inherited;
  auto back = LaunchFromJson(
      R"({"attempt_id":"run-1/a/1","run_id":"run-1","step":"a","attempt":1,)"
      R"("env":{"PATH":"/then/bin"},"workdir":"/then/run-1/work/a.1","labels":{"team":"then"},)"
      R"("unset":["PATH"],"workdir@":"ignored"})",
      base);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->run_id, "run-1");
  EXPECT_EQ(back->attempt_id, "run-1/a/1");
  EXPECT_EQ(back->env, (std::map<std::string, std::string>{{"PATH", "/then/bin"}}));
  EXPECT_EQ(back->workdir, "/then/run-1/work/a.1");
  EXPECT_EQ(back->labels, (std::map<std::string, std::string>{{"team", "then"}}));
  EXPECT_TRUE(back->version_id.empty());
  // Garbled: an error, never a crash.
  for (const char* bad : {"", "[]", R"({"v":2,"env@":{"X":1}})", R"({"v":2,"unset":"PATH"})",
                          R"({"v":2,"make_dirs@":[1]})"}) {
    EXPECT_FALSE(LaunchFromJson(bad, base).ok()) << bad;
  }
}

}  // namespace
}  // namespace rsl::engine
