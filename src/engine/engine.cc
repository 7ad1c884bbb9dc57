// The executor: one loop thread turns facts (exits, admissions, cancels) into plan
// decisions, writes them to the store in ONE transaction per loop turn (group commit), and
// only then acts on them (launch, stop, commit). See engine.h and docs/engine.md.
#include "engine/engine.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine_internal.h"
#include "sched/inventory.h"
#include "sched/placement.h"

namespace rsl::engine {
namespace {

//! After a failed store write, wait this long before trying again (the disk may be full).
constexpr int64_t kStoreRetryMs = 200;

}  // namespace

Engine::Impl::Impl(store::Store* store, backend::Backend* backend, Hooks hooks,
                   EngineOptions options)
    : store_(store),
      backend_(backend),
      hooks_(std::move(hooks)),
      opts_(std::move(options)),
      env_(opts_.env ? opts_.env : Env::Default()) {
  opts_.max_launches_per_run_per_turn = std::max(1, opts_.max_launches_per_run_per_turn);
  for (const auto& name : opts_.inherited_env) {
    if (const char* v = getenv(name.c_str())) inherited_env_[name] = v;
  }
  inherited_env_.emplace("PATH", "/usr/local/bin:/usr/bin:/bin");  // unless it was set
}

Engine::Impl::~Impl() { Stop(false); }

Status Engine::Impl::Start() {
  if (std::string runs = RunsDirOf(opts_); !runs.empty()) {
    // Passable, not listable: a step reaches its own directories by their names and learns
    // no other run's id.
    RSL_RETURN_IF_ERROR(env_->MakeDirs(runs));
    RSL_RETURN_IF_ERROR(env_->Chmod(runs, 0711));
  }
  auto nodes = backend_->ListNodes();
  if (!nodes.ok()) return nodes.status();
  backend_queues_ = backend_->QueuesAttempts();
  if (backend_queues_) {
    for (auto& n : *nodes) n.used_cpu_millis = n.used_memory_bytes = n.used_gpus = 0;
  }
  ledger_.SetNodes(std::move(*nodes), /*keep_usage=*/false);
  PublishInventory();
  default_cpu_millis_ = DefaultCpuMillis(ledger_.nodes());
  {
    // A fresh sink per Start: calls through an earlier Start's callbacks stay detached.
    std::lock_guard<std::mutex> lock(sink_->mu);
    sink_->impl = nullptr;
  }
  sink_ = std::make_shared<CallbackSink>();
  sink_->impl = this;
  std::shared_ptr<CallbackSink> sink = sink_;
  backend_->on_exit = [sink](const backend::AttemptExit& e) {
    std::lock_guard<std::mutex> lock(sink->mu);
    if (sink->impl) sink->impl->Post(ExitMsg{e});
  };
  backend_->on_event = [sink](const backend::AttemptEvent& e) {
    std::lock_guard<std::mutex> lock(sink->mu);
    if (sink->impl) sink->impl->Post(EventMsg{e});
  };
  backend_->on_nodes = [sink](const std::vector<sched::Node>& n) {
    std::lock_guard<std::mutex> lock(sink->mu);
    if (sink->impl) sink->impl->Post(NodesMsg{n});
  };
  backend_->on_usage = [sink](const backend::AttemptUsage& u) {
    std::lock_guard<std::mutex> lock(sink->mu);
    if (!sink->impl) return;
    std::lock_guard<std::mutex> usage(sink->impl->usage_mu_);  // not a transition: no turn
    sink->impl->live_usage_[u.attempt_id] = u;
  };
  {
    std::lock_guard<std::mutex> lock(ev_mu_);
    durable_seq_ = store_->LastEventSeq();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  // Webhooks left unsent by an engine that stopped or crashed are sent now (at least once).
  sender_ = std::make_unique<PostProcessSender>(store_, env_, opts_.state_dir,
                                                [this](const Delivery& d, const DeliveryResult& r) {
                                                  Post(PostProcessDoneMsg{d, r});
                                                });
  RSL_RETURN_IF_ERROR(sender_->Start());
  {
    std::lock_guard<std::mutex> lock(commit_mu_);
    commit_stop_ = false;
  }
  for (int i = 0; i < kCommitterThreads; ++i) committers_.emplace_back([this] { CommitterLoop(); });
  loop_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Engine::Impl::Stop(bool stop_steps) {
  if (!loop_.joinable()) return;
  if (stop_steps) {
    std::vector<std::string> active;
    {
      auto runs = store_->ListRuns(store::RunFilter{"", "", true, 0});
      if (runs.ok()) {
        for (const auto& r : *runs) active.push_back(r.id);
      }
    }
    for (const auto& id : active) (void)Cancel(id, "engine shutdown");
    for (const auto& id : active) (void)Wait(id, opts_.stop_grace_ms + 5000);
  }
  if (sender_) sender_->Stop();  // what is unsent stays pending for the next start
  std::vector<std::thread> admissions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    admissions.swap(admissions_);
    admissions_done_.clear();
  }
  cv_.notify_all();
  admission_cv_.notify_all();  // the queued admissions run, then their workers end
  for (auto& t : admissions) t.join();
  loop_.join();
  // The committers finish the runs handed to them (their decision is durable: leaving them
  // would only make recovery redo the same), then their terminal records are written here,
  // the loop being gone.
  {
    std::lock_guard<std::mutex> lock(commit_mu_);
    commit_stop_ = true;
  }
  commit_cv_.notify_all();
  for (auto& t : committers_) t.join();
  committers_.clear();
  store::Batch last;
  Actions ended;
  std::set<RunState*> touched;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = inbox_.begin(); it != inbox_.end();) {
      if (!std::holds_alternative<RunFilesDoneMsg>(*it)) {
        ++it;
        continue;
      }
      Handle(*it, &last, &ended, &touched);
      it = inbox_.erase(it);
    }
  }
  if (Commit(&last)) EndRuns(ended.ended_runs);
  // The callbacks stay set (reassigning them could race a backend thread's call); what
  // they reach is detached: a late exit, event or sample goes nowhere.
  std::lock_guard<std::mutex> lock(sink_->mu);
  sink_->impl = nullptr;
}

void Engine::Impl::Post(Msg m) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(std::move(m));
  }
  cv_.notify_one();
}

void Engine::Impl::Loop() {
  while (true) {
    std::deque<Msg> msgs;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (inbox_.empty() && !stopping_ && !launches_capped_) {
        int64_t wake = timers_.empty() ? INT64_MAX : timers_.begin()->first;
        if (!attempts_.empty()) wake = std::min(wake, next_progress_poll_);
        wake = std::min(wake, next_claim_renewal_ms_);
        int64_t now = NowMs();
        if (wake <= now) break;
        env_->WaitUntil(cv_, lock, wake);
        if (NowMs() >= wake) break;
      }
      if (stopping_) return;
      msgs.swap(inbox_);
    }
    launches_capped_ = false;
    store::Batch batch;
    Actions actions;
    std::set<RunState*> touched;
    current_batch_ = &batch;  // hooks' EmitEvent from here on joins this turn's transaction
    for (auto& m : msgs) Handle(m, &batch, &actions, &touched);
    // Runs with timers due, then runs waiting for resources that may have been freed, oldest
    // first. One that found no node with its smallest request free sleeps until one has it.
    int64_t now = NowMs();
    for (auto it = timers_.begin(); it != timers_.end() && it->first <= now; ++it) {
      touched.insert(it->second);
    }
    for (RunState* r : touched) Drive(r, &batch, &actions);
    for (auto it = waiting_.begin(); it != waiting_.end() && !NoWaitingRunFits();) {
      RunState* r = (it++)->second;  // Drive refiles r (under the same key) or removes it
      if (touched.count(r)) continue;
      if (r->quiet_when_full && ledger_.MaxFreeCpu() < r->min_cpu_request) continue;
      Drive(r, &batch, &actions);
    }
    if (!attempts_.empty() && now >= next_progress_poll_) {
      PollProgress(&batch);
      next_progress_poll_ = now + opts_.progress_poll_ms;
    }
    if (now >= next_claim_renewal_ms_) RenewObjectClaims(&batch);
    DecideFinishes(&actions, &batch);
    current_batch_ = nullptr;
    // Nothing decided this turn is acted on unless it is durable: an engine stopped while
    // its store refuses the batch leaves it all to recovery.
    if (!Commit(&batch)) return;
    if (!ended_unadmitted_.empty()) {  // their terminal record is durable now
      {
        std::lock_guard<std::mutex> lock(ev_mu_);
        for (const auto& id : ended_unadmitted_) RememberFinished(id);
      }
      ended_unadmitted_.clear();
      finish_cv_.notify_all();
    }
    Perform(&actions);
  }
}

bool Engine::Impl::Commit(store::Batch* b) {
  if (b->empty()) return true;
  // Counted first: the store may take the rows (store::Store::Apply).
  const auto transitions = static_cast<int64_t>(b->steps.size() + b->runs.size());
  while (true) {
    Status s = store_->Apply(b);
    if (s.ok()) break;
    fprintf(stderr, "rsl engine: cannot record state (will retry): %s\n", s.ToString().c_str());
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) return false;
    cv_.wait_for(lock, std::chrono::milliseconds(kStoreRetryMs));
  }
  std::vector<Subscriber> subs;
  {
    std::lock_guard<std::mutex> lock(ev_mu_);
    ++stats_.batches;
    stats_.running_runs = static_cast<int64_t>(runs_.size());
    stats_.transitions += transitions;
    if (!b->events.empty()) durable_seq_ = b->events.back().seq;
    for (const auto& [t, fn] : subscribers_) subs.push_back(fn);
  }
  for (const auto& e : b->events) {
    for (const auto& fn : subs) fn(e);
  }
  ev_cv_.notify_all();
  return true;
}

void Engine::Impl::AddEvent(store::Batch* b, const std::string& run_id, const std::string& step,
                            const std::string& reason, const std::string& message, bool warning) {
  store::Event e;
  e.run_id = run_id;
  e.step = step;
  e.reason = reason;
  e.message = message;
  e.type = warning ? "Warning" : "Normal";
  e.time = NowMs();
  b->events.push_back(std::move(e));
}

void Engine::Impl::RecordTransitions(RunState* r, store::Batch* b) {
  for (const auto& t : r->plan->TakeTransitions()) {
    std::string step = t.step < 0 ? "" : r->workload->pipeline.steps[size_t(t.step)].name;
    std::string msg = t.message;
    if (t.reason == spec::EventReason::kStarted && t.step >= 0 &&
        !r->slots[size_t(t.step)].launch.node.empty())
      msg += " on " + r->slots[size_t(t.step)].launch.node;
    AddEvent(b, r->run.id, step, t.reason, msg, t.warning);
  }
}

void Engine::Impl::Reschedule(RunState* r) {
  if (r->seq == 0) r->seq = ++next_run_seq_;
  int64_t at = r->plan ? r->plan->NextWakeup() : INT64_MAX;
  if (r->root_retry_at > 0) at = std::min(at, r->root_retry_at);  // its end waits for its root
  if (r->publish_retry_at > 0) at = std::min(at, r->publish_retry_at);  // publications wait too
  if (at != r->timer_at) {
    if (r->timer_at != INT64_MAX) timers_.erase({r->timer_at, r});
    if (at != INT64_MAX) timers_.insert({at, r});
    r->timer_at = at;
  }
  using W = RunState::Waiting;
  bool waits = r->plan && !r->finishing && !r->plan->ready().empty();
  FileWaiting(r, !waits ? W::kNo : r->quiet_when_full ? W::kQuiet : W::kLoud);
}

void Engine::Impl::Unschedule(RunState* r) {
  if (r->timer_at != INT64_MAX) timers_.erase({r->timer_at, r});
  r->timer_at = INT64_MAX;
  FileWaiting(r, RunState::Waiting::kNo);
}

void Engine::Impl::FileWaiting(RunState* r, RunState::Waiting now) {
  using W = RunState::Waiting;
  if (now == r->waiting) return;
  if (r->waiting == W::kNo) waiting_.emplace(r->seq, r);
  if (now == W::kNo) waiting_.erase(r->seq);
  if (r->waiting == W::kLoud) --loud_waiting_;
  if (r->waiting == W::kQuiet) {
    auto it = quiet_requests_.find(r->min_cpu_request);  // fixed for the run's life
    if (it != quiet_requests_.end()) quiet_requests_.erase(it);
  }
  if (now == W::kLoud) ++loud_waiting_;
  if (now == W::kQuiet) quiet_requests_.insert(r->min_cpu_request);
  r->waiting = now;
}

bool Engine::Impl::NoWaitingRunFits() const {
  return loud_waiting_ == 0 &&
         (quiet_requests_.empty() || ledger_.MaxFreeCpu() < *quiet_requests_.begin());
}

void Engine::Impl::Drive(RunState* r, store::Batch* b, Actions* a) {
  if (r->committing) return;  // the committer thread's until its files are done
  if (!r->plan) return Reschedule(r);
  RunPlan& plan = *r->plan;
  WhenFn when = [r](int i, std::string* note) { return r->EvalWhen(i, note); };
  int64_t now = NowMs();
  plan.Advance(now, when);
  // What the plan decided so far (a dependency's Succeeded) goes into the batch before any
  // Scheduled below, so the event log never shows a dependent placed before its dependency
  // finished.
  RecordTransitions(r, b);
  if (!r->finishing) {
    // Place ready steps while capacity lasts; a smaller request may still fit after a
    // bigger one did not, but nothing fits once no node has the smallest request free.
    // Walked by key (placing a step changes the set), never copied: a turn that places a
    // few of 10,000 ready steps costs a few steps, not 10,000.
    int launched = 0;
    bool capped = false;
    for (int key = -1;;) {
      auto next = plan.ready().upper_bound(key);
      if (next == plan.ready().end()) break;
      if (launched >= opts_.max_launches_per_run_per_turn) {
        launches_capped_ = capped = true;
        break;
      }
      int i = key = *next;
      int64_t max_free = ledger_.MaxFreeCpu();
      const spec::Step& step = r->workload->pipeline.steps[size_t(i)];
      bool explicit_request =
          step.effective.cpu_millis || step.effective.memory_bytes || step.effective.gpu;
      if (max_free < r->min_cpu_request) {
        // Full: steps without requests just queue; the others are told why, once.
        if (!explicit_request) break;
        if (r->slots[size_t(i)].insufficient_reported) continue;
      }
      std::string node, why;
      std::vector<int> gpus;
      bool report = explicit_request && !r->slots[size_t(i)].insufficient_reported;
      if (!Reserve(r, i, &node, &gpus, report ? &why : nullptr)) {
        if (report) {
          r->slots[size_t(i)].insufficient_reported = true;
          AddEvent(b, r->run.id, step.name, spec::EventReason::kInsufficientResources,
                   "waiting for capacity: " + why, true);
        }
        continue;
      }
      r->slots[size_t(i)].insufficient_reported = false;
      r->slots[size_t(i)].launch.node = node;  // so Release finds it if the build fails
      auto spec = BuildLaunch(r, i, node, gpus);
      if (!spec.ok()) {
        Release(r, i);
        plan.FailWithoutRetry(i, spec.error(), now);
        continue;
      }
      r->slots[size_t(i)].launch = std::move(*spec);
      backend::LaunchSpec& launch = r->slots[size_t(i)].launch;
      plan.OnLaunched(i, now, backend_queues_);
      attempts_[launch.attempt_id] = {r, i};
      store::Attempt att;
      att.id = launch.attempt_id;
      att.run_id = r->run.id;
      att.step = step.name;
      att.number = launch.attempt;
      att.launch_json = LaunchToJson(launch, LaunchBaseOf(r));
      att.created_at = now;
      b->attempts.push_back(std::move(att));
      std::string where = backend_queues_
                              ? "handed to " + backend_->name() + ", which chooses the node"
                              : "assigned to node " + node;
      if (!gpus.empty()) {
        if (const sched::Node* n = ledger_.Find(node)) {
          std::vector<std::string> devs;
          for (int g : gpus)
            devs.push_back("gpu" + std::to_string(g) + " " +
                           sched::DescribeDevice(n->gpus[size_t(g)]));
          where += " (" + Join(devs, ", ") + ")";
        }
      }
      AddEvent(b, r->run.id, step.name, spec::EventReason::kScheduled, where, false);
      a->launches.emplace_back(r, i);
      ++launched;
    }
    plan.Advance(now, when);  // failures above may cascade
    // Every ready step it reached was placed, queued quietly or told why it waits: until a
    // node has its smallest request free (or a message or timer touches it), driving it
    // again changes nothing.
    r->quiet_when_full = !capped && ledger_.MaxFreeCpu() < r->min_cpu_request;
  }
  for (const auto& s : plan.TakeStops()) {
    a->stops.emplace_back(r->slots[size_t(s.step)].launch.attempt_id, s.timed_out);
  }
  RecordTransitions(r, b);
  for (int i : plan.TakeDirty()) {
    SyncRecord(r, i);
    b->steps.push_back(r->slots[size_t(i)].record);
    const StepState& st = plan.state(i);
    StepSlot& slot = r->slots[size_t(i)];
    bool ended = st.phase == spec::StepPhase::kSucceeded || st.phase == spec::StepPhase::kFailed ||
                 st.phase == spec::StepPhase::kTimedOut;
    if (ended && !st.running && !slot.post_process_fired &&
        !r->workload->pipeline.steps[size_t(i)].post_process.empty()) {
      slot.post_process_fired = true;
      Status ignored;
      for (auto& d : BuildDeliveries(r, i, st.phase, st.metrics_json, slot.record.exit_code,
                                     slot.launch.attempt, st.failure_code, false, b, &ignored)) {
        // Pending before the step's end is durable: a crash now sends it on the next start.
        Status ps = sender_->Persist(d);
        if (!ps.ok()) {
          AddEvent(b, r->run.id, d.step, spec::EventReason::kPostProcessFailed,
                   d.Describe() + ": cannot record it for sending: " + ps.error().message, true);
          continue;
        }
        a->deliveries.push_back(std::move(d));
      }
    }
    if (!r->workload->pipeline.atomic && plan.state(i).phase == spec::StepPhase::kSucceeded) {
      a->publish_steps.emplace_back(r, i);
    }
  }
  if (r->publish_retry_at > 0 && now >= r->publish_retry_at) {
    r->publish_retry_at = 0;  // publications that waited for the root's lease: try again
    for (int i : r->pending_publications) a->publish_steps.emplace_back(r, i);
    r->pending_publications.clear();
  }
  if (plan.outcome() && !r->finishing) {
    r->finishing = true;
    a->finished_runs.push_back(r->run.id);
  } else if (r->root_retry_at > 0 && now >= r->root_retry_at) {
    r->root_retry_at = 0;  // its end waited for its output root: try again
    a->finished_runs.push_back(r->run.id);
  }
  Reschedule(r);
}

void Engine::Impl::Perform(Actions* a) {
  store::Batch published_batch;  // non-atomic publications of this turn: one transaction
  // An object-store root's lease, taken once per turn for its publications: they never
  // interleave with another run's commit there (a versioned run publishes under its own
  // <uri>/<run id>/, which no other commit touches: no lease).
  // A lease another run's commit holds is not waited for here: the publications wait on the
  // run's timer (100 ms doubling to 2 s, at most kOutputLockWaitMs), and the loop goes on.
  std::map<std::string, std::unique_ptr<ObjectLease>> leases;
  std::map<std::string, Status> lease_errors;
  std::map<std::string, LeaseRecord> held_by;  // base -> the lease of the run that holds it
  for (auto [r, i] : a->publish_steps) {
    std::string published;
    int64_t bytes = 0;
    store::Batch& b = published_batch;
    Status s = Status::Ok();
    if (std::string base = OutputBase(*r->workload); SharedObjectRoot(base) && !Versioned(r)) {
      auto& lease = leases[base];
      if (lease_errors.count(base)) {
        s = lease_errors[base];
      } else if (lease) {
        s = lease->Renew();
      } else if (!held_by.count(base)) {
        LeaseRecord seen;
        auto taken =
            ObjectLease::TryAcquire(hooks_.publisher.get(), env_, base, r->run.id, {}, "", &seen);
        if (!taken.ok()) {
          s = lease_errors[base] = taken.status();
        } else if (*taken) {
          lease = std::move(*taken);
        } else {
          held_by[base] = seen;
        }
      }
      if (s.ok() && !lease) {
        const int64_t now = NowMs();
        if (r->publish_wait_since == 0) r->publish_wait_since = now;
        const int64_t waited = now - r->publish_wait_since;
        if (waited >= kOutputLockWaitMs) {
          s = ObjectLease::StayedLocked(base, "", held_by[base], waited);
        } else {
          if (r->publish_retry_at == 0) {  // the run's first deferral this turn
            if (r->publish_poll_ms == 0) {
              AddEvent(&b, r->run.id, r->workload->pipeline.steps[size_t(i)].name,
                       spec::EventReason::kOutputCommitWaiting,
                       "waiting for output root " + base + ": another run (" +
                           held_by[base].run_id + ") is committing there",
                       false);
            }
            r->publish_retry_at =
                now + NextRootPollMs(&r->publish_poll_ms, waited, kOutputLockWaitMs);
            Reschedule(r);
          }
          r->pending_publications.push_back(i);
          continue;
        }
      }
    }
    r->publish_wait_since = 0;  // published, or failing below: a later wait starts afresh
    r->publish_poll_ms = 0;
    if (s.ok()) s = PublishStep(r, i, &published, &bytes);
    const std::string& name = r->workload->pipeline.steps[size_t(i)].name;
    if (s.ok() && !published.empty()) {
      r->slots[size_t(i)].record.output_dir = published;
      b.steps.push_back(r->slots[size_t(i)].record);
      b.artifacts.push_back({r->run.id, name, published, bytes, "output", ""});
      AddEvent(&b, r->run.id, name, spec::EventReason::kOutputCommitted, "published " + published,
               false);
    } else if (!s.ok()) {
      AddEvent(&b, r->run.id, name, spec::EventReason::kOutputCommitFailed, s.error().message,
               true);
    }
  }
  leases.clear();                         // released
  if (!Commit(&published_batch)) return;  // stopping: the rest waits for recovery
  for (auto [r, i] : a->launches) {
    const backend::LaunchSpec& spec = r->slots[size_t(i)].launch;
    CrashPoint("after-launch-record");
    Status s = backend_->Launch(spec);  // the backend makes the attempt's directories
    if (!s.ok()) {
      Post(LaunchFailedMsg{r->run.id, i, spec.attempt_id, s.error()});
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(ev_mu_);
      ++stats_.launches;
    }
    for (const auto& h : hooks_.steps) {
      h->OnStepStarted(r->info, r->workload->pipeline.steps[size_t(i)], spec, this);
    }
  }
  for (const auto& [attempt, timed_out] : a->stops) {
    backend_->Stop(attempt, opts_.stop_grace_ms, timed_out);
  }
  // Before the runs finish: whoever waits for a run and then drains the sender finds its
  // hooks queued.
  for (auto& d : a->deliveries) sender_->Enqueue(std::move(d));
  EndRuns(a->ended_runs);             // their terminal records are durable now
  std::vector<RunState*> non_atomic;  // what DecideFinishes left of finished_runs
  for (const auto& id : a->finished_runs) {
    auto it = runs_.find(id);
    if (it != runs_.end() && !it->second->committing) non_atomic.push_back(it->second.get());
  }
  FinishRuns(std::move(a->decided_runs), non_atomic);
  for (auto& p : a->barriers) p->set_value();
}

}  // namespace rsl::engine
