// Test doubles for the engine: a fake clock the test advances (an Env), a fake backend the test
// drives (launches are recorded; the test decides how each attempt ends), and an
// in-process backend that ends every attempt at once (benchmarks: the engine's own cost).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/fake_env.h"
#include "base/file.h"

namespace rsl::engine::testing {

//! Real files and processes, a clock the test advances (Advance(ms)); hand it to the engine
//! as EngineOptions::env.
using FakeClock = FakeClockEnv;

//! Records launches (after making the attempt's directories, as a real backend does); the test ends
//! attempts with Finish(). Stop() ends the attempt as cancelled / timed out at once unless
//! `hold_stops` is set.
class FakeBackend : public backend::Backend {
 public:
  explicit FakeBackend(std::vector<sched::Node> nodes = {}) : nodes_(std::move(nodes)) {
    if (nodes_.empty()) {
      sched::Node n;
      n.name = "local";
      n.cpu_millis = 8000;
      n.memory_bytes = 16LL << 30;
      nodes_.push_back(n);
    }
  }
  std::string name() const override { return "fake"; }
  Result<std::vector<sched::Node>> ListNodes() override {
    std::lock_guard<std::mutex> lock(mu_);
    return nodes_;
  }
  //! As a scheduler with a queue (Slurm) when `queues` is set (before the engine starts).
  bool QueuesAttempts() const override { return queues; }

  //! A queued attempt runs now on `node` (the Running event a scheduler's backend sends).
  void Run(const std::string& attempt_id, const std::string& node) {
    if (on_event) on_event({attempt_id, spec::EventReason::kRunning, "running on " + node, node});
  }
  //! Why a queued attempt still waits (a Pending event).
  void StillQueued(const std::string& attempt_id, const std::string& why) {
    if (on_event) on_event({attempt_id, spec::EventReason::kPending, why, ""});
  }
  //! The inventory changes (a node drained, resumed...): reported as on_nodes.
  void SetNodes(std::vector<sched::Node> nodes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      nodes_ = nodes;
    }
    if (on_nodes) on_nodes(nodes);
  }

  //! Makes the attempt's directories as a real backend does, then records the launch.
  Status Launch(const backend::LaunchSpec& spec) override {
    if (!spec.workdir.empty()) RSL_RETURN_IF_ERROR(MakeDirs(spec.workdir));
    for (const auto& d : spec.make_dirs) RSL_RETURN_IF_ERROR(MakeDirs(d));
    for (const auto* f : {&spec.log_path, &spec.exit_file}) {
      size_t slash = f->rfind('/');
      if (slash != std::string::npos && slash > 0)
        RSL_RETURN_IF_ERROR(MakeDirs(f->substr(0, slash)));
    }
    std::lock_guard<std::mutex> lock(mu_);
    launches_.push_back(spec);
    live_[spec.attempt_id] = spec;
    cv_.notify_all();
    return Status::Ok();
  }
  void Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stops_.push_back(attempt_id);
      cv_.notify_all();
      if (hold_stops) return;
    }
    backend::AttemptExit e;
    e.attempt_id = attempt_id;
    e.kind = timed_out ? backend::ExitKind::kTimedOut : backend::ExitKind::kCancelled;
    e.message = timed_out ? "stopped: time limit exceeded" : "stopped on request";
    Finish(e);
  }
  void Adopt(const backend::LaunchSpec& spec) override {
    std::lock_guard<std::mutex> lock(mu_);
    adopted_.push_back(spec);
    live_[spec.attempt_id] = spec;
    cv_.notify_all();
  }

  //! Ends an attempt (from the test's thread, as a backend thread would).
  void Finish(backend::AttemptExit e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!live_.erase(e.attempt_id)) return;
    }
    if (e.node.empty() && !queues) e.node = "local";
    if (on_exit) on_exit(e);
  }
  void Succeed(const std::string& attempt_id) {
    backend::AttemptExit e;
    e.attempt_id = attempt_id;
    e.kind = backend::ExitKind::kSucceeded;
    e.exit_code = 0;
    e.message = "exit code 0";
    Finish(e);
  }
  void Fail(const std::string& attempt_id, backend::ExitKind kind, int code = 1) {
    backend::AttemptExit e;
    e.attempt_id = attempt_id;
    e.kind = kind;
    e.exit_code = code;
    e.message = "exit code " + std::to_string(code);
    Finish(e);
  }

  //! Waits until `n` launches happened in total; returns the n-th (1-based), or an empty
  //! LaunchSpec after `timeout_ms`. The default is generous: a loaded 2-core machine running
  //! ASan builds took over 5 s to turn one exit into the next launch (CommitFaultTest, 2026-12).
  backend::LaunchSpec WaitLaunch(size_t n, int64_t timeout_ms = 60'000) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                 [&] { return launches_.size() >= n; });
    return launches_.size() >= n ? launches_[n - 1] : backend::LaunchSpec{};
  }
  size_t launch_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return launches_.size();
  }
  std::vector<std::string> stops() {
    std::lock_guard<std::mutex> lock(mu_);
    return stops_;
  }
  std::vector<backend::LaunchSpec> adopted() {
    std::lock_guard<std::mutex> lock(mu_);
    return adopted_;
  }
  bool WaitStops(size_t n, int64_t timeout_ms = 60'000) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                        [&] { return stops_.size() >= n; });
  }
  bool WaitAdopted(size_t n, int64_t timeout_ms = 60'000) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                        [&] { return adopted_.size() >= n; });
  }

  bool hold_stops = false;
  bool queues = false;

 private:
  std::vector<sched::Node> nodes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<backend::LaunchSpec> launches_;
  std::map<std::string, backend::LaunchSpec> live_;
  std::vector<std::string> stops_;
  std::vector<backend::LaunchSpec> adopted_;
};

//! Ends every attempt at once, successfully (or as `decide` says), from inside Launch:
//! the engine's own overhead with no processes and no files at all (it makes no directories,
//! so there is no staging and a run commits no outputs).
class InProcessBackend : public backend::Backend {
 public:
  explicit InProcessBackend(int64_t cpu_millis = 1'000'000'000) {
    node_.name = "local";
    node_.cpu_millis = cpu_millis;
    node_.memory_bytes = 1LL << 50;
  }
  std::string name() const override { return "in-process"; }
  Result<std::vector<sched::Node>> ListNodes() override { return std::vector<sched::Node>{node_}; }
  Status Launch(const backend::LaunchSpec& spec) override {
    backend::AttemptExit e;
    e.attempt_id = spec.attempt_id;
    e.kind = backend::ExitKind::kSucceeded;
    e.exit_code = 0;
    e.node = "local";
    e.message = "exit code 0";
    e.workdir_empty = true;  // it makes none
    if (decide) e = decide(spec);
    if (on_exit) on_exit(e);
    return Status::Ok();
  }
  void Stop(const std::string&, int64_t, bool) override {}
  void Adopt(const backend::LaunchSpec& spec) override {
    backend::AttemptExit e;
    e.attempt_id = spec.attempt_id;
    e.kind = backend::ExitKind::kNodeLost;
    if (on_exit) on_exit(e);
  }
  std::function<backend::AttemptExit(const backend::LaunchSpec&)> decide;

 private:
  sched::Node node_;
};

}  // namespace rsl::engine::testing
