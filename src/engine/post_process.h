// postProcess webhooks: what one hook sends (a Delivery, rendered on the engine's loop when
// its step ended) and the PostProcessSender that sends them off the loop, with retries and a
// timeout per try.
//
// Durability (at-least-once): a delivery that does not hold up its step is written to
// <state_dir>/post-process/<run>.<step>.<k>.json before the step's end is recorded, and
// removed once it was sent or gave up; an engine that starts sends what it finds there. A
// crash between the receiver's answer and the removal sends it again. Required hooks are not
// written: their step's exit is applied only after they are done, so an engine that recovers
// the run sees the attempt end again and sends them again.
//
// Secrets: headers name {secretRef, key}; the value is read from the store when the request
// is sent and never written to the pending file, to events, logs or errors.
//
// Threading: one sender thread; Enqueue, Drain and Stop may be called from any thread. The
// `done` callback runs on the sender thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "spec/workload.h"
#include "store/store.h"

namespace rsl::engine {

//! A failed try is tried again after kHookBackoffMs, doubling up to kHookMaxBackoffMs: a
//! receiver restarting takes seconds, and a hook is never worth more than a minute or two.
inline constexpr int64_t kHookBackoffMs = 1'000;
inline constexpr int64_t kHookMaxBackoffMs = 30'000;

struct Delivery {
  std::string key;  //!< <run>.<step>.<k>: unique per hook of a step's end
  std::string run_id;
  std::string namespace_;  //!< where its secrets live
  std::string step;
  int hook = 0;  //!< index in the step's postProcess
  bool required = false;
  std::string method;
  std::string url;
  std::vector<spec::HookHeader> headers;  //!< secret values unresolved
  std::string body;                       //!< rendered
  int64_t retries = 0;
  int64_t timeout_ms = 0;

  std::string ToJson() const;
  static Result<Delivery> FromJson(const std::string& json);
  //! "postProcess[0] POST https://host/path" (no query, no user info) for events.
  std::string Describe() const;
};

//! How a delivery ended: ok, or the message of its last failure (no secret in it).
struct DeliveryResult {
  bool ok = false;
  int tries = 0;
  long status = 0;  //!< the last HTTP status (0: no answer)
  std::string message;
};

class PostProcessSender {
 public:
  using Done = std::function<void(const Delivery&, const DeliveryResult&)>;
  //! `store` (secrets) and `env` (the pending files) must outlive the sender.
  PostProcessSender(store::Store* store, Env* env, std::string state_dir, Done done);
  ~PostProcessSender();  //!< Stop()s.

  //! Starts the thread and queues the deliveries left in the pending directory.
  Status Start();
  //! Writes the pending file of a delivery that is not required (before its step's end is
  //! recorded). Errors: IO_ERROR.
  Status Persist(const Delivery& d);
  //! Queues a delivery; one whose key is queued or being sent already is dropped.
  void Enqueue(Delivery d);
  //! Waits until nothing is queued or being sent, at most `timeout_ms`. False on timeout.
  bool Drain(int64_t timeout_ms);
  //! Stops after the try under way; what is left stays in the pending directory.
  void Stop();

  //! One delivery with its retries (blocking; Stop cuts the waits between tries short).
  DeliveryResult Send(const Delivery& d);

 private:
  void Loop();
  std::string PendingPath(const std::string& key) const;

  store::Store* store_;
  Env* env_;
  std::string dir_;
  Done done_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Delivery> queue_;  // GUARDED_BY(mu_)
  std::set<std::string> keys_;  // GUARDED_BY(mu_): queued or in flight
  bool stopping_ = false;       // GUARDED_BY(mu_)
  bool started_ = false;
};

}  // namespace rsl::engine
