// seedctl run: admits and runs one workload in this process (no daemon), with live progress
// and a final table; `seedctl run --recover` finishes the runs a killed `seedctl run` left
// behind in a state directory. docs/engine.md.
#include "cli/run_cmd.h"

#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "api/objects.h"
#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/table.h"
#include "engine/engine.h"
#include "runtime/runtime.h"
#include "spec/parse.h"
#include "spec/quantity.h"
#include "store/retention.h"
#include "store/store.h"

namespace rsl::cli {
namespace {

constexpr int kBarWidth = 24;
//! How long `seedctl run` waits for postProcess webhooks after its run ended: longer than
//! any one hook can take with its default retries and timeout (four tries of 10 s, 7 s of
//! backoff), short enough that a stuck receiver does not hold the command for good.
constexpr int64_t kPostProcessDrainMs = 10 * 60 * 1000;

std::string Who() {
  const char* u = getenv("USER");
  return u && *u ? u : "local";
}

// Local time, as every other seedctl command prints times (TZ decides).
std::string Clock(int64_t ms) {
  time_t t = static_cast<time_t>(ms / 1000);
  struct tm tm_local;
  localtime_r(&t, &tm_local);
  char buf[16];
  strftime(buf, sizeof(buf), "%H:%M:%S", &tm_local);
  return buf;
}

// Prints events as they become durable: plain lines, plus a redrawn bar on a terminal.
class Progress {
 public:
  Progress(bool tty, size_t steps) : tty_(tty), steps_(steps) {}

  void OnEvent(const store::Event& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!run_id_.empty() && e.run_id != run_id_) return;
    using R = spec::EventReason;
    auto is = [&e](R reason) { return e.reason == spec::Name(reason); };
    bool ended = is(R::kSucceeded) || is(R::kFailed) || is(R::kSkipped) || is(R::kCancelled) ||
                 is(R::kTimedOut);
    if (ended && !e.step.empty()) done_.insert(e.step);
    if (is(R::kRetrying)) done_.erase(e.step);
    if (is(R::kStarted)) running_[e.step] = "";
    if (is(R::kProgress)) running_[e.step] = e.message;
    if (done_.count(e.step)) running_.erase(e.step);
    if (tty_) std::cout << "\r\033[K";
    std::cout << Clock(e.time) << "  " << (e.step.empty() ? "-" : e.step) << "  " << e.reason
              << "  " << e.message << "\n";
    if (tty_) DrawBar();
    std::cout.flush();
  }
  void SetRun(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    run_id_ = id;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    if (tty_) std::cout << "\r\033[K" << std::flush;
  }

 private:
  void DrawBar() {
    size_t done = std::min(done_.size(), steps_);
    size_t filled = steps_ ? done * kBarWidth / steps_ : kBarWidth;
    std::string bar(filled, '#');
    bar.resize(kBarWidth, '-');
    std::vector<std::string> run;
    for (const auto& [step, p] : running_) run.push_back(p.empty() ? step : step + " " + p);
    std::cout << "[" << bar << "] " << done << "/" << steps_ << " steps"
              << (run.empty() ? "" : "  running: " + Join(run, ", "));
  }

  std::mutex mu_;
  bool tty_;
  size_t steps_;
  std::string run_id_;
  std::set<std::string> done_;
  std::map<std::string, std::string> running_;
};

std::string StoredExitText(const store::Step& s) {
  if (s.signal > 0) return "signal " + std::to_string(s.signal);
  if (s.exit_code >= 0 && s.attempts > 0) return std::to_string(s.exit_code);
  return "-";
}

// -o json is the controller's AIWorkload object (GET /api/v1/workloads/{id}): one shape, in
// camelCase, whether a workload ran in process or on the controller.
void PrintResult(store::Store* store, const store::Run& run, const spec::Workload& workload,
                 const std::string& output) {
  auto steps = store->ListSteps(run.id);
  if (!steps.ok()) FailWith(steps.error());
  if (output == "json") {
    auto version = store->GetVersion(run.workload_id);
    if (!version.ok()) FailWith(version.error());
    std::cout << api::WorkloadObject(*version, run, *steps, &workload).dump(2) << "\n";
    return;
  }
  Table t({"STEP", "PHASE", "ATTEMPTS", "DURATION", "PEAK MEMORY", "EXIT", "NODE", "MESSAGE"});
  for (const auto& s : *steps) {
    int64_t dur = s.finished_at > 0 && s.started_at > 0 ? s.finished_at - s.started_at : 0;
    t.AddRow({s.name, api::StepPhaseName(run, s), std::to_string(s.attempts),
              s.attempts ? spec::FormatDuration(dur) : "-",
              s.peak_memory_bytes ? spec::FormatBytesHuman(s.peak_memory_bytes) : "-",
              StoredExitText(s), s.node.empty() ? "-" : s.node, s.message});
  }
  std::cout << t.Render();
  int64_t total = run.finished_at > 0 && run.started_at > 0 ? run.finished_at - run.started_at : 0;
  std::cout << "workload " << run.workload_id << " " << spec::Name(run.phase) << " in "
            << spec::FormatDuration(total);
  if (!run.committed_uri.empty()) std::cout << "; outputs: " << run.committed_uri;
  std::cout << "\n";
}

// The stack, built by the runtime (runtime/runtime.h), with the engine started.
std::unique_ptr<runtime::Runtime> Open(const RunFlags& o, const std::string& state_dir) {
  if (o.sync != "full" && o.sync != "normal") {
    FailWith(Error(codes::kInvalidArgument, "unknown --sync " + Quote(o.sync))
                 .Hint("use --sync full (fsync every commit) or --sync normal"));
  }
  runtime::RuntimeOptions ro;
  ro.state_dir = state_dir;
  ro.runs_dir = o.runs_dir;
  ro.backend = o.backend;
  ro.backend_options = o.k8s;
  ro.backend_options.node_file = o.node_file;
  ro.backend_options.isolation = o.step_isolation;
  ro.sync_full = o.sync == "full";
  ro.hooks = !o.no_hooks;
  ro.images.insecure_registries = o.insecure_registries;
  auto rt = runtime::Runtime::Open(std::move(ro));
  if (!rt.ok()) FailWith(rt.error());
  if (Status s = (*rt)->engine()->Start(); !s.ok()) FailWith(s.error());
  return std::move(*rt);
}

// Ctrl-C / SIGTERM cancel the run (steps stopped, outputs discarded) instead of orphaning it.
void WatchSignals(engine::Engine* eng, std::string* run_id, std::mutex* mu) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  std::thread([eng, run_id, mu, set] {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return;
    std::string id;
    {
      std::lock_guard<std::mutex> lock(*mu);
      id = *run_id;
    }
    std::cerr << "\ncancelling " << id << " (" << (sig == SIGINT ? "interrupt" : "terminated")
              << ")\n";
    if (!id.empty()) (void)eng->Cancel(id, "seedctl (signal)");
  }).detach();
}

void RunFile(const RunFlags& o) {
  // Relative data URIs mean the file's directory, resolved now and stored so: a `--recover`
  // from another directory commits to the same place.
  spec::ParseOptions parse_options;
  parse_options.relative_uris = spec::ParseOptions::RelativeUris::kResolve;
  std::string state_dir = o.state_dir.empty() ? DefaultStateDir() : o.state_dir;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts
  // A cluster's own features (Slurm's) are capabilities too, as the controller's admission has
  // them: read the cluster before validating. The local backend declares none, so a local run
  // validates before it opens anything.
  std::unique_ptr<runtime::Runtime> rt;
  if (o.backend != "local") {
    rt = Open(o, state_dir);
    parse_options.extra_capabilities = rt->backend()->DeclaredCapabilities();
  }
  spec::ParseResult parsed = spec::ParseWorkloadFile(o.file, parse_options);
  for (const auto& w : parsed.warnings) std::cerr << "warning: " << w.ToString() << "\n";
  if (!parsed.ok()) {
    if (rt) rt->engine()->Stop();
    FailWith(parsed.errors);
  }
  if (!rt) rt = Open(o, state_dir);
  bool tty = o.output != "json" && isatty(STDOUT_FILENO);
  Progress progress(tty, parsed.workload.pipeline.steps.size());
  int token = -1;
  if (o.output != "json") {
    token = rt->engine()->Subscribe([&progress](const store::Event& e) { progress.OnEvent(e); });
  }
  std::mutex mu;
  std::string run_id;
  WatchSignals(rt->engine(), &run_id, &mu);
  // Shared with the engine (which only reads it), not copied: the result is printed from it.
  auto workload = std::make_shared<const spec::Workload>(std::move(parsed.workload));
  auto id = rt->engine()->Submit(workload, Who());
  if (!id.ok()) FailWith(id.error());
  {
    std::lock_guard<std::mutex> lock(mu);
    run_id = store::RunIdFor(*id);
  }
  progress.SetRun(store::RunIdFor(*id));
  if (o.output != "json") std::cout << "workload " << *id << " submitted\n" << std::flush;
  auto run = rt->engine()->Wait(*id);
  // postProcess webhooks of the last steps may still be under way: this process is their
  // only sender, so wait for them (each is bounded by its own retries and timeout).
  if (run.ok() && !rt->engine()->DrainPostProcess(kPostProcessDrainMs)) {
    std::cerr << "warning: postProcess webhooks still unsent; they are sent when an engine next "
                 "opens "
              << state_dir << "\n";
  }
  if (token >= 0) rt->engine()->Unsubscribe(token);
  progress.Clear();
  if (!run.ok()) {
    rt->engine()->Stop();
    FailWith(run.error());
  }
  // Printed before Stop(): the engine's loop frees the finished run's state meanwhile (tens
  // of milliseconds for 10,000 steps), and the store is safe to read from this thread.
  PrintResult(rt->store(), *run, *workload, o.output);
  rt->engine()->Stop();
  if (run->phase != spec::RunPhase::kSucceeded) {
    Error e(run->failure_code.empty() ? codes::kStepFailed : run->failure_code,
            run->failure_message);
    FailWith(e);
  }
}

void Recover(const RunFlags& o) {
  std::string state_dir = o.state_dir.empty() ? DefaultStateDir() : o.state_dir;
  auto rt = Open(o, state_dir);
  auto unfinished = rt->store()->ListRuns(store::RunFilter{"", "", true, 0});
  if (!unfinished.ok()) FailWith(unfinished.error());
  if (Status s = rt->engine()->Recover(); !s.ok()) FailWith(s.error());
  Errors failures;
  for (const auto& r : *unfinished) {
    auto run = rt->engine()->Wait(r.id);
    if (!run.ok()) {
      failures.push_back(run.error());
      continue;
    }
    std::cout << run->workload_id << " " << spec::Name(run->phase)
              << (run->failure_code.empty() ? "" : " " + run->failure_code) << "\n";
    if (run->phase != spec::RunPhase::kSucceeded) {
      failures.push_back(Error(run->failure_code, run->workload_id + ": " + run->failure_message));
    }
  }
  (void)rt->engine()->DrainPostProcess(kPostProcessDrainMs);
  rt->engine()->Stop();
  if (unfinished->empty()) std::cout << "nothing to recover in " << state_dir << "\n";
  if (!failures.empty()) FailWith(failures);
}

}  // namespace

void RunRun(const RunFlags& o) {
  if (o.recover) {
    Recover(o);
    return;
  }
  if (o.file.empty()) {
    FailWith(Error(codes::kInvalidArgument, "seedctl run needs -f FILE")
                 .Hint("seedctl run -f workload.yaml, or seedctl run --recover"));
  }
  RunFile(o);
}

struct GcFlags {
  std::string state_dir;
  std::string runs_dir;
  int keep_versions = 0;
  std::string keep_for;
  bool dry_run = false;
};

// `seedctl gc`: the controller's retention policy, applied once to a local state directory.
void RunGc(const GcFlags& o) {
  store::RetentionPolicy policy;
  policy.keep_versions = o.keep_versions;
  if (!o.keep_for.empty()) {
    auto ms = spec::ParseDurationMs(o.keep_for);
    if (!ms.ok()) {
      Error e = ms.error();  // a flag, not a spec: INVALID_ARGUMENT
      e.code = codes::kInvalidArgument;
      FailWith(e.Path("--keep-for"));
    }
    policy.keep_for_ms = *ms;
  }
  if (!policy.enabled()) {
    FailWith(Error(codes::kInvalidArgument, "seedctl gc needs a policy")
                 .Hint("--keep-versions N (the newest N finished runs of each workload name) "
                       "and/or --keep-for DURATION (e.g. 7d)"));
  }
  runtime::RuntimeOptions ro;
  ro.state_dir = o.state_dir.empty() ? DefaultStateDir() : o.state_dir;
  ro.runs_dir = o.runs_dir;
  if (Status s = runtime::NormalizePaths(&ro); !s.ok()) FailWith(s.error());
  if (!PathExists(ro.state_dir + "/rsl.db")) {
    FailWith(Error(codes::kNotFound, "no state in " + ro.state_dir)
                 .Value(ro.state_dir)
                 .Hint("pass the --state-dir that `seedctl run` used"));
  }
  auto st = store::OpenSqliteStore(ro.state_dir);
  if (!st.ok()) FailWith(st.error());
  auto done = store::Collect(st->get(), Env::Default(), ro.runs_dir, policy, o.dry_run);
  if (!done.ok()) FailWith(done.error());
  for (const auto& id : done->run_ids)
    std::cout << (o.dry_run ? "would collect " : "collected ") << id << "\n";
  std::cout << (o.dry_run ? "would collect " : "collected ") << done->run_ids.size()
            << " finished runs, " << spec::FormatBytesHuman(done->bytes_freed)
            << " of run directories\n";
}

void RegisterRunCommands(CLI::App& app) {
  auto g = std::make_shared<GcFlags>();
  CLI::App* gc = app.add_subcommand(
      "gc", "Collect the history of old finished runs in a local state directory (retention)");
  gc->add_option("--state-dir", g->state_dir,
                 "state directory (default $RSL_STATE_DIR or ~/.local/state/rsl)");
  gc->add_option("--runs-dir", g->runs_dir,
                 "where run directories live (default: <state-dir>-runs)");
  gc->add_option("--keep-versions", g->keep_versions,
                 "keep the newest N finished runs of each workload name whole")
      ->check(CLI::NonNegativeNumber);
  gc->add_option("--keep-for", g->keep_for, "keep finished runs whole this long, e.g. 7d");
  gc->add_flag("--dry-run", g->dry_run, "say what would be collected; change nothing");
  Bind(gc, g, &RunGc);

  auto o = std::make_shared<RunFlags>();
  CLI::App* run = app.add_subcommand(
      "run", "Admit and run a workload in this process, with live progress (no daemon)");
  run->add_option("-f,--file", o->file, "AIWorkload YAML file");
  run->add_option("--state-dir", o->state_dir,
                  "state directory (default $RSL_STATE_DIR or ~/.local/state/rsl)");
  run->add_option("--node-file", o->node_file,
                  "YAML node file: devices declared, not probed (docs/engine.md)");
  run->add_option("--backend", o->backend, "local (default), slurm or k8s")
      ->check(CLI::IsMember({"local", "slurm", "k8s"}));
  run->add_option("--kubeconfig", o->k8s.kubeconfig,
                  "k8s: kubeconfig file (default $KUBECONFIG, ~/.kube/config, in-cluster)");
  run->add_option("--context", o->k8s.kube_context, "k8s: kubeconfig context (default: current)");
  run->add_option("--k8s-namespace", o->k8s.k8s_namespaces,
                  "k8s: RSLNS=K8SNS namespace mapping; repeatable (default: the same name)");
  run->add_option("--k8s-staging", o->k8s.k8s_staging,
                  "k8s: where pods write outputs: s3://bucket/prefix or file:///shared/dir");
  run->add_option("--capability-labels", o->k8s.capability_labels,
                  "k8s: capability -> node label table file (docs/backends/k8s.md)");
  run->add_option("-o,--output", o->output, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  run->add_option("--sync", o->sync,
                  "full: fsync every state change (default); normal: survive process crashes only");
  run->add_option("--step-isolation", o->step_isolation,
                  "who steps run as: auto | users | user:NAME | namespace | none "
                  "(docs/security.md)");
  run->add_option("--runs-dir", o->runs_dir,
                  "where run directories live (default: <state-dir>-runs)");
  run->add_flag("--recover", o->recover,
                "finish the runs a killed `seedctl run` left in the state directory");
  run->add_option("--insecure-registry", o->insecure_registries,
                  "a registry (HOST[:PORT]) reached over plain HTTP besides loopback ones; "
                  "repeatable (docs/image.md)");
  run->add_flag("--no-hooks", o->no_hooks,
                "skip data/model/cost hooks (engine checks only; for benchmarks)");
  Bind(run, o, &RunRun);
}

}  // namespace rsl::cli
