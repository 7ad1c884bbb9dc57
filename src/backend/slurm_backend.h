// The Slurm backend's implementation class, exposed so the tests can drive it with a fake
// CommandRunner and without its monitor thread. Everyone else uses NewSlurmBackend (slurm.h).
//
// Lifecycle of an attempt: Launch writes the batch script and environment under
// <state_dir>/slurm/<attempt>/, submits it with sbatch (--no-requeue) and returns; the monitor
// thread polls `squeue --json` and `sinfo --json` every poll_interval_ms while attempts are
// live and reports each attempt's end exactly once through on_exit. A job whose node Slurm
// declares down is reported kNodeLost at once (and scancel'ed) without waiting for Slurm's
// own requeue; the job's processes may live on there as orphans, and the batch script of such
// an orphan no longer writes the exit record (its job id file no longer names it).
// The attempt's environment file and Slurm's unmasked output (both may hold secret values)
// are removed when its end is reported.
//
// Slurm unreachable (a client command fails, or its JSON reply carries `errors`, as 22.05's
// do with exit 0 while slurmctld is down): nothing is decided from it. Launch then keeps the
// attempt to submit later (it never blocks the engine on a dead slurmctld twice), Stop leaves
// its scancel to the monitor, and only after `patience_ms` without an answer do the live
// attempts end kFailed ("Slurm unreachable for ...").
//
// Live usage: the batch script's sampler rewrites <exit_file>.usage every ~2 s while the
// step runs (slurm_job.h); the monitor reads it for running attempts and reports each new
// sample through on_usage. At the end, the last sample fills in what the exit record lacks
// (a step killed at its --time or OOM-killed before the script wrote its record).
//
// Nodes: the monitor reads `sinfo --json` every node_refresh_ms, also while idle, and hands
// each fresh inventory to on_nodes.
//
// Threading: every public method may be called from any thread; callbacks run on the monitor
// thread (or the caller of PollOnce) with no backend lock held.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/container.h"
#include "backend/factory.h"
#include "backend/identity.h"
#include "backend/slurm_job.h"
#include "backend/slurm_parse.h"
#include "backend/slurm_runner.h"
#include "base/env.h"
#include "image/cache.h"

namespace rsl::backend {

struct SlurmBackendOptions {
  BackendOptions backend;
  std::string files_dir;             //!< attempt files; "" = <state_dir>/slurm
  int64_t poll_interval_ms = 200;    //!< squeue/sinfo while attempts are live
  bool start_monitor = true;         //!< false: the test calls PollOnce itself
  int64_t vanished_grace_ms = 5000;  //!< a job missing from squeue this long: ask sacct
  int64_t patience_ms = 300000;      //!< Slurm unreachable this long: live attempts fail
  int64_t node_refresh_ms = 2000;    //!< sinfo at most this often (on_nodes)
  //! A job still running this long after RSL's scancel is given up (its processes may live on
  //! as orphans): a stuck slurmstepd must not hold a timed-out step, and its retry, forever.
  //! Slurm's own UnkillableStepTimeout is 60 s, its KillWait 30 s by default.
  int64_t unkillable_grace_ms = 120000;
  //! Who steps run as: none, users or user (namespace needs the local backend).
  Isolation isolation;
  //! The clock of the node cache and of vanished jobs; nullptr: Env::Default().
  Env* env = nullptr;
};

class SlurmBackend : public Backend {
 public:
  SlurmBackend(SlurmBackendOptions options, std::unique_ptr<CommandRunner> runner);
  ~SlurmBackend() override;

  std::string name() const override { return "slurm"; }
  bool QueuesAttempts() const override { return true; }
  //! The Features of the nodes last read (sinfo), sorted, without duplicates.
  std::vector<std::string> DeclaredCapabilities() override;
  Result<std::vector<sched::Node>> ListNodes() override;
  Status Launch(const LaunchSpec& spec) override;
  void Stop(const std::string& attempt_id, int64_t grace_ms, bool timed_out) override;
  //! Also restores the secret values its log masker needs (from the attempt's environment
  //! file, while the job lives).
  void Adopt(const LaunchSpec& spec) override;

  //! One round of the monitor: squeue, submissions and scancels that waited for Slurm, sinfo,
  //! report what changed (idle: only sinfo, at most every node_refresh_ms). Public for tests.
  void PollOnce();
  //! The Slurm job id of a live attempt, 0 if none. For tests and `describe`.
  int64_t JobIdOf(const std::string& attempt_id);

  //! Registry images run in containers (runc in the batch script) with this runtime, from the
  //! image cache <state_dir>/images/bundles (which nodes must see at the same path, as they
  //! see the state directory); unset: such steps run their command on the node, as before.
  void SetContainerRuntime(ContainerRuntime runtime);

 private:
  struct Attempt {
    LaunchSpec spec;
    slurm::AttemptFiles files;
    int64_t job_id = 0;
    bool stop_requested = false;
    bool stop_for_timeout = false;
    bool cancel_sent = false;      // scancel ran (Stop, or the monitor after an outage)
    int64_t cancel_sent_ms = 0;    // when it ran (monotonic): unkillable_grace_ms from there
    bool given_up = false;         // still there unkillable_grace_ms after the scancel
    bool awaiting_submit = false;  // sbatch could not reach Slurm: the monitor submits it
    bool submitting = false;       // the monitor runs its sbatch now
    bool fresh = false;            // submitted by this poll: not in its squeue reply yet
    bool outage_reported = false;  // its "Slurm unreachable" event was sent
    std::vector<std::string> sbatch_args;
    bool running_reported = false;
    std::string node;
    std::string pending_reason;
    int64_t missing_since_ms = 0;
    std::optional<AttemptExit> immediate_exit;  // decided outside the poll (Adopt)
    std::unique_ptr<slurm::LogMasker> masker;   // only when the step has secrets
    int64_t raw_log_offset = 0;
    int64_t usage_read_ms = 0;   // when its usage file was last read (monotonic)
    int64_t usage_wall_ms = -1;  // the wall_ms of the last sample reported (on_usage)
    std::optional<slurm::ContainerJob> container;  // runs in its registry image
    bool awaiting_image = false;  // its image is being pulled into the cache (a puller)
    int in_use_fd = -1;           // the image bundle held in use until the attempt ends
  };

  Status CheckFeasible(const LaunchSpec& spec);
  //! spec.spread_from, when a node outside it (Ready, with the features, free CPUs, memory
  //! and GPUs as last read) can take the job now; else nothing (Slurm places it anywhere).
  std::vector<std::string> SpreadExclude(const LaunchSpec& spec);
  //! Runs sbatch for `a` (no lock held): the job id, or why not; `unreachable` is set when
  //! Slurm did not answer (try again later) rather than refused.
  Result<int64_t> Submit(const Attempt& a, bool* unreachable);
  //! After sbatch returned a job id: records it (job id file) and says so (event).
  Status Accept(Attempt* a, int64_t job_id, std::vector<AttemptEvent>* events);
  //! Submits the attempts that wait for Slurm to answer (awaiting_submit).
  void SubmitWaiting(std::vector<AttemptEvent>* events);
  //! The scancels Stop could not send while Slurm did not answer.
  void SendPendingCancels();
  //! Slurm did not answer: nothing is decided, except attempts stopped before they reached
  //! Slurm and, after patience_ms, every live attempt (kFailed).
  void WhileUnreachable(const std::string& why, std::vector<AttemptEvent>* events,
                        std::vector<AttemptExit>* exits);
  void MarkReachable(bool reachable, const std::string& why);
  //! Removes the files of an ended attempt that may hold secret values, releases its image
  //! and deletes its container if the batch script could not (killed).
  void RemoveSecretFiles(Attempt* a);
  //! The container of a registry-image attempt: its OCI config template written beside the
  //! attempt's files, from the cached bundle.
  Result<slurm::ContainerJob> PrepareContainer(const LaunchSpec& spec,
                                               const slurm::AttemptFiles& files,
                                               const std::optional<StepIdentity>& who,
                                               const image::CachedImage& image);
  //! On a puller thread: the image of a waiting attempt into the cache, then the attempt is
  //! written and left to the monitor to submit (or fails IMAGE_PULL_FAILED).
  void PullThenSubmit(std::string attempt_id, std::string pinned, std::string digest,
                      bool plain_http, std::optional<image::Credentials> credentials);
  void RefreshNodes(bool force);
  void Report(std::vector<AttemptEvent>* events, std::vector<AttemptExit>* exits,
              const std::vector<AttemptUsage>& usages = {});
  //! A running attempt's newest usage sample (its batch script's sampler), at most once a
  //! second, when it is new since the last one reported.
  void ReadLiveUsage(Attempt* a, int64_t now_ms, std::vector<AttemptUsage>* usages);
  Status WriteAttemptFiles(const LaunchSpec& spec, const slurm::AttemptFiles& files,
                           const std::optional<StepIdentity>& who,
                           const slurm::ContainerJob* container = nullptr);
  Result<std::vector<sched::Node>> QueryNodes(std::vector<slurm::NodeState>* states);
  void CopyMaskedLog(Attempt* a, bool final);
  std::optional<AttemptExit> Decide(Attempt* a, const slurm::Job* job,
                                    const std::map<std::string, slurm::NodeState>& nodes,
                                    std::vector<AttemptEvent>* events, int64_t now_ms);
  std::optional<AttemptExit> FromSacctOrExitFile(Attempt* a);
  void MonitorLoop();

  SlurmBackendOptions options_;
  Env* env_;  // options_.env or Env::Default()
  std::string files_dir_;
  std::unique_ptr<IdentityMap> identities_;  // isolation "users"
  std::unique_ptr<CommandRunner> runner_;
  std::mutex poll_mu_;  // one PollOnce at a time
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::unique_ptr<Attempt>> attempts_;  // GUARDED_BY(mu_)
  std::vector<sched::Node> node_cache_;                       // GUARDED_BY(mu_)
  int64_t node_cache_ms_ = 0;                                 // GUARDED_BY(mu_)
  int64_t nodes_reported_ms_ = 0;                             // GUARDED_BY(mu_): on_nodes
  bool stopping_ = false;                                     // GUARDED_BY(mu_)
  int64_t unreachable_since_ms_ = 0;                          // GUARDED_BY(mu_): 0 = answers
  std::string unreachable_why_;                               // GUARDED_BY(mu_)
  std::thread monitor_;
  ContainerRuntime runtime_;                   // set before the first Launch
  std::unique_ptr<image::BundleCache> cache_;  // with runtime_
  std::vector<std::thread> pullers_;           // GUARDED_BY(mu_); joined by the destructor
};

}  // namespace rsl::backend
