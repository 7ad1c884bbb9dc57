// The engine's public side: submissions (group-committed), cancels, waits, subscriptions
// to durable events, stats, the RunControl calls of hooks, and Engine's forwards to Impl.
// Every call reaches the loop thread through a message or reads the store and what the
// loop publishes under ev_mu_ (engine_internal.h).
#include <algorithm>
#include <cstdio>

#include "base/codes.h"
#include "base/file.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "spec/canonical.h"

namespace rsl::engine {
namespace {

//! Wait() reads the store this often for a run that another engine may be driving.
constexpr int64_t kWaitReadMs = 250;

}  // namespace

// --- public API ------------------------------------------------------------------------

Result<std::string> Engine::Impl::Submit(std::shared_ptr<const spec::Workload> w,
                                         const std::string& by, const SubmitOptions& opts) {
  for (int tries = 1;; ++tries) {
    auto id = SubmitOnce(w, by, opts);
    // Another process on this store committed the id between the draw and the commit (two
    // `seedctl run` at once): drawn again, the next id is free.
    if (!id.ok() && id.error().code == codes::kConflict && StartsWith(id.error().value, "wl-") &&
        tries < kMaxSubmitTries) {
      continue;
    }
    return id;
  }
}

Result<std::string> Engine::Impl::SubmitOnce(const std::shared_ptr<const spec::Workload>& w,
                                             const std::string& by, const SubmitOptions& opts) {
  int64_t now = NowMs();
  store::Batch b;
  store::WorkloadVersion v;
  // The process's ids never repeat, but one another process drew in the same second (a
  // restart, two `seedctl run`) can: a taken id is drawn anew, not failed on at the commit.
  for (int draws = 1;; ++draws) {
    v.id = store::NewVersionId(now);
    auto taken = store_->GetVersion(v.id);
    if (!taken.ok() && taken.error().code == codes::kNotFound) break;
    if (!taken.ok()) return taken.error();
    if (draws == kMaxVersionIdDraws) {
      return Error(codes::kInternal, "no free workload id for " + std::to_string(draws) +
                                         " draws (the last was " + v.id + ")")
          .Hint("the state directory holds ids this controller keeps drawing: report it");
    }
  }
  v.name = w->name;
  v.namespace_ = w->namespace_;
  v.spec_json = spec::CanonicalJson(*w);
  v.digest = "sha256:" + Sha256Hex(v.spec_json);  // = spec::SpecDigest(*w), computed once
  v.created_at = now;
  v.created_by = by;
  v.labels = w->labels;
  v.rollback_of = opts.rollback_of;
  b.versions.push_back(v);
  store::Run run;
  run.id = store::RunIdFor(v.id);
  run.workload_id = v.id;
  run.name = w->name;
  run.namespace_ = w->namespace_;
  run.created_at = now;
  run.run_dir = RunDir(RunsDirOf(opts_), run.id);
  b.runs.push_back(run);
  b.steps.reserve(w->pipeline.steps.size());  // not grown 14 times for 10,000 steps
  for (size_t i = 0; i < w->pipeline.steps.size(); ++i) {
    store::Step s;
    s.run_id = run.id;
    s.name = w->pipeline.steps[i].name;
    s.index = static_cast<int>(i);
    b.steps.push_back(s);
  }
  if (opts.commit_also) {
    b.also.push_back([write = opts.commit_also, id = v.id, name = v.name](Db* db) {
      return write(db, id, name);
    });
  }
  RSL_RETURN_IF_ERROR(CommitSubmit(&b));
  v = b.versions[0];
  int owner = LockRunOwner(env_, run.run_dir);
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return Error(codes::kInternal, "the engine is stopping");
  StartAdmission(w, v, run, owner);
  return v.id;
}

Status Engine::Impl::CommitSubmit(store::Batch* submission) {
  size_t steps = 0;  // PENDING rows of the group so far
  auto take = [&](const store::Batch& q) {
    steps += q.steps.size();
    return steps <= kMaxSubmitStepsPerCommit;
  };
  auto write = [&](const std::vector<store::Batch*>& group) {
    Status s;
    if (group.size() == 1) {
      s = store_->Apply(group[0]);
    } else {
      store::Batch merged;
      for (store::Batch* q : group) {
        store::Batch& b = *q;
        merged.versions.insert(merged.versions.end(), b.versions.begin(), b.versions.end());
        merged.runs.insert(merged.runs.end(), std::make_move_iterator(b.runs.begin()),
                           std::make_move_iterator(b.runs.end()));
        merged.steps.insert(merged.steps.end(), std::make_move_iterator(b.steps.begin()),
                            std::make_move_iterator(b.steps.end()));
        merged.also.insert(merged.also.end(), std::make_move_iterator(b.also.begin()),
                           std::make_move_iterator(b.also.end()));
      }
      s = store_->Apply(&merged);
      // Each submission gets its version back with the number the store assigned.
      size_t k = 0;
      for (store::Batch* q : group) {
        for (auto& v : q->versions) v = std::move(merged.versions[k++]);
      }
      if (!s.ok()) {
        Error e = s.error();
        e.message = "the submission was not recorded (the store failed the transaction holding " +
                    std::to_string(group.size()) +
                    " submissions; none of them was recorded): " + e.message;
        if (e.hint.empty()) e.Hint("submit it again");
        s = e;
      }
    }
    if (s.ok()) {
      std::lock_guard<std::mutex> l(ev_mu_);
      stats_.submits += static_cast<int64_t>(group.size());
      ++stats_.submit_commits;
    }
    return s;
  };
  return submits_.Commit(submission, take, write);
}

void Engine::Impl::StartAdmission(std::shared_ptr<const spec::Workload> w, store::WorkloadVersion v,
                                  store::Run run, int owner_fd) {
  if (!admissions_done_.empty()) {
    std::set<std::thread::id> done(admissions_done_.begin(), admissions_done_.end());
    admissions_done_.clear();
    auto keep = admissions_.begin();
    for (auto& t : admissions_) {
      if (done.count(t.get_id())) {
        t.join();  // it has returned from Admit; only its exit is left
        continue;
      }
      if (&*keep != &t) *keep = std::move(t);
      ++keep;
    }
    admissions_.erase(keep, admissions_.end());
  }
  admission_jobs_.emplace_back([this, w = std::move(w), v = std::move(v), run = std::move(run),
                                owner_fd] { Admit(w, v, run, owner_fd); });
  if (admission_idle_ >= admission_jobs_.size()) {
    admission_cv_.notify_one();
  } else {
    admissions_.emplace_back([this] { AdmissionWorker(); });
    ++admission_threads_;
  }
}

void Engine::Impl::AdmissionWorker() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (!admission_jobs_.empty()) {
      std::function<void()> job = std::move(admission_jobs_.front());
      admission_jobs_.pop_front();
      lock.unlock();
      job();
      job = nullptr;  // what it holds (the workload, the run) goes before the lock is taken
      lock.lock();
      continue;
    }
    if (stopping_) break;
    ++admission_idle_;
    bool woken = admission_cv_.wait_for(lock, std::chrono::milliseconds(kAdmissionIdleMs),
                                        [&] { return !admission_jobs_.empty() || stopping_; });
    --admission_idle_;
    if (!woken) break;
  }
  admissions_done_.push_back(std::this_thread::get_id());
}

bool Engine::Impl::DrainPostProcess(int64_t timeout_ms) {
  if (!sender_) return true;
  auto start = std::chrono::steady_clock::now();
  bool drained = sender_->Drain(timeout_ms);
  // Their outcomes were posted to the loop: wait until those events are durable.
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  Post(BarrierMsg{done});
  auto left = std::chrono::milliseconds(timeout_ms) - (std::chrono::steady_clock::now() - start);
  return fut.wait_for(std::max<std::chrono::steady_clock::duration>(
             left, std::chrono::milliseconds(1000))) == std::future_status::ready &&
         drained;
}

Status Engine::Impl::Cancel(const std::string& id, const std::string& by) {
  auto run_id = ResolveRunId(id);
  if (!run_id.ok()) return run_id.status();
  auto done = std::make_shared<std::promise<Status>>();
  auto fut = done->get_future();
  Post(CancelMsg{*run_id, by, done});
  if (std::this_thread::get_id() == loop_.get_id()) return Status::Ok();
  return fut.get();
}

Result<std::string> Engine::Impl::ResolveRunId(const std::string& id) {
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  return run->id;
}

Result<store::Run> Engine::Impl::Wait(const std::string& id, int64_t timeout_ms) {
  auto run_id = ResolveRunId(id);
  if (!run_id.ok()) return run_id.error();
  auto now = std::chrono::steady_clock::now();
  auto deadline = timeout_ms < 0 ? std::chrono::steady_clock::time_point::max()
                                 : now + std::chrono::milliseconds(timeout_ms);
  // Runs this engine ends land in finished_ (after their terminal record is durable); the
  // store is read again only now and then, for a run another engine drives. Reading it on
  // every durable batch cost a statement per transition.
  auto next_read = now;
  std::unique_lock<std::mutex> lock(ev_mu_);
  while (true) {
    if (finished_.count(*run_id)) break;
    now = std::chrono::steady_clock::now();
    if (now >= next_read) {
      lock.unlock();
      auto run = store_->GetRun(*run_id);
      lock.lock();
      if (!run.ok()) return run.error();
      if (spec::IsTerminal(run->phase) && run->commit_state != store::kCommitCommitting) {
        return *run;
      }
      next_read = now + std::chrono::milliseconds(kWaitReadMs);
      continue;  // finished_ may have changed while unlocked
    }
    if (now >= deadline) {
      return Error(codes::kConflict, "workload " + Quote(id) + " is still running").Value(id);
    }
    finish_cv_.wait_until(lock, std::min(deadline, next_read));
  }
  lock.unlock();
  return store_->GetRun(*run_id);
}

int Engine::Impl::Subscribe(Subscriber fn) {
  std::lock_guard<std::mutex> lock(ev_mu_);
  int token = next_token_++;
  subscribers_[token] = std::move(fn);
  return token;
}

void Engine::Impl::Unsubscribe(int token) {
  std::lock_guard<std::mutex> lock(ev_mu_);
  subscribers_.erase(token);
}

int64_t Engine::Impl::WaitForEvents(int64_t after_seq, int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(ev_mu_);
  ev_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                  [&] { return durable_seq_ > after_seq; });
  return durable_seq_;
}

Engine::Stats Engine::Impl::stats() {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(ev_mu_);
    s = stats_;
    s.finished_remembered = static_cast<int64_t>(finished_.size());
  }
  s.submits_queued = submits_.queued();
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.admission_threads = admission_threads_;
  }
  return s;
}

void Engine::Impl::RememberFinished(const std::string& run_id) {
  if (!finished_.insert(run_id).second) return;
  finished_order_.push_back(run_id);
  while (finished_order_.size() > kRememberFinished) {
    finished_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
}

std::optional<backend::AttemptUsage> Engine::Impl::LiveUsage(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(usage_mu_);
  auto it = live_usage_.find(attempt_id);
  if (it == live_usage_.end()) return std::nullopt;
  return it->second;
}

Status Engine::Impl::StopStep(const std::string& run_id, const std::string& step,
                              const std::string& reason, const std::string& message,
                              bool as_success) {
  auto id = ResolveRunId(run_id);
  if (!id.ok()) return id.status();
  auto done = std::make_shared<std::promise<Status>>();
  auto fut = done->get_future();
  Post(StopStepMsg{*id, step, reason, message, as_success, done});
  // From a hook on the loop thread: do not wait for ourselves.
  if (std::this_thread::get_id() == loop_.get_id()) return Status::Ok();
  return fut.get();
}

void Engine::Impl::EmitEvent(const std::string& run_id, const std::string& step,
                             const std::string& reason, const std::string& message) {
  // A hook called while the loop builds a turn (AfterStep, BeforeStep): the event is durable
  // with the transition it belongs to, even when that transition ends the run.
  if (std::this_thread::get_id() == loop_.get_id() && current_batch_) {
    AddEvent(current_batch_, run_id, step, reason, message, false);
    return;
  }
  Post(EmitMsg{run_id, step, reason, message});
}

// --- Engine forwards to Impl -------------------------------------------------------------

Engine::Engine(store::Store* store, backend::Backend* backend, Hooks hooks, EngineOptions options)
    : impl_(std::make_unique<Impl>(store, backend, std::move(hooks), std::move(options))) {}
Engine::~Engine() = default;
Status Engine::Start() { return impl_->Start(); }
void Engine::Stop(bool stop_steps) { impl_->Stop(stop_steps); }
Result<std::string> Engine::Submit(spec::Workload w, const std::string& by,
                                   const SubmitOptions& opts) {
  return impl_->Submit(std::make_shared<const spec::Workload>(std::move(w)), by, opts);
}
Result<std::string> Engine::Submit(std::shared_ptr<const spec::Workload> w, const std::string& by,
                                   const SubmitOptions& opts) {
  if (w == nullptr) return Error(codes::kInvalidArgument, "Engine::Submit: no workload");
  return impl_->Submit(std::move(w), by, opts);
}
Status Engine::Cancel(const std::string& id, const std::string& by) {
  return impl_->Cancel(id, by);
}
Status Engine::Recover() { return impl_->Recover(); }
Result<store::Run> Engine::Wait(const std::string& id, int64_t timeout_ms) {
  return impl_->Wait(id, timeout_ms);
}
int Engine::Subscribe(Subscriber fn) { return impl_->Subscribe(std::move(fn)); }
void Engine::Unsubscribe(int token) { impl_->Unsubscribe(token); }
int64_t Engine::WaitForEvents(int64_t after_seq, int64_t timeout_ms) {
  return impl_->WaitForEvents(after_seq, timeout_ms);
}
RunControl* Engine::control() { return impl_.get(); }
bool Engine::DrainPostProcess(int64_t timeout_ms) { return impl_->DrainPostProcess(timeout_ms); }
Result<std::string> Engine::ResolveRunId(const std::string& id) { return impl_->ResolveRunId(id); }
Engine::Stats Engine::stats() { return impl_->stats(); }
std::optional<backend::AttemptUsage> Engine::LiveUsage(const std::string& attempt_id) {
  return impl_->LiveUsage(attempt_id);
}

}  // namespace rsl::engine
