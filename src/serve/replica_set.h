// One serving attempt carried out: HAProxy in front, replicas as attempts of the inner
// backend (the same launch path as batch steps: isolation, limits, environment, envFrom,
// RSL_INPUT_<DEP>), readiness probing, restarts with backoff, autoscaling, draining, and at
// the end one exit for the serving attempt. Internal to serve/; ServingBackend owns these.
//
// Rolling update: a set may start on the Frontend of a running set of the same workload and
// step (an older version). Once as many of its replicas are ready as the old set wanted, it
// calls `takeover`; the old set is then Superseded: it drains its replicas (no new request,
// in-flight ones finish), stops them, lets go of the frontend and ends as succeeded. HAProxy
// stops with the last set that holds its Frontend.
//
// Where replicas run: on the local backend on this host (127.0.0.1, a port FreePort chose);
// on a backend whose scheduler places attempts (Slurm) each replica is a job that chooses a
// free port on the node it landed on and writes it to a port file beside its exit record;
// the set then probes and routes to the node's address (Slurm's NodeAddr) and that port.
//
// Recovery: the set keeps a SetRecord (serving_state.h) beside the attempt's files; a set
// built with one adopts what it names (HAProxy, or a new one on the same port, and every
// replica through the inner backend's Adopt) instead of starting anything.
//
// Threading: one thread of its own (Start) does every action; the On* methods, Status,
// frontend and Supersede may be called from any thread.
#pragma once

#include <atomic>
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
#include "serve/serve_options.h"
#include "serve/serving_state.h"

namespace rsl::serve {

//! How many autoscaler evaluations a serving attempt's status keeps (utilization, ready and
//! desired replicas): at one evaluation every 2 s, the last 10 minutes, enough for the
//! console's chart and a few KB in every status read.
constexpr size_t kServingHistorySamples = 300;

//! One endpoint: an HAProxy and its port, shared by the replica sets of one workload's
//! serving step while a new version takes over from an old one. Destroyed (HAProxy stopped,
//! its socket directory removed) with the last set that holds it.
struct Frontend {
  Frontend(std::unique_ptr<HaproxyProcess> p, int port_, std::string endpoint_,
           std::string socket_dir_)
      : proxy(std::move(p)),
        port(port_),
        endpoint(std::move(endpoint_)),
        socket_dir(std::move(socket_dir_)) {}
  ~Frontend();
  HaproxyRuntime& runtime() { return proxy->runtime(); }

  std::unique_ptr<HaproxyProcess> proxy;
  int port = 0;
  std::string endpoint;
  std::string socket_dir;  //!< the runtime socket's (removed with it)
  //! Left to the next controller (ReplicaSet::Leave): HAProxy keeps running.
  std::atomic<bool> left_running{false};
};

class ReplicaSet {
 public:
  struct Callbacks {
    std::function<void(const backend::AttemptEvent&)> event;
    std::function<void(const backend::AttemptExit&)> exit;      //!< once, the serving attempt's
    std::function<void(const std::string& replica_id)> own;     //!< before it is launched
    std::function<void(const std::string& replica_id)> disown;  //!< after its exit
    //! Once, when as many replicas are ready as the set started with: older sets of the same
    //! service may go (rolling update).
    std::function<void()> takeover;
  };
  //! How the set begins.
  struct Begin {
    //! The frontend of the running version to share (rolling update); null: start one.
    std::shared_ptr<Frontend> frontend;
    //! Replicas to start with (the running version's count, within [min, max]); 0: min.
    int desired = 0;
    //! Recovery: the record of the set a controller that died left running.
    std::optional<SetRecord> adopt;
  };
  ReplicaSet(backend::Backend* inner, ServeOptions options, backend::LaunchSpec spec,
             Callbacks callbacks, Begin begin);
  ~ReplicaSet();  //!< Stop(report=false) and join

  void Start();
  //! A newer version took over (`by` names it): drain, stop every replica, let go of the
  //! frontend, and report the attempt succeeded. Returns at once; the thread does it.
  void Supersede(const std::string& by);
  //! The endpoint the set serves behind (null before it has one and after it ended).
  std::shared_ptr<Frontend> frontend();
  //! When the set began (wall clock ms; an adopted set keeps its first value): of two sets of
  //! one service, the later one is the newer version.
  int64_t started_ms() const { return started_ms_; }
  //! Drains, stops every replica and HAProxy, then reports the attempt's exit (kCancelled, or
  //! kTimedOut) when `report`. Returns at once; the thread does it.
  void RequestStop(int64_t grace_ms, bool timed_out, bool report = true);
  //! The controller exits for a restart (SIGTERM): the set writes its record and ends
  //! without stopping anything and without reporting an exit; HAProxy and every replica run
  //! on and the next controller adopts them (as after a crash). Returns at once.
  void Leave();
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
    int port = 0;           //!< 0: not known yet (chosen on its node, in port_file)
    std::string node;       //!< where it runs ("" until known)
    std::string host;       //!< the address it listens on ("" until known)
    std::string port_file;  //!< node-chosen ports (Slurm): where its job writes the port
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
  //! Joins begin_.frontend. Returns false when the set ended.
  bool JoinFrontend();
  //! Takes over what begin_.adopt names. Returns false when the set ended.
  bool AdoptRecord();
  //! Writes the SetRecord when it changed (after every tick).
  void Persist();
  HaproxyRuntime& proxy() { return frontend_->runtime(); }
  void Launch(Replica* r, int64_t now);
  //! A replica whose port its node chose: reads the port file and resolves the node's
  //! address. False while the job has not written it.
  bool LearnPort(Replica* r);
  void HandleExit(const backend::AttemptExit& e, int64_t now);
  void Probe(Replica* r, int64_t now);
  void Evaluate(int64_t now);
  void Drain(Replica* r, int64_t now);
  void ProgressDrains(int64_t now);
  void RemoveServer(Replica* r);
  //! Shutdown reporting a failure of the serving attempt with stable `code` and `message`.
  void Fail(const std::string& code, const std::string& message, int64_t grace_ms = 0);
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
  Begin begin_;
  Autoscaler autoscaler_;
  std::thread thread_;
  //! Replicas whose backend's scheduler picks the node (Slurm): each job chooses its port
  //! there and writes it to a port file (backend/slurm_job.h: kPortOnNode, PortFile); else the
  //! controller's host runs them and FreePort chooses.
  bool node_ports_;
  std::string prefix_;  //!< of its HAProxy server names (ServerPrefix)
  std::string record_path_;
  int64_t started_ms_;       //!< wall clock, kept across adoption (SetRecord::started_ms)
  std::string last_record_;  //!< as last written

  // Loop-owned.
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<std::string> to_delete_;  //!< server names still to delete from HAProxy
  int next_index_ = 0;
  int desired_ = 0;
  bool serving_ready_ = false;
  int takeover_at_ = 0;        //!< ready replicas at which it calls takeover (0: called already)
  std::string superseded_by_;  //!< loop's copy once it acts on it
  int64_t start_ms_ = 0;       //!< steady clock
  int64_t next_evaluate_ms_ = 0;
  std::map<std::string, int64_t> sessions_;     //!< server name -> current sessions (show stat)
  std::deque<backend::ServingSample> history_;  //!< the latest evaluations, oldest first

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<backend::AttemptExit> exits_;  // GUARDED_BY(mu_)
  bool stop_ = false;                       // GUARDED_BY(mu_)
  bool stop_timed_out_ = false;             // GUARDED_BY(mu_)
  bool stop_report_ = true;                 // GUARDED_BY(mu_)
  bool leave_ = false;                      // GUARDED_BY(mu_): Leave()
  std::string supersede_;                   // GUARDED_BY(mu_): by whom, once asked
  std::shared_ptr<Frontend> frontend_;      // GUARDED_BY(mu_) for readers; set by the loop
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
