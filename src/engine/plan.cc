#include "engine/plan.h"

#include <climits>
#include <cmath>

#include "base/codes.h"

namespace rsl::engine {

using spec::EventReason;
using spec::RunPhase;
using spec::StepPhase;

namespace {

std::string Duration(int64_t ms) {
  if (ms % 1000 != 0 || ms == 0) return std::to_string(ms) + "ms";
  int64_t s = ms / 1000;
  if (s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

const char* CodeFor(backend::ExitKind kind) {
  switch (kind) {
    case backend::ExitKind::kOomKilled:
      return codes::kStepOomKilled;
    case backend::ExitKind::kTimedOut:
      return codes::kStepTimedOut;
    default:
      return codes::kStepFailed;
  }
}

}  // namespace

RunPlan::RunPlan(const spec::Workload* workload, int64_t started_at) : workload_(workload) {
  const auto& steps = workload->pipeline.steps;
  size_t n = steps.size();
  steps_.resize(n);
  deps_.resize(n);
  dependents_.resize(n);
  open_deps_.resize(n);
  for (size_t i = 0; i < n; ++i) index_[steps[i].name] = static_cast<int>(i);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& d : steps[i].depends_on) {
      auto it = index_.find(d);
      if (it == index_.end()) continue;  // validation rejects this; be robust anyway
      deps_[i].push_back(it->second);
      dependents_[size_t(it->second)].push_back(static_cast<int>(i));
    }
    open_deps_[i] = static_cast<int>(deps_[i].size());
    if (open_deps_[i] == 0) candidates_.push_back(static_cast<int>(i));
  }
  if (workload->timeout_ms) run_deadline_ = started_at + *workload->timeout_ms;
  MaybeDone();  // an empty pipeline succeeds at once
}

int RunPlan::IndexOf(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

bool RunPlan::Terminal(int i) const {
  if (steps_[size_t(i)].running) return false;  // TIMED_OUT while its attempt is stopped
  return spec::IsTerminal(steps_[size_t(i)].phase);
}

int64_t RunPlan::RetryDelayMs(const spec::RetryPolicy& policy, int retry_number) {
  double delay = double(policy.backoff_ms) * std::pow(policy.backoff_factor, retry_number - 1);
  if (policy.max_backoff_ms && delay > double(*policy.max_backoff_ms)) {
    delay = double(*policy.max_backoff_ms);
  }
  if (delay > double(INT64_MAX / 2)) delay = double(INT64_MAX / 2);
  return static_cast<int64_t>(delay);
}

void RunPlan::SetPhase(int i, StepPhase phase, std::optional<EventReason> reason,
                       const std::string& message, bool warning) {
  steps_[size_t(i)].phase = phase;
  if (!message.empty()) steps_[size_t(i)].message = message;
  dirty_.insert(i);
  if (reason) transitions_.push_back({i, *reason, message, warning});
}

void RunPlan::Finish(int i, StepPhase phase, std::optional<EventReason> reason,
                     const std::string& message, bool warning) {
  if (Terminal(i)) return;
  ready_.erase(i);
  SetPhase(i, phase, reason, message, warning);
  ++terminal_;
  for (int d : dependents_[size_t(i)]) {
    if (--open_deps_[size_t(d)] == 0) candidates_.push_back(d);
  }
}

void RunPlan::Restore(int i, const StepState& s) {
  StepState& st = steps_[size_t(i)];
  StepPhase phase = s.phase;
  st = s;
  st.phase = StepPhase::kPending;
  st.stop_requested = false;
  st.timeout_fired = false;
  if (phase == StepPhase::kPending && s.running) {
    st.phase = phase;
    st.running = true;
    st.queued = true;
    ++running_;
  } else if (phase == StepPhase::kRunning) {
    st.phase = phase;
    st.running = true;
    ++running_;
    const auto& timeout = step_spec(i).timeout_ms;
    if (timeout) deadlines_.insert({st.started_at + *timeout, i});
  } else if (phase == StepPhase::kTimedOut && s.running) {
    // Its timeout had fired and its attempt was being stopped: ask again (the stop may never
    // have been sent), without a second TimedOut.
    st.phase = phase;
    st.running = true;
    st.timeout_fired = true;
    st.stop_requested = true;
    ++running_;
    stops_.push_back({i, true});
  } else if (phase == StepPhase::kRetrying) {
    st.phase = phase;
    st.running = false;
    retry_due_.insert({st.next_attempt_at, i});
  } else if (phase != StepPhase::kPending) {
    st.running = false;
    ++terminal_;
    st.phase = phase;
    for (int d : dependents_[size_t(i)]) {
      if (--open_deps_[size_t(d)] == 0) candidates_.push_back(d);
    }
    if ((phase == StepPhase::kFailed || phase == StepPhase::kTimedOut) && first_failure_ < 0) {
      first_failure_ = i;
      if (workload_->pipeline.atomic) failing_ = true;
    }
  } else {
    st.running = false;
  }
}

void RunPlan::StartFailing(const std::string& why) {
  failing_ = true;
  std::set<int> ready = ready_;
  for (int i : ready)
    Finish(i, StepPhase::kSkipped, EventReason::kSkipped, "not started: " + why, false);
  auto due = retry_due_;
  retry_due_.clear();
  for (const auto& [t, i] : due) {
    Finish(i, StepPhase::kCancelled, EventReason::kCancelled, "retry abandoned: " + why, false);
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    StepState& st = steps_[i];
    if (st.running && !st.stop_requested) {
      st.stop_requested = true;
      stops_.push_back({static_cast<int>(i), false});
    }
  }
}

void RunPlan::EvaluateCandidate(int i, const WhenFn& when) {
  StepState& st = steps_[size_t(i)];
  if (st.phase != StepPhase::kPending || st.running || ready_.count(i)) return;
  const spec::Step& spec = step_spec(i);
  if (cancelled_ || timed_out_) {
    Finish(i, StepPhase::kCancelled, EventReason::kCancelled,
           cancelled_ ? "not started: the run was cancelled" : "not started: the run timed out",
           false);
    return;
  }
  for (int d : deps_[size_t(i)]) {
    StepPhase p = steps_[size_t(d)].phase;
    if (p != StepPhase::kSucceeded) {
      Finish(i, StepPhase::kSkipped, EventReason::kSkipped,
             "dependency " + step_spec(d).name + " is " + spec::Name(p), false);
      return;
    }
  }
  if (failing_) {
    Finish(i, StepPhase::kSkipped, EventReason::kSkipped,
           "not started: step " + step_spec(first_failure_).name + " failed", false);
    return;
  }
  if (!spec.when.empty()) {
    std::string note;
    Result<bool> r = when ? when(i, &note) : Result<bool>(true);
    if (!r.ok()) {
      st.failure_code = r.error().code.empty() ? codes::kExpressionInvalid : r.error().code;
      Finish(i, StepPhase::kFailed, EventReason::kFailed,
             "when " + spec.when + ": " + r.error().message, true);
      if (first_failure_ < 0) first_failure_ = i;
      if (workload_->pipeline.atomic) StartFailing("step " + spec.name + " failed");
      return;
    }
    if (!*r) {
      Finish(i, StepPhase::kSkipped, EventReason::kSkipped,
             "when " + spec.when + " is false" + (note.empty() ? "" : " (" + note + ")"), false);
      return;
    }
  }
  ready_.insert(i);
}

void RunPlan::Advance(int64_t now, const WhenFn& when) {
  if (outcome_) return;
  if (!timed_out_ && !cancelled_ && now >= run_deadline_) {
    timed_out_ = true;
    transitions_.push_back(
        {-1, EventReason::kTimedOut,
         "the run exceeded its time limit of " + Duration(*workload_->timeout_ms), true});
    std::set<int> ready = ready_;
    for (int i : ready)
      Finish(i, StepPhase::kCancelled, EventReason::kCancelled, "not started: the run timed out",
             false);
    auto due = retry_due_;
    retry_due_.clear();
    for (const auto& [t, i] : due) {
      Finish(i, StepPhase::kCancelled, EventReason::kCancelled,
             "retry abandoned: the run timed out", false);
    }
    for (size_t i = 0; i < steps_.size(); ++i) {
      StepState& st = steps_[i];
      if (st.running && !st.stop_requested) {
        st.failure_code = codes::kWorkloadTimedOut;
        FireTimeout(static_cast<int>(i), "stopped: the run's time limit passed");
      }
    }
  }
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    int i = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    StepState& st = steps_[size_t(i)];
    if (st.running && !st.stop_requested) {
      st.failure_code = codes::kStepTimedOut;
      FireTimeout(
          i, "step exceeded its time limit of " + Duration(step_spec(i).timeout_ms.value_or(0)));
    }
  }
  while (!retry_due_.empty() && retry_due_.begin()->first <= now) {
    int i = retry_due_.begin()->second;
    retry_due_.erase(retry_due_.begin());
    ready_.insert(i);
  }
  if (failing_) {
    // After a restore: make sure nothing of a failing atomic run keeps running.
    for (size_t i = 0; i < steps_.size(); ++i) {
      StepState& st = steps_[i];
      if (st.running && !st.stop_requested) {
        st.stop_requested = true;
        stops_.push_back({static_cast<int>(i), false});
      }
    }
  }
  while (!candidates_.empty()) {
    int i = candidates_.front();
    candidates_.pop_front();
    EvaluateCandidate(i, when);
  }
  MaybeDone();
}

void RunPlan::FireTimeout(int i, const std::string& message) {
  StepState& st = steps_[size_t(i)];
  st.stop_requested = true;
  st.timeout_fired = true;
  stops_.push_back({i, true});
  SetPhase(i, StepPhase::kTimedOut, EventReason::kTimedOut, message, true);
}

void RunPlan::OnLaunched(int i, int64_t now, bool queued) {
  StepState& st = steps_[size_t(i)];
  ready_.erase(i);
  ++st.attempts;
  st.running = true;
  st.queued = queued;
  st.stop_requested = false;
  st.timeout_fired = false;
  st.launched_at = now;
  st.started_at = 0;
  st.finished_at = 0;
  st.next_attempt_at = 0;
  ++running_;
  if (queued) {
    SetPhase(i, StepPhase::kPending, std::nullopt,
             "attempt " + std::to_string(st.attempts) + " waits in the scheduler's queue", false);
    return;
  }
  st.started_at = now;
  const auto& timeout = step_spec(i).timeout_ms;
  if (timeout) deadlines_.insert({now + *timeout, i});
  SetPhase(i, StepPhase::kRunning, EventReason::kStarted, "attempt " + std::to_string(st.attempts),
           false);
}

bool RunPlan::OnRunning(int i, int64_t now) {
  StepState& st = steps_[size_t(i)];
  if (!st.running || !st.queued) return false;
  st.queued = false;
  st.started_at = now;
  const auto& timeout = step_spec(i).timeout_ms;
  if (timeout) deadlines_.insert({now + *timeout, i});
  // A run timeout or a stop that came while it was queued keeps its phase and message.
  if (st.phase == StepPhase::kPending) {
    SetPhase(i, StepPhase::kRunning, EventReason::kStarted,
             "attempt " + std::to_string(st.attempts), false);
  } else {
    dirty_.insert(i);
  }
  return true;
}

void RunPlan::OnQueued(int i, const std::string& why) {
  StepState& st = steps_[size_t(i)];
  if (!st.running || !st.queued || st.phase != StepPhase::kPending || why.empty()) return;
  st.message = why;
  dirty_.insert(i);
}

void RunPlan::OnExit(int i, const backend::AttemptExit& exit, const std::string& metrics_json,
                     int64_t now, const Status& hook_error) {
  StepState& st = steps_[size_t(i)];
  if (!st.running) return;  // a stale report: the attempt was already accounted for
  st.running = false;
  st.queued = false;
  --running_;
  for (auto it = deadlines_.begin(); it != deadlines_.end(); ++it) {
    if (it->second == i) {
      deadlines_.erase(it);
      break;
    }
  }
  st.finished_at = now;
  if (!metrics_json.empty()) st.metrics_json = metrics_json;
  const spec::Step& spec = step_spec(i);
  bool ending = failing_ || cancelled_ || timed_out_;
  using backend::ExitKind;
  // A timeout that fired was recorded then (phase TIMED_OUT, event TimedOut, failure code
  // STEP_TIMED_OUT or WORKLOAD_TIMED_OUT): whatever the attempt did since (died of the
  // SIGTERM or the SIGKILL, ended on its own before the stop reached it, lost its node), it
  // ends as timed out, and the timeout that fired first is the one on record.
  bool fired = std::exchange(st.timeout_fired, false);
  bool run_limit = fired && st.failure_code == codes::kWorkloadTimedOut;
  if (fired) st.phase = StepPhase::kRunning;  // not terminal yet: the end below decides it
  ExitKind kind = fired ? ExitKind::kTimedOut : exit.kind;
  std::string exit_message = exit.message;
  if (fired && exit.kind != ExitKind::kTimedOut) {
    exit_message = "stopped: time limit exceeded (" + exit.message + ")";
  }
  if (kind == ExitKind::kTimedOut && !run_limit && spec.timeout_ms) {
    // Name the limit in the spec's units: "stopped: time limit of 10m exceeded (...)".
    const std::string plain = "time limit exceeded";
    if (size_t at = exit_message.find(plain); at != std::string::npos) {
      exit_message.replace(at, plain.size(),
                           "time limit of " + Duration(*spec.timeout_ms) + " exceeded");
    }
  }
  switch (kind) {
    case ExitKind::kSucceeded:
      if (hook_error.ok()) {
        st.failure_code.clear();
        Finish(i, StepPhase::kSucceeded, EventReason::kSucceeded, exit.message, false);
        break;
      }
      st.failure_code = hook_error.code();
      Finish(i, StepPhase::kFailed, EventReason::kFailed, hook_error.error().message, true);
      if (first_failure_ < 0) first_failure_ = i;
      if (workload_->pipeline.atomic) StartFailing("step " + spec.name + " failed");
      break;
    case ExitKind::kNodeLost:
      if (ending) {
        Finish(i, StepPhase::kCancelled, EventReason::kCancelled,
               "node lost while the run was ending", false);
        break;
      }
      // Not the step's fault: start it again without spending a retry.
      SetPhase(i, StepPhase::kPending, EventReason::kRescheduled, exit.message, true);
      ready_.insert(i);
      break;
    case ExitKind::kCancelled:
      Finish(i, StepPhase::kCancelled, EventReason::kCancelled, exit.message, false);
      break;
    case ExitKind::kFailed:
    case ExitKind::kOomKilled:
    case ExitKind::kTimedOut: {
      if (run_limit || (!fired && timed_out_ && kind == ExitKind::kTimedOut)) {
        // The run's limit stopped it (its TimedOut was recorded when the limit passed).
        st.failure_code = codes::kWorkloadTimedOut;
        Finish(i, StepPhase::kTimedOut,
               fired ? std::nullopt : std::optional(EventReason::kTimedOut),
               "stopped: the run's time limit passed", true);
        break;
      }
      if (ending) {
        // Stopped because the run is failing or cancelled, but it failed on its own first.
        st.failure_code = exit.code.empty() ? CodeFor(kind) : exit.code;
        Finish(i, kind == ExitKind::kTimedOut ? StepPhase::kTimedOut : StepPhase::kFailed,
               kind == ExitKind::kOomKilled ? EventReason::kOomKilled : EventReason::kFailed,
               exit_message, true);
        break;
      }
      if (kind == ExitKind::kOomKilled)
        transitions_.push_back({i, EventReason::kOomKilled, exit.message, true});
      if (kind == ExitKind::kTimedOut && !fired) {
        // A limit we did not fire (the scheduler's own): recorded as it is learnt.
        transitions_.push_back(
            {i, EventReason::kTimedOut,
             "step exceeded its time limit of " + Duration(spec.timeout_ms.value_or(0)), true});
      }
      st.failure_code = exit.code.empty() ? CodeFor(kind) : exit.code;
      if (st.retries_used < spec.retry.max_retries) {
        ++st.retries_used;
        int64_t delay = RetryDelayMs(spec.retry, st.retries_used);
        st.next_attempt_at = now + delay;
        retry_due_.insert({st.next_attempt_at, i});
        SetPhase(i, StepPhase::kRetrying, EventReason::kRetrying,
                 "attempt " + std::to_string(st.attempts) + " failed (" + exit_message +
                     "); retry " + std::to_string(st.retries_used) + " of " +
                     std::to_string(spec.retry.max_retries) + " in " + Duration(delay),
                 true);
        break;
      }
      StepPhase phase = kind == ExitKind::kTimedOut ? StepPhase::kTimedOut : StepPhase::kFailed;
      std::string msg = exit_message;
      if (spec.retry.max_retries > 0) {
        msg += " (after " + std::to_string(st.attempts) + " attempts)";
      }
      Finish(i, phase, EventReason::kFailed, msg, true);
      if (first_failure_ < 0) first_failure_ = i;
      if (workload_->pipeline.atomic) StartFailing("step " + spec.name + " failed");
      break;
    }
  }
  MaybeDone();
}

void RunPlan::FailWithoutRetry(int i, const Error& error, int64_t now) {
  StepState& st = steps_[size_t(i)];
  ready_.erase(i);
  st.finished_at = now;
  st.failure_code = error.code;
  Finish(i, StepPhase::kFailed, EventReason::kFailed, error.message, true);
  if (first_failure_ < 0) first_failure_ = i;
  if (workload_->pipeline.atomic) StartFailing("step " + step_spec(i).name + " failed");
  MaybeDone();
}

void RunPlan::Cancel(int64_t now, const std::string& by) {
  if (outcome_ || cancelled_) return;
  cancelled_ = true;
  cancelled_by_ = by;
  std::set<int> ready = ready_;
  for (int i : ready)
    Finish(i, StepPhase::kCancelled, EventReason::kCancelled, "not started: the run was cancelled",
           false);
  auto due = retry_due_;
  retry_due_.clear();
  for (const auto& [t, i] : due) {
    Finish(i, StepPhase::kCancelled, EventReason::kCancelled,
           "retry abandoned: the run was cancelled", false);
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    StepState& st = steps_[i];
    if (st.running && !st.stop_requested) {
      st.stop_requested = true;
      stops_.push_back({static_cast<int>(i), false});
    }
  }
  (void)now;
}

std::vector<StopRequest> RunPlan::TakeStops() { return std::exchange(stops_, {}); }
std::vector<Transition> RunPlan::TakeTransitions() { return std::exchange(transitions_, {}); }
std::set<int> RunPlan::TakeDirty() { return std::exchange(dirty_, {}); }

int64_t RunPlan::NextWakeup() const {
  int64_t t = INT64_MAX;
  if (outcome_) return t;
  if (!retry_due_.empty()) t = std::min(t, retry_due_.begin()->first);
  if (!deadlines_.empty()) t = std::min(t, deadlines_.begin()->first);
  if (!timed_out_ && !cancelled_) t = std::min(t, run_deadline_);
  return t;
}

void RunPlan::MaybeDone() {
  if (outcome_ || running_ > 0 || terminal_ < static_cast<int>(steps_.size())) return;
  RunOutcome o;
  if (cancelled_) {
    o = {RunPhase::kCancelled, codes::kWorkloadCancelled,
         "cancelled" + (cancelled_by_.empty() ? std::string() : " by " + cancelled_by_)};
  } else if (timed_out_) {
    o = {RunPhase::kTimedOut, codes::kWorkloadTimedOut,
         "the run exceeded its time limit of " + Duration(workload_->timeout_ms.value_or(0))};
  } else if (first_failure_ >= 0) {
    const StepState& f = steps_[size_t(first_failure_)];
    o = {RunPhase::kFailed, f.failure_code.empty() ? codes::kStepFailed : f.failure_code,
         "step " + step_spec(first_failure_).name + ": " + f.message};
  } else {
    o = {RunPhase::kSucceeded, "", ""};
  }
  outcome_ = o;
}

}  // namespace rsl::engine
