#include "api/metrics_hooks.h"

#include <algorithm>
#include <chrono>

#include "base/env.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

class TimedAdmissionCheck : public engine::AdmissionCheck {
 public:
  TimedAdmissionCheck(std::shared_ptr<engine::AdmissionCheck> inner, Metrics* metrics)
      : inner_(std::move(inner)), metrics_(metrics) {}
  std::string name() const override { return inner_->name(); }
  Status Check(const engine::RunInfo& run, engine::AdmissionReport* report) override {
    auto start = std::chrono::steady_clock::now();
    Status st = inner_->Check(run, report);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics_->Observe("rsl_reconcile_duration_seconds",
                      {{"kind", "AIWorkload"},
                       {"phase", "admission"},
                       {"result", st.ok() ? "success" : "failure"}},
                      secs);
    return st;
  }

 private:
  std::shared_ptr<engine::AdmissionCheck> inner_;
  Metrics* metrics_;
};

class MetricsStepHook : public engine::StepHook {
 public:
  MetricsStepHook(Metrics* metrics, store::Store* store) : metrics_(metrics), store_(store) {}
  std::string name() const override { return "metrics"; }

  Status BeforeStep(const engine::RunInfo& run, const spec::Step& step,
                    backend::LaunchSpec* launch) override {
    int64_t now = Env::Default()->NowMs();
    int64_t ready = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      RunTimes& t = runs_[run.run_id];
      if (t.created == 0) {
        auto r = store_->GetRun(run.run_id);
        t.created = r.ok() ? r->created_at : now;
      }
      ready = t.created;
      for (const auto& dep : step.depends_on) ready = std::max(ready, t.finished[dep]);
      ready = std::max(ready, t.finished[step.name]);  // a retry is ready when its attempt ended
      t.launched[step.name] = now;
    }
    metrics_->Observe("rsl_step_queue_seconds", {}, std::max<int64_t>(0, now - ready) / 1000.0);
    return Status::Ok();
  }

  Status AfterStep(const engine::RunInfo& run, const spec::Step& step,
                   const engine::StepOutcome& outcome) override {
    int64_t now = Env::Default()->NowMs();
    int64_t launched = now;
    {
      std::lock_guard<std::mutex> lock(mu_);
      RunTimes& t = runs_[run.run_id];
      if (t.launched.count(step.name)) launched = t.launched[step.name];
      t.finished[step.name] = now;
      t.last_exit = now;
    }
    std::string kind = ToLower(backend::ExitKindName(outcome.exit.kind));
    double secs = outcome.exit.usage.wall_ms > 0 ? outcome.exit.usage.wall_ms / 1000.0
                                                 : (now - launched) / 1000.0;
    metrics_->Observe("rsl_step_duration_seconds", {{"outcome", kind}}, secs);
    metrics_->Observe("rsl_reconcile_duration_seconds",
                      {{"kind", "AIWorkload"}, {"phase", "step"}, {"result", kind}},
                      (now - launched) / 1000.0);
    return Status::Ok();
  }

  void AfterRun(const engine::RunInfo& run, const std::string& phase,
                const std::string& committed_uri) override {
    int64_t now = Env::Default()->NowMs();
    int64_t last = now;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = runs_.find(run.run_id);
      if (it != runs_.end()) {
        if (it->second.last_exit) last = it->second.last_exit;
        runs_.erase(it);
      }
    }
    metrics_->Observe("rsl_reconcile_duration_seconds",
                      {{"kind", "AIWorkload"}, {"phase", "finalize"}, {"result", ToLower(phase)}},
                      (now - last) / 1000.0);
  }

 private:
  struct RunTimes {
    int64_t created = 0;
    int64_t last_exit = 0;
    std::map<std::string, int64_t> launched;
    std::map<std::string, int64_t> finished;
  };
  Metrics* metrics_;
  store::Store* store_;
  std::mutex mu_;
  std::map<std::string, RunTimes> runs_;  // GUARDED_BY(mu_), runs in flight
};

}  // namespace

void InstrumentHooks(engine::Hooks* hooks, Metrics* metrics, store::Store* store) {
  for (auto& check : hooks->admission) {
    check = std::make_shared<TimedAdmissionCheck>(check, metrics);
  }
  hooks->steps.push_back(std::make_shared<MetricsStepHook>(metrics, store));
}

}  // namespace rsl::api
