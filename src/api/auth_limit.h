// Failed authentications, counted per source address: after kMaxFailedAuths failures within
// kFailedAuthWindowMs, an address's requests to routes that need a token are answered 429
// TOO_MANY_REQUESTS with Retry-After until its window ends, valid token or not, so a guessing
// client learns nothing more. Public routes (/healthz, /version) are never limited.
//
// Threading: safe from many threads (one mutex). Memory: at most kMaxTrackedAddresses
// addresses; when full, addresses whose window ended are forgotten first, then the oldest.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace rsl::api {

//! Ten wrong tokens a minute is far above a typo, far below a useful guessing rate
//! (tokens are 192-bit random).
inline constexpr int kMaxFailedAuths = 10;
inline constexpr int64_t kFailedAuthWindowMs = 60'000;
inline constexpr size_t kMaxTrackedAddresses = 100'000;

class FailedAuthLimiter {
 public:
  //! Seconds the address must wait (at least 1) when it is over the limit at `now_ms`.
  std::optional<int64_t> RetryAfter(const std::string& address, int64_t now_ms);
  //! Counts one failure; true when this failure reaches the limit (the moment to audit).
  bool Failed(const std::string& address, int64_t now_ms);

 private:
  struct Window {
    int64_t start_ms = 0;
    int failures = 0;
  };
  void MakeRoom(int64_t now_ms);  // REQUIRES: mu_ held

  std::mutex mu_;
  std::map<std::string, Window> windows_;  // GUARDED_BY(mu_)
};

}  // namespace rsl::api
