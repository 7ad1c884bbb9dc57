// Time as the engine sees it, injectable so plan and engine tests run on fake time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace rsl::engine {

class Clock {
 public:
  virtual ~Clock() = default;
  //! Milliseconds since the Unix epoch (wall time, used for records and deadlines).
  virtual int64_t NowMs() = 0;
  //! Blocks on `cv` (with `lock` held) until notified or `deadline_ms` (NowMs scale) passes.
  //! The fake clock wakes waiters whenever it is advanced.
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         int64_t deadline_ms) = 0;
};

//! The real clock (std::chrono::system_clock).
Clock* RealClock();

}  // namespace rsl::engine
