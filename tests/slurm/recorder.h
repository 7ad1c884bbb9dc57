// What a Slurm backend reports in a test: its attempts' exits and events, with the times
// they came, and waits on them. Shared by the cluster and image tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "spec/phase.h"

namespace rsl::slurm_test {

using Clock = std::chrono::steady_clock;
using backend::AttemptEvent;
using backend::AttemptExit;
using backend::Backend;

class Recorder {
 public:
  void Attach(Backend* b) {
    b->on_exit = [this](const AttemptExit& e) {
      std::lock_guard<std::mutex> lock(mu_);
      exits_[e.attempt_id].push_back(e);
      exit_at_[e.attempt_id] = Clock::now();
      cv_.notify_all();
    };
    b->on_event = [this](const AttemptEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_[e.attempt_id].push_back(e);
      if (e.reason == spec::EventReason::kRunning) started_at_[e.attempt_id] = Clock::now();
      cv_.notify_all();
    };
  }
  std::optional<AttemptExit> WaitExit(const std::string& id, double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                 [&] { return !exits_[id].empty(); });
    if (exits_[id].empty()) return std::nullopt;
    return exits_[id].front();
  }
  std::optional<AttemptEvent> WaitStarted(const std::string& id, double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                 [&] { return started_at_.count(id) > 0 || !exits_[id].empty(); });
    for (auto& e : events_[id]) {
      if (e.reason == spec::EventReason::kRunning) return e;
    }
    return std::nullopt;
  }
  size_t ExitCount(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return exits_[id].size();
  }
  Clock::time_point StartedAt(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return started_at_[id];
  }
  Clock::time_point ExitAt(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return exit_at_[id];
  }

  //! Waits for an event of `reason` on attempt `id` (or its exit); whether it came.
  bool WaitEvent(const std::string& id, spec::EventReason reason, double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
      for (const auto& e : events_[id]) {
        if (e.reason == reason) return true;
      }
      return !exits_[id].empty();
    });
  }
  //! Attempt `id`'s events, a line each ("Reason node: message"), for failure messages.
  std::string Events(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& e : events_[id]) {
      out += std::string(spec::Name(e.reason)) + " " + e.node + ": " + e.message + "\n";
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<AttemptExit>> exits_;
  std::map<std::string, std::vector<AttemptEvent>> events_;
  std::map<std::string, Clock::time_point> started_at_, exit_at_;
};

}  // namespace rsl::slurm_test
