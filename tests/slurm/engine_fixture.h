// The fixture of the Slurm engine tests: an Engine (store, plan, staging and commit) over a
// backend ("slurm" on the fixture's cluster, or "local"), as `rsl-controller` runs it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/factory.h"
#include "base/file.h"
#include "cluster_util.h"
#include "engine/engine.h"
#include "spec/parse.h"
#include "store/store.h"

namespace rsl::slurm_test {

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SlurmEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UseFixtureCluster();
    ASSERT_TRUE(PathExists(EnvVar("SLURM_CONF"))) << "run through ctest (fixture slurm_cluster)";
    EnsureAllNodesIdle();
    dir_ = ::testing::TempDir() + "slurm_engine_test/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(MakeDirs(dir_).ok());
  }
  void TearDown() override {
    if (engine_) engine_->Stop(true);
    engine_.reset();
    backend_.reset();
    store_.reset();
    Sh("squeue -h -o %A | xargs -r scancel");
  }

  void StartEngine(const std::string& backend_name) {
    backend::BackendOptions bo;
    bo.state_dir = dir_;
    bo.slurm_conf = EnvVar("SLURM_CONF");
    auto b = backend::MakeBackend(backend_name, bo);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    backend_ = std::move(*b);
    store::StoreOptions so;
    so.sync_full = false;
    auto s = store::OpenSqliteStore(dir_, so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    engine::EngineOptions eo;
    eo.state_dir = dir_;
    eo.stop_grace_ms = 2000;
    engine_ = std::make_unique<engine::Engine>(store_.get(), backend_.get(), engine::Hooks{}, eo);
    auto st = engine_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  //! The controller goes away (its steps keep running in Slurm) and a new one recovers.
  void RestartController() {
    engine_->Stop(false);
    engine_.reset();
    backend_.reset();
    store_.reset();
    StartEngine("slurm");
    ASSERT_TRUE(engine_->Recover().ok());
  }

  std::string Submit(const std::string& yaml) {
    auto parsed = spec::ParseWorkload(yaml, "test.yaml");
    EXPECT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0].ToString());
    if (!parsed.ok()) return "";
    auto id = engine_->Submit(parsed.workload, "test");
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : "";
  }

  std::map<std::string, store::Step> Steps(const std::string& run_id) {
    std::map<std::string, store::Step> out;
    auto steps = store_->ListSteps(run_id);
    if (steps.ok()) {
      for (auto& s : *steps) out[s.name] = s;
    }
    return out;
  }

  //! A run's events, one per line with their time since the first, and what the cluster is
  //! doing: the message of an assertion on a run that did not end as it should.
  std::string RunDiagnostics(const std::string& id) {
    std::string out = "--- events of " + id + "\n";
    auto run_id = engine_->ResolveRunId(id);
    if (run_id.ok()) {
      auto events = Events(*run_id);
      int64_t t0 = events.empty() ? 0 : events.front().time;
      for (const auto& e : events) {
        char at[32];
        std::snprintf(at, sizeof at, "%8.3f ", (e.time - t0) / 1000.0);
        out += at + e.step + " " + e.reason + ": " + e.message + "\n";
      }
    }
    return out + ClusterDiagnostics();
  }

  std::vector<store::Event> Events(const std::string& run_id) {
    auto ev = store_->ListEvents(run_id, 0);
    return ev.ok() ? *ev : std::vector<store::Event>{};
  }

  std::string dir_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<engine::Engine> engine_;
};

}  // namespace rsl::slurm_test
