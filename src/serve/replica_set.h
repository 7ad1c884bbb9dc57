// One serving attempt carried out: HAProxy in front, replicas as attempts of the inner
// backend (the same launch path as batch steps: isolation, limits, environment, envFrom,
// RSL_INPUT_<DEP>), readiness probing, restarts with backoff, autoscaling, draining, and at
// the end one exit for the serving attempt. Internal to serve/; ServingBackend owns these.
//
// Threading: one thread of its own (Start) does every action; the On* methods and Status may
// be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "serve/autoscaler.h"
#include "serve/haproxy.h"

namespace rsl::serve {

//! How many autoscaler evaluations a serving attempt's status keeps (utilization, ready and
//! desired replicas): at one evaluation every 2 s, the last 10 minutes, enough for the
//! console's chart and a few KB in every status read.
constexpr size_t kServingHistorySamples = 300;

struct ServeOptions {
  std::string haproxy = kDefaultHaproxy;
  std::string bind_host = "0.0.0.0";  //!< where the endpoint listens
  std::string replica_host =
      "127.0.0.1";        //!< where local replicas listen (and the endpoint's URL host)
  int64_t tick_ms = 100;  //!< how often the loop looks at replicas
  int64_t evaluate_period_ms = kEvaluatePeriodMs;
  //! A draining replica is stopped once HAProxy shows no session on it, or after this.
  int64_t drain_timeout_ms = 30'000;
  int64_t restart_backoff_ms = 1'000;  //!< first restart; doubles per restart of a replica
  int64_t max_restart_backoff_ms = 30'000;
  //! Replicas' SIGTERM -> SIGKILL grace when scaled down.
  int64_t stop_grace_ms = 10'000;
};

class ReplicaSet {
 public:
  struct Callbacks {
    std::function<void(const backend::AttemptEvent&)> event;
    std::function<void(const backend::AttemptExit&)> exit;      //!< once, the serving attempt's
    std::function<void(const std::string& replica_id)> own;     //!< before it is launched
    std::function<void(const std::string& replica_id)> disown;  //!< after its exit
  };
  ReplicaSet(backend::Backend* inner, ServeOptions options, backend::LaunchSpec spec,
             Callbacks callbacks);
  ~ReplicaSet();  //!< Stop(report=false) and join

  void Start();
  //! Drains, stops every replica and HAProxy, then reports the attempt's exit (kCancelled, or
  //! kTimedOut) when `report`. Returns at once; the thread does it.
  void RequestStop(int64_t grace_ms, bool timed_out, bool report = true);
  void Join();

  void OnReplicaExit(const backend::AttemptExit& exit);
  void OnReplicaUsage(const backend::AttemptUsage& usage);
  backend::ServingStatus Status();

 private:
  enum class State { kStarting, kReady, kNotReady, kDraining, kRestarting, kStopping };
  struct Replica {
    int index = 0;
    int generation = 0;
    std::string attempt_id;  //!< of the current generation
    std::string log_path;
    int port = 0;
    State state = State::kStarting;
    bool running = false;   //!< launched, exit not seen
    bool in_proxy = false;  //!< a server in HAProxy
    bool retiring = false;  //!< scaled down: not restarted
    int failures = 0;       //!< probe failures in a row
    int restarts = 0;
    int64_t next_probe_ms = 0;
    int64_t restart_at_ms = 0;
    int64_t drain_deadline_ms = 0;
    double utilization = 0;
  };
  static const char* StateName(State s);
  std::string ServerName(const Replica& r) const;

  void Run();
  //! Returns false when the set ended (HAProxy could not start).
  bool StartProxy();
  void Launch(Replica* r, int64_t now);
  void HandleExit(const backend::AttemptExit& e, int64_t now);
  void Probe(Replica* r, int64_t now);
  void Evaluate(int64_t now);
  void Drain(Replica* r, int64_t now);
  void ProgressDrains(int64_t now);
  void RemoveServer(Replica* r);
  //! Shutdown reporting a failure of the serving attempt with `message`.
  void Fail(const std::string& message, int64_t grace_ms = 0);
  //! Drains and stops everything, then reports `exit` (when set).
  void Shutdown(std::optional<backend::AttemptExit> exit, int64_t grace_ms);
  std::string LastLogLines() const;
  void Emit(spec::EventReason reason, const std::string& message, bool warning = false);
  int64_t NowMs() const;

  backend::Backend* inner_;
  ServeOptions opts_;
  backend::LaunchSpec spec_;
  backend::ServingLaunch serving_;
  Callbacks cb_;
  Autoscaler autoscaler_;
  std::thread thread_;
  std::unique_ptr<HaproxyProcess> proxy_;
  std::string socket_dir_;

  // Loop-owned.
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<std::string> to_delete_;  //!< server names still to delete from HAProxy
  int next_index_ = 0;
  int desired_ = 0;
  bool serving_ready_ = false;
  int64_t start_ms_ = 0;
  int64_t next_evaluate_ms_ = 0;
  std::map<std::string, int64_t> sessions_;     //!< server name -> current sessions (show stat)
  std::deque<backend::ServingSample> history_;  //!< the latest evaluations, oldest first

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<backend::AttemptExit> exits_;  // GUARDED_BY(mu_)
  bool stop_ = false;                       // GUARDED_BY(mu_)
  bool stop_timed_out_ = false;             // GUARDED_BY(mu_)
  bool stop_report_ = true;                 // GUARDED_BY(mu_)
  int64_t stop_grace_ms_ = 0;               // GUARDED_BY(mu_)
  //! A replica's CPU rate between its last two usage samples (about a second apart: the
  //! autoscaler sees a load step within a sample, not averaged over its whole period).
  struct Rate {
    backend::Usage last;
    double cores = 0;
  };
  std::map<std::string, Rate> usage_;  // GUARDED_BY(mu_): replica id -> its rate
  backend::ServingStatus status_;      // GUARDED_BY(mu_): as of the last tick
};

}  // namespace rsl::serve
