#include "govern/policy_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "base/strings.h"
#include "govern/cost.h"
#include "govern/webhook.h"

namespace rsl::govern {
namespace {

using nlohmann::json;

constexpr std::streamoff kMaxStreamRead = 1 << 20;

double WallSeconds() { return static_cast<double>(Env::Default()->NowMs()) / 1000; }

std::string Metrics(const std::map<std::string, double>& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s=%.4g", out.empty() ? "" : ", ", k.c_str(), v);
    out += buf;
  }
  return out;
}

void RecordAction(const std::string& dir, const std::string& run_id, const std::string& step,
                  int attempt, const std::string& rule, const std::string& action,
                  const std::string& detail) {
  if (dir.empty()) return;
  Result<std::unique_ptr<CostStore>> store = CostStore::Open(dir);
  if (!store.ok()) return;
  Result<Stmt> st = (*store)->db()->Prepare(
      "INSERT INTO govern_policy_actions(at_ms, run_id, step, attempt, rule, action, detail)"
      " VALUES(?,?,?,?,?,?,?)");
  if (!st.ok()) return;
  st->Bind(1, Env::Default()->NowMs())
      .Bind(2, run_id)
      .Bind(3, step)
      .Bind(4, static_cast<int64_t>(attempt))
      .Bind(5, rule)
      .Bind(6, action)
      .Bind(7, detail);
  (void)st->Run();
}

}  // namespace

std::string MetricsStreamPath(const std::string& workdir) {
  return workdir + "/.rsl-metrics-stream.jsonl";
}

void WatchPolicies(const WatchedAttempt& target, const std::vector<Policy>& policies,
                   const PolicyWatchOptions& options, const PolicyControl& control,
                   const std::atomic<bool>& stop) {
  const std::function<double()> now_s = options.now_s ? options.now_s : WallSeconds;
  const std::string& dir = target.state_dir;
  const std::string& step = target.step;
  const int attempt = target.attempt;
  auto Emit = [&control](const std::string& reason, const std::string& message) {
    if (control.emit) control.emit(reason, message);
  };
  // One metrics window per policy (each has its own tolerance and window).
  std::vector<MetricsWindow> windows;
  for (const auto& p : policies) windows.emplace_back(p.loss_tolerance, p.gpu_util_window_s);
  std::map<std::string, bool> fired;  // "<policy>/<rule>"
  std::streamoff offset = 0;
  std::string partial;
  bool stopped = false;
  while (!stop && !stopped) {
    // Read what was appended since last time; keep an unterminated last line for later.
    // The step owns the file: a link or anything but a regular file is not read (we may
    // be root), nor more than kMaxStreamRead at a time.
    int fd = open(target.stream.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
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
        double now = now_s();
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
    double now = now_s();
    for (size_t pi = 0; pi < policies.size() && !stopped; ++pi) {
      const Policy& p = policies[pi];
      std::map<std::string, double> snap = windows[pi].Snapshot(now);
      for (const auto& rule : p.rules) {
        std::string id = p.name + "/" + rule.name;
        if (fired[id]) continue;
        if (!ConditionHolds(rule, snap, windows[pi].latest(), nullptr)) continue;
        fired[id] = true;
        std::string why = "policy " + p.name + " rule " + rule.name + ": " + rule.condition + " (" +
                          Metrics(snap) + ")";
        json metrics = snap;
        json body = {{"policy", p.name},
                     {"rule", {{"name", rule.name}, {"condition", rule.condition}}},
                     {"workload",
                      {{"name", target.workload},
                       {"namespace", target.namespace_},
                       {"id", target.workload_id},
                       {"run", target.run_id},
                       {"step", step},
                       {"attempt", attempt},
                       {"labels", target.labels}}},
                     {"metrics", metrics},
                     {"latest", windows[pi].latest()},
                     {"time", now}};
        json actions = json::array();
        for (const auto& a : rule.actions) actions.push_back(a.text);
        body["actions"] = actions;
        // Stop and scale first (they save money), then tell people.
        for (const auto& a : rule.actions) {
          if (a.kind == PolicyAction::Kind::kStop) {
            RecordAction(dir, target.run_id, step, attempt, rule.name, a.text, why);
            if (control.stop_step) {
              Status st = control.stop_step("PolicyStopped", why, a.as_success);
              if (!st.ok()) Emit("PolicyStopFailed", st.ToString());
            }
            stopped = true;
          } else if (a.kind == PolicyAction::Kind::kScaleDown) {
            std::string msg = why + "; desired replicas " + std::to_string(a.replicas) +
                              " recorded (no serving autoscaler yet: nothing was resized)";
            RecordAction(dir, target.run_id, step, attempt, rule.name, a.text, msg);
            Emit("PolicyScaledDown", msg);
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
          RecordAction(dir, target.run_id, step, attempt, rule.name, a.text, msg);
          Emit(st.ok() ? "PolicyNotified" : "PolicyNotifyFailed", msg);
        }
        if (stopped) break;
      }
    }
    if (stopped) break;
    for (int64_t slept = 0; slept < options.poll_ms && !stop; slept += 50) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min<int64_t>(50, options.poll_ms)));
    }
  }
}

}  // namespace rsl::govern
