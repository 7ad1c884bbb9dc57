#include "govern/policy_hook.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "govern/cost.h"
#include "govern/webhook.h"

namespace rsl::govern {
namespace {
constexpr std::streamoff kMaxStreamRead = 1 << 20;
}  // namespace

using nlohmann::json;

namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t WallMs() { return static_cast<int64_t>(WallSeconds() * 1000); }

std::string Metrics(const std::map<std::string, double>& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s=%.4g", out.empty() ? "" : ", ", k.c_str(), v);
    out += buf;
  }
  return out;
}

}  // namespace

PolicyHook::PolicyHook(std::string state_dir, PolicyHookOptions options)
    : state_dir_(std::move(state_dir)), options_(std::move(options)) {
  if (!options_.now_s) options_.now_s = WallSeconds;
}

PolicyHook::~PolicyHook() {
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, w] : watches_) keys.push_back(k);
  }
  for (const auto& k : keys) Stop(k);
  Reap(/*all=*/true);
}

std::string PolicyHook::StreamPath(const std::string& workdir) {
  return workdir + "/.rsl-metrics-stream.jsonl";
}

Status PolicyHook::BeforeStep(const engine::RunInfo& run, const spec::Step& step,
                              backend::LaunchSpec* launch) {
  if (launch->workdir.empty()) {
    return Error(codes::kInternal, "step " + Quote(step.name) + " has no working directory");
  }
  launch->env[kMetricsStreamEnv] = StreamPath(launch->workdir);
  return Status::Ok();
}

void PolicyHook::OnStepStarted(const engine::RunInfo& run, const spec::Step& step,
                               const backend::LaunchSpec& launch, engine::RunControl* control) {
  std::vector<Policy> policies;
  if (options_.policies) {
    policies = *options_.policies;
  } else {
    std::string dir = state_dir_.empty() ? run.state_dir : state_dir_;
    Result<std::vector<Policy>> loaded = LoadPolicies(dir);
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
  auto it = launch.env.find(kMetricsStreamEnv);
  std::string stream = it != launch.env.end() ? it->second : StreamPath(launch.workdir);
  std::map<std::string, std::string> labels;
  if (run.workload) labels = run.workload->labels;
  std::string key = launch.attempt_id.empty() ? run.run_id + "/" + launch.step + "/" +
                                                    std::to_string(launch.attempt)
                                              : launch.attempt_id;
  std::lock_guard<std::mutex> lock(mu_);
  auto w = std::make_unique<Watch>();
  Watch* raw = w.get();
  // RunInfo's workload pointer stays valid for the run's lifetime; the watcher ends with
  // the attempt (AfterStep) at the latest.
  raw->thread = std::thread(&PolicyHook::Run, this, raw, run, launch.step.empty() ? step.name : launch.step,
                            launch.attempt, stream, labels, std::move(policies), control);
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

void PolicyHook::RecordAction(const std::string& dir, const std::string& run_id, const std::string& step, int attempt,
                              const std::string& rule, const std::string& action,
                              const std::string& detail) {
  if (dir.empty()) return;
  Result<std::unique_ptr<CostStore>> store = CostStore::Open(dir);
  if (!store.ok()) return;
  Result<Stmt> st = (*store)->db()->Prepare(
      "INSERT INTO govern_policy_actions(at_ms, run_id, step, attempt, rule, action, detail)"
      " VALUES(?,?,?,?,?,?,?)");
  if (!st.ok()) return;
  st->Bind(1, WallMs()).Bind(2, run_id).Bind(3, step).Bind(4, static_cast<int64_t>(attempt))
      .Bind(5, rule).Bind(6, action).Bind(7, detail);
  (void)st->Run();
}

void PolicyHook::Run(Watch* w, engine::RunInfo run, std::string step, int attempt,
                     std::string stream, std::map<std::string, std::string> labels,
                     std::vector<Policy> policies, engine::RunControl* control) {
  const std::string dir = state_dir_.empty() ? run.state_dir : state_dir_;
  // One metrics window per policy (each has its own tolerance and window).
  std::vector<MetricsWindow> windows;
  for (const auto& p : policies) windows.emplace_back(p.loss_tolerance, p.gpu_util_window_s);
  std::map<std::string, bool> fired;  // "<policy>/<rule>"
  std::streamoff offset = 0;
  std::string partial;
  bool stopped = false;
  while (!w->stop && !stopped) {
    // Read what was appended since last time; keep an unterminated last line for later.
    // The step owns the file: a link or anything but a regular file is not read (we may
    // be root), nor more than kMaxStreamRead at a time.
    int fd = open(stream.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      std::streamoff size = st.st_size;
      if (size < offset) offset = 0;  // truncated: start over
      if (size > offset) {
        size_t want = size_t(std::min<std::streamoff>(size - offset, kMaxStreamRead));
        std::string chunk(want, '\0');
        ssize_t got = pread(fd, chunk.data(), want, off_t(offset));
        chunk.resize(got > 0 ? size_t(got) : 0);
        offset += std::streamoff(chunk.size());
        partial += chunk;
        double now = options_.now_s();
        size_t nl;
        while ((nl = partial.find('\n')) != std::string::npos) {
          std::string line = partial.substr(0, nl);
          partial.erase(0, nl + 1);
          for (auto& win : windows) win.Feed(line, now);
        }
        if (partial.size() > kMaxStreamRead) partial.clear();  // no line is that long
      }
    }
    if (fd >= 0) close(fd);
    double now = options_.now_s();
    for (size_t pi = 0; pi < policies.size() && !stopped; ++pi) {
      const Policy& p = policies[pi];
      std::map<std::string, double> snap = windows[pi].Snapshot(now);
      for (const auto& rule : p.rules) {
        std::string id = p.name + "/" + rule.name;
        if (fired[id]) continue;
        if (!ConditionHolds(rule, snap, windows[pi].latest(), nullptr)) continue;
        fired[id] = true;
        std::string why = "policy " + p.name + " rule " + rule.name + ": " + rule.condition +
                          " (" + Metrics(snap) + ")";
        json metrics = snap;
        json body = {{"policy", p.name},
                     {"rule", {{"name", rule.name}, {"condition", rule.condition}}},
                     {"workload",
                      {{"name", run.workload ? run.workload->name : ""},
                       {"namespace", run.workload ? run.workload->namespace_ : ""},
                       {"id", run.workload_id},
                       {"run", run.run_id},
                       {"step", step},
                       {"attempt", attempt},
                       {"labels", labels}}},
                     {"metrics", metrics},
                     {"latest", windows[pi].latest()},
                     {"time", now}};
        json actions = json::array();
        for (const auto& a : rule.actions) actions.push_back(a.text);
        body["actions"] = actions;
        // Stop and scale first (they save money), then tell people.
        for (const auto& a : rule.actions) {
          if (a.kind == PolicyAction::Kind::kStop) {
            RecordAction(dir, run.run_id, step, attempt, rule.name, a.text, why);
            if (control) {
              Status st = control->StopStep(run.run_id, step, "PolicyStopped", why, a.as_success);
              if (!st.ok()) control->EmitEvent(run.run_id, step, "PolicyStopFailed", st.ToString());
            }
            stopped = true;
          } else if (a.kind == PolicyAction::Kind::kScaleDown) {
            std::string msg = why + "; desired replicas " + std::to_string(a.replicas) +
                              " recorded (no serving autoscaler yet: nothing was resized)";
            RecordAction(dir, run.run_id, step, attempt, rule.name, a.text, msg);
            if (control) control->EmitEvent(run.run_id, step, "PolicyScaledDown", msg);
          }
        }
        for (const auto& a : rule.actions) {
          if (a.kind != PolicyAction::Kind::kNotify) continue;
          const Webhook& hook = p.webhooks.at(a.webhook);
          WebhookResult res;
          Status st = PostJson(hook.url, body.dump(), hook.retries, &res);
          std::string msg = (st.ok() ? "notified " : "notify failed: ") + a.webhook + " (" +
                            RedactUrl(hook.url) + ", " + std::to_string(res.attempts) +
                            " attempt(s))" + (st.ok() ? "" : ": " + st.error().message);
          RecordAction(dir, run.run_id, step, attempt, rule.name, a.text, msg);
          if (control) {
            control->EmitEvent(run.run_id, step, st.ok() ? "PolicyNotified" : "PolicyNotifyFailed", msg);
          }
        }
        if (stopped) break;
      }
    }
    if (stopped) break;
    for (int64_t slept = 0; slept < options_.poll_ms && !w->stop; slept += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(50, options_.poll_ms)));
    }
  }
  w->done = true;
}

}  // namespace rsl::govern
