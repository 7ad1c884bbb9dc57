// The Slurm backend's monitor (slurm_backend.h): one poll of squeue and sinfo, what it
// decides for each attempt, and what it does while Slurm does not answer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "backend/slurm_backend.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::backend {
namespace {

std::string Seconds(int64_t ms) { return std::to_string((ms + 999) / 1000) + "s"; }

// Reads the exit record the batch script wrote; nullopt if there is none.
std::optional<AttemptExit> ReadExitRecord(const LaunchSpec& spec) {
  if (spec.exit_file.empty()) return std::nullopt;
  auto text = ReadFile(spec.exit_file);
  if (!text.ok()) return std::nullopt;
  // key=value lines, as the local backend's rsl-shim writes them.
  std::map<std::string, std::string> kv;
  for (const auto& line : Split(*text, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (!kv.count("exit_code")) return std::nullopt;
  AttemptExit e;
  e.attempt_id = spec.attempt_id;
  e.exit_code = std::atoi(kv["exit_code"].c_str());
  e.signal = std::atoi(kv["signal"].c_str());
  e.usage.wall_ms = std::atoll(kv["wall_ms"].c_str());
  e.usage.cpu_ms = std::atoll(kv["cpu_ms"].c_str());
  e.usage.peak_memory_bytes = std::atoll(kv["peak_memory_bytes"].c_str());
  e.kind = (e.exit_code == 0 && e.signal == 0) ? ExitKind::kSucceeded : ExitKind::kFailed;
  e.message = "from the exit record " + spec.exit_file;
  return e;
}

// The usage the batch script measured, where it measured it (a record from before this
// change, or from a script killed before it wrote one, leaves Slurm's wall time alone).
void TakeUsage(const std::optional<AttemptExit>& rec, AttemptExit* e) {
  if (!rec) return;
  if (rec->usage.wall_ms > 0) e->usage.wall_ms = rec->usage.wall_ms;
  if (rec->usage.cpu_ms > 0) e->usage.cpu_ms = rec->usage.cpu_ms;
  if (rec->usage.peak_memory_bytes > 0) e->usage.peak_memory_bytes = rec->usage.peak_memory_bytes;
}

// The sampler's last sample fills in what the exit record lacks (a step killed before its
// script wrote the record: --time, OOM, scancel) and gives the peak CPU rate; the average
// rate counts too when higher (as rsl-shim's).
void TakeSample(const LaunchSpec& spec, AttemptExit* e) {
  if (!spec.exit_file.empty()) {
    if (auto text = ReadFile(slurm::UsageFile(spec)); text.ok()) {
      if (auto s = slurm::ParseUsageSample(*text)) {
        if (e->usage.wall_ms <= 0) e->usage.wall_ms = s->usage.wall_ms;
        e->usage.cpu_ms = std::max(e->usage.cpu_ms, s->usage.cpu_ms);
        e->usage.peak_memory_bytes =
            std::max(e->usage.peak_memory_bytes, s->usage.peak_memory_bytes);
        e->usage.peak_cpu_millicores =
            std::max(e->usage.peak_cpu_millicores, s->usage.peak_cpu_millicores);
      }
    }
  }
  if (e->usage.wall_ms > 0) {
    e->usage.peak_cpu_millicores =
        std::max(e->usage.peak_cpu_millicores, e->usage.cpu_ms * 1000 / e->usage.wall_ms);
  }
}

}  // namespace

void SlurmBackend::ReadLiveUsage(Attempt* a, int64_t now_ms, std::vector<AttemptUsage>* usages) {
  if (!a->running_reported || a->spec.exit_file.empty()) return;
  if (a->usage_read_ms != 0 && now_ms - a->usage_read_ms < 1000) return;
  a->usage_read_ms = now_ms;
  auto text = ReadFile(slurm::UsageFile(a->spec));
  if (!text.ok()) return;
  auto s = slurm::ParseUsageSample(*text);
  if (!s || s->usage.wall_ms <= a->usage_wall_ms) return;
  a->usage_wall_ms = s->usage.wall_ms;
  usages->push_back({a->spec.attempt_id, s->usage});
}

std::optional<AttemptExit> SlurmBackend::FromSacctOrExitFile(Attempt* a) {
  if (a->job_id > 0) {
    auto out = runner_->Run({"sacct", "-c", "-P", "-n", "-j", std::to_string(a->job_id), "-o",
                             "JobID,JobName,State,ExitCode,NodeList,Start,End"});
    if (out.ok() && out->exit_code == 0) {
      auto jobs = slurm::ParseSacct(out->out);
      if (jobs.ok()) {
        for (const auto& job : *jobs) {
          if (job.job_id != a->job_id) continue;
          auto o =
              slurm::Classify(job, a->stop_requested, a->stop_for_timeout, a->spec.memory_bytes);
          if (o.phase != slurm::Phase::kFinished) continue;
          AttemptExit e;
          e.attempt_id = a->spec.attempt_id;
          e.kind = o.kind;
          e.exit_code = job.exit_code;
          e.signal = job.signal;
          e.node = job.nodes;
          e.message = o.message;
          if (job.end_time > job.start_time && job.start_time > 0) {
            e.usage.wall_ms = (job.end_time - job.start_time) * 1000;
          }
          TakeUsage(ReadExitRecord(a->spec), &e);
          return e;
        }
      }
    }
  }
  if (auto e = ReadExitRecord(a->spec)) return e;
  AttemptExit lost;
  lost.attempt_id = a->spec.attempt_id;
  lost.kind = ExitKind::kNodeLost;
  lost.node = a->node;
  lost.message = a->job_id > 0 ? "Slurm no longer knows job " + std::to_string(a->job_id) +
                                     " and it left no exit record"
                               : "no Slurm job was recorded for this attempt";
  return lost;
}

std::optional<AttemptExit> SlurmBackend::Decide(
    Attempt* a, const slurm::Job* job, const std::map<std::string, slurm::NodeState>& nodes,
    std::vector<AttemptEvent>* events, int64_t now_ms) {
  if (a->immediate_exit) return a->immediate_exit;
  if (job == nullptr) {
    if (a->missing_since_ms == 0) a->missing_since_ms = now_ms;
    if (now_ms - a->missing_since_ms < options_.vanished_grace_ms) return std::nullopt;
    return FromSacctOrExitFile(a);
  }
  a->missing_since_ms = 0;
  auto o = slurm::Classify(*job, a->stop_requested, a->stop_for_timeout, a->spec.memory_bytes);
  std::string id = "Slurm job " + std::to_string(job->job_id);
  if (o.phase == slurm::Phase::kPending) {
    if (a->running_reported) {
      // Slurm requeued a job it had started: its launch failed (the node's slurmd died
      // before the batch script ran), which Slurm retries even with --no-requeue. The step
      // never ran; it runs again wherever Slurm puts it, and its next Running event says
      // where (the engine follows the node).
      a->running_reported = false;
      a->pending_reason.clear();
      events->push_back(
          {a->spec.attempt_id, spec::EventReason::kPending,
           id + " requeued by Slurm: its launch on " + a->node + " failed; it waits to run again",
           "", /*warning=*/true});
      a->node.clear();
    }
    if (job->reason != a->pending_reason) {
      a->pending_reason = job->reason;
      if (!job->reason.empty() && job->reason != "None") {
        events->push_back({a->spec.attempt_id,
                           job->reason == "Resources" ? spec::EventReason::kInsufficientResources
                                                      : spec::EventReason::kPending,
                           id + " pending: " + job->reason, ""});
      }
    }
    return std::nullopt;
  }
  if (o.phase == slurm::Phase::kRunning) {
    if (!a->running_reported) {
      a->running_reported = true;
      a->node = job->nodes;
      events->push_back({a->spec.attempt_id, spec::EventReason::kRunning,
                         id + " running on " + job->nodes, job->nodes});
    }
    // The batch script writes the exit record as soon as the step ends; Slurm shows the job
    // RUNNING/COMPLETING for another second or two. A clean exit is final, so report it now
    // (failures wait for Slurm's verdict: it may be OUT_OF_MEMORY or TIMEOUT).
    if (auto rec = ReadExitRecord(a->spec); rec && rec->kind == ExitKind::kSucceeded) {
      rec->node = job->nodes;
      rec->message.clear();
      return rec;
    }
    // Cancelled by RSL but still there: after unkillable_grace_ms the attempt ends anyway
    // (timed out or cancelled, as asked), so a stuck job cannot hold its step forever.
    if (a->stop_requested && a->cancel_sent_ms > 0 &&
        now_ms - a->cancel_sent_ms >= options_.unkillable_grace_ms) {
      a->given_up = true;
      AttemptExit e;
      e.attempt_id = a->spec.attempt_id;
      e.kind = a->stop_for_timeout ? ExitKind::kTimedOut : ExitKind::kCancelled;
      e.node = job->nodes;
      e.message = id + " still " + job->state + " on " + job->nodes + " " +
                  std::to_string(options_.unkillable_grace_ms / 1000) +
                  " s after scancel; given up (its processes may live on there as orphans)";
      return e;
    }
    // Do not wait for Slurm's requeue (we submit with --no-requeue anyway): once Slurm
    // declares the node down, the attempt is lost and the engine may reschedule it.
    auto it = nodes.find(job->nodes);
    if (it != nodes.end() && it->second.down() && !a->stop_requested) {
      AttemptExit e;
      e.attempt_id = a->spec.attempt_id;
      e.kind = ExitKind::kNodeLost;
      e.node = job->nodes;
      e.message = "node " + job->nodes + " is down" +
                  (it->second.reason.empty() ? "" : " (" + it->second.reason + ")") + "; " + id +
                  " given up (its processes may live on there as orphans)";
      return e;
    }
    return std::nullopt;
  }
  if (!a->running_reported && !job->nodes.empty() && job->start_time > 0) {
    // It ran and ended between two polls: say so, so every attempt has its Running event.
    a->running_reported = true;
    events->push_back({a->spec.attempt_id, spec::EventReason::kRunning,
                       id + " ran on " + job->nodes, job->nodes});
  }
  AttemptExit e;
  e.attempt_id = a->spec.attempt_id;
  e.kind = o.kind;
  e.exit_code = job->exit_code;
  e.signal = job->signal;
  e.node = job->nodes.empty() ? a->node : job->nodes;
  e.message = o.message;
  if (job->end_time > job->start_time && job->start_time > 0) {
    e.usage.wall_ms = (job->end_time - job->start_time) * 1000;
  }
  // The batch script measured the step itself (wall time in milliseconds, CPU time, the
  // cgroup's peak memory: also for a step Slurm OOM-killed or timed out) and saw the signal
  // that ended it (Slurm only sees the script's exit status, 128 + the signal).
  if (auto rec = ReadExitRecord(a->spec)) {
    TakeUsage(rec, &e);
    if (o.kind == ExitKind::kSucceeded || o.kind == ExitKind::kFailed) {
      if (job->state == "FAILED" && rec->signal != 0) {
        e.signal = rec->signal;
        e.exit_code = -1;
        e.message = id + " failed" + (e.node.empty() ? "" : " on " + e.node) + ": killed by " +
                    slurm::SignalName(rec->signal);
      }
    }
  }
  return e;
}

void SlurmBackend::CopyMaskedLog(Attempt* a, bool final) {
  if (!a->masker) return;
  int fd = ::open(a->files.raw_log.c_str(), O_RDONLY | O_CLOEXEC);
  std::string chunk;
  if (fd >= 0) {
    char buf[1 << 16];
    while (true) {
      ssize_t n = ::pread(fd, buf, sizeof buf, a->raw_log_offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      chunk.append(buf, static_cast<size_t>(n));
      a->raw_log_offset += n;
    }
    ::close(fd);
  }
  std::string masked = a->masker->Feed(chunk);
  if (final) masked += a->masker->Finish();
  if (masked.empty()) return;
  int out = ::open(a->spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) return;
  size_t off = 0;
  while (off < masked.size()) {
    ssize_t n = ::write(out, masked.data() + off, masked.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::close(out);
}

void SlurmBackend::RemoveSecretFiles(Attempt* a) {
  ::unlink(a->files.env.c_str());
  ::unlink(a->files.raw_log.c_str());
  if (a->in_use_fd >= 0) ::close(std::exchange(a->in_use_fd, -1));
  // A container's config (the step's environment); also an adopted attempt's, whose
  // ContainerJob a restarted controller does not have.
  ::unlink(a->files.container_config.c_str());
  if (!a->container) return;
  // The batch script deletes its container; one killed first (SIGKILL after KillWait) left
  // runc's state behind, with its processes gone (rsl-cinit dies with runc).
  struct stat st;
  if (::stat((a->container->runc_root + "/" + a->container->id).c_str(), &st) == 0) {
    (void)runner_->Run({a->container->runc, "--root", a->container->runc_root, "delete", "--force",
                        a->container->id});
  }
  ::unlink((a->container->bundle_dir + "/config.json").c_str());
  ::rmdir(a->container->bundle_dir.c_str());
}

void SlurmBackend::Report(std::vector<AttemptEvent>* events, std::vector<AttemptExit>* exits,
                          const std::vector<AttemptUsage>& usages) {
  for (const auto& e : *events) {
    if (on_event) on_event(e);
  }
  for (const auto& u : usages) {
    if (on_usage) on_usage(u);
  }
  for (const auto& e : *exits) {
    if (on_exit) on_exit(e);
  }
}

void SlurmBackend::WhileUnreachable(const std::string& why, std::vector<AttemptEvent>* events,
                                    std::vector<AttemptExit>* exits) {
  MarkReachable(false, why);
  int64_t now = env_->MonotonicMs();
  std::lock_guard<std::mutex> lock(mu_);
  int64_t waited = now - unreachable_since_ms_;
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    Attempt* a = it->second.get();
    a->missing_since_ms = 0;  // an outage is not a vanished job
    std::optional<AttemptExit> exit = a->immediate_exit;
    if (!exit && waited >= options_.patience_ms) {
      AttemptExit e;
      e.attempt_id = a->spec.attempt_id;
      // RSL had asked it to stop: that is what happened, as far as RSL can tell.
      e.kind = !a->stop_requested    ? ExitKind::kFailed
               : a->stop_for_timeout ? ExitKind::kTimedOut
                                     : ExitKind::kCancelled;
      e.node = a->node;
      e.message = "Slurm unreachable for " + Seconds(waited) + " (" + unreachable_why_ + ")" +
                  (a->job_id > 0 ? "; Slurm job " + std::to_string(a->job_id) + " given up" : "");
      exit = e;
      // Should the job still run somewhere, its batch script no longer writes the exit record.
      if (a->job_id > 0) (void)slurm::WritePrivateFile(a->files.job_id, "lost\n", 0600);
    } else if (!exit && !a->outage_reported) {
      a->outage_reported = true;
      events->push_back({a->spec.attempt_id, spec::EventReason::kPending,
                         "Slurm unreachable (" + unreachable_why_ + "); waiting up to " +
                             Seconds(options_.patience_ms) + " for it to answer",
                         ""});
    }
    if (!exit) {
      ++it;
      continue;
    }
    CopyMaskedLog(a, true);
    RemoveSecretFiles(a);
    TakeSample(a->spec, &*exit);
    exits->push_back(std::move(*exit));
    it = attempts_.erase(it);
  }
}

void SlurmBackend::SubmitWaiting(std::vector<AttemptEvent>* events) {
  std::vector<Attempt*> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, a] : attempts_) {
      if (!a->awaiting_submit || a->immediate_exit) continue;
      a->awaiting_submit = false;
      a->submitting = true;
      waiting.push_back(a.get());
    }
  }
  bool down = false;
  for (Attempt* a : waiting) {
    bool unreachable = down;
    Result<int64_t> id = Error(codes::kInternal, "not submitted");
    if (!down) id = Submit(*a, &unreachable);
    if (id.ok()) (void)Accept(a, *id, events);
    std::lock_guard<std::mutex> lock(mu_);
    a->submitting = false;
    if (id.ok()) {
      a->fresh = true;
    } else if (unreachable) {
      down = true;
      a->awaiting_submit = true;
    } else {
      AttemptExit e;
      e.attempt_id = a->spec.attempt_id;
      e.kind = ExitKind::kFailed;
      e.message = "cannot start: " + id.error().message;
      a->immediate_exit = e;
    }
    if (a->stop_requested && !a->immediate_exit && a->job_id == 0) {
      AttemptExit e;
      e.attempt_id = a->spec.attempt_id;
      e.kind = a->stop_for_timeout ? ExitKind::kTimedOut : ExitKind::kCancelled;
      e.message = "stopped before Slurm had the job";
      a->immediate_exit = e;
    }
  }
  if (down) MarkReachable(false, "sbatch: Slurm did not answer");
}

void SlurmBackend::SendPendingCancels() {
  std::vector<int64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, a] : attempts_) {
      if (a->stop_requested && a->job_id > 0 && !a->cancel_sent && !a->immediate_exit) {
        a->cancel_sent = true;
        a->cancel_sent_ms = env_->MonotonicMs();
        ids.push_back(a->job_id);
      }
    }
  }
  for (int64_t id : ids) (void)runner_->Run({"scancel", std::to_string(id)});
}

void SlurmBackend::PollOnce() {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  std::vector<AttemptEvent> events;
  std::vector<AttemptExit> exits;
  bool idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle = attempts_.empty();
  }
  if (idle) {
    RefreshNodes(false);
    return;
  }
  // A reply with errors (22.05 exits 0 while slurmctld is down) says nothing: decide nothing.
  auto q = runner_->Run({"squeue", "--json"});
  Result<std::vector<slurm::Job>> jobs = Error(codes::kInternal, "");
  if (!q.ok()) {
    jobs = q.error();
  } else if (q->exit_code != 0) {
    jobs = Error(codes::kInternal, "squeue failed: " + std::string(Trim(q->err)));
  } else {
    jobs = slurm::ParseSqueueJson(q->out);
  }
  if (!jobs.ok()) {
    WhileUnreachable(jobs.error().message, &events, &exits);
    Report(&events, &exits);
    return;
  }
  MarkReachable(true, "");
  SubmitWaiting(&events);
  SendPendingCancels();
  std::map<int64_t, slurm::Job> by_id;
  for (auto& j : *jobs) by_id[j.job_id] = std::move(j);
  std::vector<slurm::NodeState> states;
  std::map<std::string, slurm::NodeState> node_states;
  if (QueryNodes(&states).ok()) {
    for (auto& s : states) node_states[s.name] = std::move(s);
  }

  std::vector<int64_t> to_cancel;
  std::vector<AttemptUsage> usages;
  int64_t now = env_->MonotonicMs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = attempts_.begin(); it != attempts_.end();) {
      Attempt* a = it->second.get();
      if (a->awaiting_submit || a->submitting || a->awaiting_image ||
          std::exchange(a->fresh, false)) {
        ++it;  // not in this squeue reply: decided by the next poll
        continue;
      }
      a->outage_reported = false;
      auto job = by_id.find(a->job_id);
      auto exit = Decide(a, job == by_id.end() ? nullptr : &job->second, node_states, &events, now);
      CopyMaskedLog(a, exit.has_value());
      if (!exit) {
        ReadLiveUsage(a, now, &usages);
        ++it;
        continue;
      }
      TakeSample(a->spec, &*exit);
      bool lost = exit->kind == ExitKind::kNodeLost && a->job_id > 0;
      if (lost) to_cancel.push_back(a->job_id);
      // A job given up lives on as an orphan: its batch script checks this file before
      // writing the exit record.
      if (lost || a->given_up) (void)slurm::WritePrivateFile(a->files.job_id, "lost\n", 0600);
      RemoveSecretFiles(a);
      exits.push_back(std::move(*exit));
      it = attempts_.erase(it);
    }
  }
  for (int64_t id : to_cancel) (void)runner_->Run({"scancel", std::to_string(id)});
  Report(&events, &exits, usages);
}

void SlurmBackend::MonitorLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Idle, it still reads the nodes now and then: the engine's inventory follows Slurm's.
      int64_t wait_ms = attempts_.empty() ? options_.node_refresh_ms : options_.poll_interval_ms;
      cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return stopping_; });
      if (stopping_) return;
    }
    PollOnce();
  }
}

}  // namespace rsl::backend
