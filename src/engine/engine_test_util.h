// What the engine's tests share: a fixture of the engine over a fake backend and a fake
// clock on the real SQLite store (with its transition log when the test binary is built with
// RSL_ENGINE_TEST_TRANSITION_LOG: the engine_log_* binaries), and small helpers.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/testing.h"
#include "spec/parse.h"
#include "store/store.h"

namespace rsl::engine::testing {

inline std::string FreshDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "engine_test_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline spec::Workload Parse(const std::string& yaml) {
  auto r = spec::ParseWorkload(yaml, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  return r.workload;
}

inline std::string Header(const std::string& name) {
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
         "\n  namespace: risk\nspec:\n";
}

//! The store the engine's tests run on.
inline store::StoreOptions TestStoreOptions() {
  store::StoreOptions o;
#ifdef RSL_ENGINE_TEST_TRANSITION_LOG
  o.transition_log = true;
#endif
  return o;
}

struct Fixture {
  explicit Fixture(const std::string& name, std::vector<sched::Node> nodes = {})
      : dir(FreshDir(name)), backend(std::move(nodes)) {
    auto s = store::OpenSqliteStore(dir, TestStoreOptions());
    EXPECT_TRUE(s.ok());
    store = std::move(*s);
    Restart();
  }
  void Restart() {
    engine.reset();
    EngineOptions opts;
    opts.state_dir = dir;
    opts.env = &clock;
    engine = std::make_unique<Engine>(store.get(), &backend, hooks, opts);
    EXPECT_TRUE(engine->Start().ok());
  }
  std::vector<std::string> Reasons(const std::string& run_id, const std::string& step = "*") {
    std::vector<std::string> out;
    auto events = store->ListEvents(run_id, 0);
    for (const auto& e : *events) {
      if (step == "*" || e.step == step)
        out.push_back((e.step.empty() ? "run" : e.step) + ":" + e.reason);
    }
    return out;
  }
  std::string dir;
  FakeClock clock;
  FakeBackend backend;
  Hooks hooks;  // set, then Restart(), to run with hooks
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Engine> engine;
};

inline bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

//! Index of `s` in `v` (v.size() when absent).
inline size_t Find(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

//! Polls `done` (the engine's loop works on its own thread) for up to 5 s of real time.
inline bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace rsl::engine::testing
