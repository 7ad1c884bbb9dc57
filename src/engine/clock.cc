#include "engine/clock.h"

namespace rsl::engine {
namespace {

class SystemClock : public Clock {
 public:
  int64_t NowMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 int64_t deadline_ms) override {
    if (deadline_ms == INT64_MAX) {
      cv.wait(lock);
      return;
    }
    cv.wait_until(lock, std::chrono::system_clock::time_point(
                            std::chrono::milliseconds(deadline_ms)));
  }
};

}  // namespace

Clock* RealClock() {
  static SystemClock clock;
  return &clock;
}

}  // namespace rsl::engine
