#include "runtime/policy_hooks.h"

#include <algorithm>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::runtime {

PolicyHook::PolicyHook(std::string state_dir, PolicyHookOptions options)
    : state_dir_(std::move(state_dir)), options_(std::move(options)) {}

PolicyHook::~PolicyHook() {
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, w] : watches_) keys.push_back(k);
  }
  for (const auto& k : keys) Stop(k);
  Reap(/*all=*/true);
}

Result<std::vector<govern::Policy>> PolicyHook::Applied(const std::string& dir) {
  std::lock_guard<std::mutex> lock(applied_mu_);
  if (!applied_store_ || applied_dir_ != dir) {
    applied_valid_ = false;
    applied_store_.reset();
    Result<std::unique_ptr<govern::CostStore>> opened = govern::CostStore::Open(dir);
    if (!opened.ok()) return opened.error();
    applied_store_ = std::move(*opened);
    applied_dir_ = dir;
  }
  Result<std::vector<govern::StoredPolicy>> stored = govern::ListPolicies(applied_store_.get());
  if (!stored.ok()) return stored.error();
  auto same = [](const govern::StoredPolicy& a, const govern::StoredPolicy& b) {
    return a.name == b.name && a.source == b.source && a.yaml == b.yaml &&
           a.applied_at_ms == b.applied_at_ms;
  };
  if (applied_valid_ && std::equal(stored->begin(), stored->end(), applied_stored_.begin(),
                                   applied_stored_.end(), same)) {
    return applied_;
  }
  Result<std::vector<govern::Policy>> parsed = govern::ParseStoredPolicies(*stored);
  if (!parsed.ok()) return parsed.error();
  applied_stored_ = std::move(*stored);
  applied_ = std::move(*parsed);
  applied_valid_ = true;
  return applied_;
}

Status PolicyHook::BeforeStep(const engine::RunInfo& run, const spec::Step& step,
                              backend::LaunchSpec* launch) {
  if (launch->workdir.empty()) {
    return Error(codes::kInternal, "step " + Quote(step.name) + " has no working directory");
  }
  launch->env[govern::kMetricsStreamEnv] = govern::MetricsStreamPath(launch->workdir);
  return Status::Ok();
}

void PolicyHook::OnStepStarted(const engine::RunInfo& run, const spec::Step& step,
                               const backend::LaunchSpec& launch, engine::RunControl* control) {
  std::vector<govern::Policy> policies;
  if (options_.policies) {
    policies = *options_.policies;
  } else {
    std::string dir = state_dir_.empty() ? run.state_dir : state_dir_;
    Result<std::vector<govern::Policy>> loaded = Applied(dir);
    if (!loaded.ok()) {
      if (control) {
        control->EmitEvent(run.run_id, launch.step, "PolicyLoadFailed", loaded.error().ToString());
      }
      return;
    }
    policies = std::move(*loaded);
  }
  Reap(/*all=*/false);
  if (policies.empty()) return;

  govern::WatchedAttempt target;
  target.state_dir = state_dir_.empty() ? run.state_dir : state_dir_;
  target.workload_id = run.workload_id;
  target.run_id = run.run_id;
  if (run.workload) {
    target.workload = run.workload->name;
    target.namespace_ = run.workload->namespace_;
    target.labels = run.workload->labels;
  }
  target.step = launch.step.empty() ? step.name : launch.step;
  target.attempt = launch.attempt;
  auto it = launch.env.find(govern::kMetricsStreamEnv);
  target.stream = it != launch.env.end() ? it->second : govern::MetricsStreamPath(launch.workdir);
  govern::PolicyControl actions;
  if (control) {
    std::string run_id = run.run_id, step_name = target.step;
    actions.stop_step = [control, run_id, step_name](const std::string& reason,
                                                     const std::string& message, bool as_success) {
      return control->StopStep(run_id, step_name, reason, message, as_success);
    };
    actions.emit = [control, run_id, step_name](const std::string& reason,
                                                const std::string& message) {
      control->EmitEvent(run_id, step_name, reason, message);
    };
  }
  govern::PolicyWatchOptions watch_options{options_.poll_ms, options_.now_s};
  std::string key = launch.attempt_id.empty()
                        ? run.run_id + "/" + launch.step + "/" + std::to_string(launch.attempt)
                        : launch.attempt_id;
  std::lock_guard<std::mutex> lock(mu_);
  auto w = std::make_unique<Watch>();
  Watch* raw = w.get();
  // The watch ends with the attempt (AfterStep) at the latest.
  raw->thread = std::thread([raw, target = std::move(target), policies = std::move(policies),
                             watch_options, actions = std::move(actions)] {
    govern::WatchPolicies(target, policies, watch_options, actions, raw->stop);
    raw->done = true;
  });
  watches_[key] = std::move(w);
}

Status PolicyHook::AfterStep(const engine::RunInfo& run, const spec::Step& step,
                             const engine::StepOutcome& outcome) {
  std::string key = outcome.exit.attempt_id.empty()
                        ? run.run_id + "/" + outcome.step + "/" + std::to_string(outcome.attempt)
                        : outcome.exit.attempt_id;
  Stop(key);
  return Status::Ok();
}

void PolicyHook::Stop(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = watches_.find(key);
  if (it == watches_.end()) return;
  it->second->stop = true;
  retired_.push_back(std::move(it->second));
  watches_.erase(it);
}

void PolicyHook::Reap(bool all) {
  std::vector<std::unique_ptr<Watch>> to_join;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = retired_.begin(); it != retired_.end();) {
      if (all || (*it)->done) {
        to_join.push_back(std::move(*it));
        it = retired_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : to_join) {
    if (w->thread.joinable()) w->thread.join();
  }
}

}  // namespace rsl::runtime
