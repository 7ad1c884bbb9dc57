#include "api/auth_limit.h"

#include <algorithm>

namespace rsl::api {

std::optional<int64_t> FailedAuthLimiter::RetryAfter(const std::string& address, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(address);
  if (it == windows_.end() || it->second.failures < kMaxFailedAuths) return std::nullopt;
  int64_t left_ms = it->second.start_ms + kFailedAuthWindowMs - now_ms;
  if (left_ms <= 0) {
    windows_.erase(it);
    return std::nullopt;
  }
  return std::max<int64_t>(1, (left_ms + 999) / 1000);
}

bool FailedAuthLimiter::Failed(const std::string& address, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(address);
  if (it == windows_.end()) {
    if (windows_.size() >= kMaxTrackedAddresses) MakeRoom(now_ms);
    it = windows_.emplace(address, Window{now_ms, 0}).first;
  } else if (now_ms - it->second.start_ms >= kFailedAuthWindowMs) {
    it->second = Window{now_ms, 0};
  }
  return ++it->second.failures == kMaxFailedAuths;
}

void FailedAuthLimiter::MakeRoom(int64_t now_ms) {
  for (auto it = windows_.begin(); it != windows_.end();) {
    it = now_ms - it->second.start_ms >= kFailedAuthWindowMs ? windows_.erase(it) : std::next(it);
  }
  if (windows_.size() < kMaxTrackedAddresses) return;
  auto oldest = std::min_element(
      windows_.begin(), windows_.end(),
      [](const auto& a, const auto& b) { return a.second.start_ms < b.second.start_ms; });
  windows_.erase(oldest);
}

}  // namespace rsl::api
