// The facts the engine's loop takes in: messages (exits, backend events, admissions,
// cancels, policy stops and events, recoveries, failed launches), an attempt's exit with its
// metrics and the AfterStep hooks, and live progress; and the mirror of the plan's step
// state into the stored step row. All on the loop thread.
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine_internal.h"

namespace rsl::engine {
namespace {

// The step's file that `var` names, to be read: null when the launch names none, or, for an
// attempt that `ended`, when the file is directly in the working directory its backend saw
// empty at the end (nothing there to open).
const std::string* StepFile(const backend::LaunchSpec& launch, const char* var,
                            const backend::AttemptExit* ended = nullptr) {
  auto it = launch.env.find(var);
  if (it == launch.env.end()) return nullptr;
  const std::string& path = it->second;
  const std::string& dir = launch.workdir;
  bool in_empty_dir = ended && ended->workdir_empty && !dir.empty() &&
                      path.rfind('/') == dir.size() && path.compare(0, dir.size(), dir) == 0;
  return in_empty_dir ? nullptr : &path;
}

// What the step last wrote to its RSL_PROGRESS_FILE (at most 64 characters, trimmed), or
// nothing when it wrote nothing usable. `ended`: as for StepFile.
std::optional<std::string> ReadProgress(const backend::LaunchSpec& launch,
                                        const backend::AttemptExit* ended = nullptr) {
  const std::string* file = StepFile(launch, "RSL_PROGRESS_FILE", ended);
  if (!file) return std::nullopt;
  auto text = ReadUntrustedFileIfExists(*file, 4096);  // the step's file
  if (!text.ok() || !*text) return std::nullopt;
  std::string p(Trim(**text));
  if (p.empty() || p.size() > 64) return std::nullopt;
  return p;
}

}  // namespace

void Engine::Impl::Handle(Msg& m, store::Batch* b, Actions* a, std::set<RunState*>* touched) {
  if (auto* exit = std::get_if<ExitMsg>(&m)) {
    HandleExit(exit->exit, b, touched);
  } else if (auto* ev = std::get_if<EventMsg>(&m)) {
    HandleEvent(ev->event, b, touched);
  } else if (auto* nodes = std::get_if<NodesMsg>(&m)) {
    HandleNodes(*nodes, touched);
  } else if (auto* adm = std::get_if<AdmittedMsg>(&m)) {
    HandleAdmitted(*adm, b, touched);
  } else if (auto* cancel = std::get_if<CancelMsg>(&m)) {
    auto it = runs_.find(cancel->run_id);
    if (it == runs_.end()) {
      // Not active here: still being admitted (cancelled when admission ends) or finished.
      auto run = store_->GetRun(cancel->run_id);
      if (run.ok() && run->phase == spec::RunPhase::kPending) {
        run->failure_code = codes::kWorkloadCancelled;
        run->failure_message = "cancelled by " + cancel->by;
        b->runs.push_back(*run);
        cancel->done->set_value(Status::Ok());
      } else {
        cancel->done->set_value(
            Error(codes::kConflict, "workload " + Quote(cancel->run_id) + " has already finished")
                .Value(cancel->run_id));
      }
      return;
    }
    RunState* r = it->second.get();
    if (r->plan->outcome()) {
      cancel->done->set_value(
          Error(codes::kConflict, "workload " + Quote(cancel->run_id) + " is already finishing"));
      return;
    }
    r->run.failure_code = codes::kWorkloadCancelled;  // durable marker for recovery
    r->run.failure_message = "cancelled by " + cancel->by;
    b->runs.push_back(r->run);
    r->plan->Cancel(NowMs(), cancel->by);
    touched->insert(r);
    cancel->done->set_value(Status::Ok());
  } else if (auto* stop = std::get_if<StopStepMsg>(&m)) {
    auto it = runs_.find(stop->run_id);
    int i = it == runs_.end() ? -1 : it->second->plan->IndexOf(stop->step);
    if (i < 0 || !it->second->plan->state(i).running) {
      stop->done->set_value(Error(codes::kNotFound, "step " + Quote(stop->step) + " of " +
                                                        Quote(stop->run_id) + " is not running"));
      return;
    }
    RunState* r = it->second.get();
    r->slots[size_t(i)].stop_override = std::make_pair(stop->as_success, stop->message);
    AddEvent(b, r->run.id, stop->step, stop->reason, stop->message, !stop->as_success);
    a->stops.emplace_back(r->slots[size_t(i)].launch.attempt_id, false);
    stop->done->set_value(Status::Ok());
  } else if (auto* emit = std::get_if<EmitMsg>(&m)) {
    AddEvent(b, emit->run_id, emit->step, emit->reason, emit->message, false);
  } else if (auto* rec = std::get_if<RecoverMsg>(&m)) {
    HandleRecover(*rec, b, touched);
  } else if (auto* pp = std::get_if<PostProcessDoneMsg>(&m)) {
    HandlePostProcessDone(*pp, b, touched);
  } else if (auto* done = std::get_if<RunFilesDoneMsg>(&m)) {
    AppendBatch(std::move(done->batch), b);
    a->ended_runs.insert(a->ended_runs.end(), done->run_ids.begin(), done->run_ids.end());
  } else if (auto* barrier = std::get_if<BarrierMsg>(&m)) {
    a->barriers.push_back(barrier->done);
  } else if (auto* lf = std::get_if<LaunchFailedMsg>(&m)) {
    auto it = attempts_.find(lf->attempt_id);
    if (it == attempts_.end()) return;
    RunState* r = it->second.first;
    attempts_.erase(it);
    Release(r, lf->step);
    backend::AttemptExit e;
    e.attempt_id = lf->attempt_id;
    e.kind = backend::ExitKind::kFailed;
    e.message = "cannot start: " + lf->error.message;
    r->plan->OnExit(lf->step, e, "", NowMs(), lf->error);
    touched->insert(r);
  }
}

void Engine::Impl::HandleEvent(const backend::AttemptEvent& e, store::Batch* b,
                               std::set<RunState*>* touched) {
  auto it = attempts_.find(e.attempt_id);
  if (it == attempts_.end()) return;
  auto [r, i] = it->second;
  AddEvent(b, r->run.id, r->workload->pipeline.steps[size_t(i)].name, e.reason, e.message,
           e.warning);
  if (!backend_queues_) return;
  if (e.reason == spec::EventReason::kRunning) {
    // Where the backend's scheduler runs it, not a guess of ours.
    if (!e.node.empty()) r->slots[size_t(i)].launch.node = e.node;
    r->plan->OnRunning(i, NowMs());
    r->slots[size_t(i)].record.node = r->slots[size_t(i)].launch.node;
    b->steps.push_back(r->slots[size_t(i)].record);
    touched->insert(r);
  } else if (e.reason == spec::EventReason::kPending ||
             e.reason == spec::EventReason::kInsufficientResources) {
    r->plan->OnQueued(i, e.message);
    touched->insert(r);
  }
}

void Engine::Impl::HandleNodes(NodesMsg& m, std::set<RunState*>* touched) {
  if (m.nodes.empty()) return;  // nothing known is no news
  if (backend_queues_) {
    for (auto& n : m.nodes) n.used_cpu_millis = n.used_memory_bytes = n.used_gpus = 0;
  }
  // Keep what the engine holds on the nodes it knows.
  ledger_.SetNodes(std::move(m.nodes), /*keep_usage=*/!backend_queues_);
  PublishInventory();
  // Steps that waited for a node in a state to take work may fit now.
  for (auto& [id, r] : runs_) {
    if (r->plan && !r->plan->ready().empty()) touched->insert(r.get());
  }
}

void Engine::Impl::HandleExit(const backend::AttemptExit& e, store::Batch* b,
                              std::set<RunState*>* touched) {
  auto it = attempts_.find(e.attempt_id);
  if (it == attempts_.end()) return;  // stale: an attempt we no longer wait for
  auto [r, i] = it->second;
  attempts_.erase(it);
  {
    std::lock_guard<std::mutex> lock(usage_mu_);
    live_usage_.erase(e.attempt_id);  // the exit has the totals
  }
  Release(r, i);
  const spec::Step& step = r->workload->pipeline.steps[size_t(i)];
  bool never_ran = r->plan->state(i).queued;  // cancelled or failed in the backend's queue
  backend::AttemptExit exit = e;
  Status hook_error;
  if (auto& ov = r->slots[size_t(i)].stop_override) {
    // A policy stopped it: success keeps the output; otherwise a failure without retry.
    exit.kind = backend::ExitKind::kSucceeded;
    if (!ov->first) hook_error = Error(codes::kStepFailed, "stopped by policy: " + ov->second);
    ov.reset();
  }
  const backend::LaunchSpec& launch = r->slots[size_t(i)].launch;
  std::string metrics = "{}";
  if (const std::string* file = StepFile(launch, "RSL_METRICS_FILE", &e)) {
    auto text = ReadUntrustedFileIfExists(*file, size_t(kMaxMetricsBytes));
    if (!text.ok() || *text) {  // written (or unreadable, or too big)
      auto j = text.ok() ? nlohmann::json::parse(**text, nullptr, false) : nlohmann::json();
      if (j.is_object()) {
        metrics = j.dump();
      } else {
        AddEvent(b, r->run.id, step.name, spec::EventReason::kMetricsIgnored,
                 "RSL_METRICS_FILE is not a JSON object (at most 1 MiB)", true);
      }
    }
  }
  // The step's last word on progress (the poll may have missed it), without an event.
  if (auto p = ReadProgress(launch, &e)) r->slots[size_t(i)].record.progress = *p;
  StepOutcome outcome;
  outcome.step = step.name;
  outcome.attempt = launch.attempt;
  outcome.exit = exit;
  outcome.staging_dir = launch.env.count("RSL_OUTPUT") ? launch.env.at("RSL_OUTPUT") : "";
  outcome.metrics_json = metrics;
  outcome.allocated_cpu_millis = launch.cpu_millis;
  outcome.allocated_memory_bytes = launch.memory_bytes;
  outcome.allocated_gpus = launch.gpus;
  if (const sched::Node* n = ledger_.Find(launch.node); n != nullptr && !n->gpus.empty()) {
    outcome.gpu_model = n->gpus[0].model;
  }
  for (const auto& h : hooks_.steps) {
    Status s = h->AfterStep(r->info, step, outcome);
    if (exit.kind == backend::ExitKind::kSucceeded && hook_error.ok() && !s.ok()) hook_error = s;
  }
  StepSlot& slot = r->slots[size_t(i)];
  if (exit.kind == backend::ExitKind::kSucceeded && hook_error.ok()) {
    // Required hooks decide whether the step succeeded: hold the exit until they are done.
    auto required = BuildDeliveries(r, i, spec::StepPhase::kSucceeded, metrics, exit.exit_code,
                                    launch.attempt, "", true, b, &hook_error);
    if (hook_error.ok() && !required.empty()) {
      slot.held_exit = std::make_unique<StepSlot::HeldExit>(
          StepSlot::HeldExit{exit, metrics, never_ran, required.size(), ""});
      for (auto& d : required) sender_->Enqueue(std::move(d));
      return;
    }
  }
  ApplyExit(r, i, exit, metrics, never_ran, hook_error, b, touched);
}

void Engine::Impl::ApplyExit(RunState* r, int i, const backend::AttemptExit& exit,
                             const std::string& metrics, bool never_ran, Status hook_error,
                             store::Batch* b, std::set<RunState*>* touched) {
  const spec::Step& step = r->workload->pipeline.steps[size_t(i)];
  const backend::LaunchSpec& launch = r->slots[size_t(i)].launch;
  store::Step& rec = r->slots[size_t(i)].record;
  rec.node = !exit.node.empty() ? exit.node : (never_ran ? "" : launch.node);
  rec.exit_code = exit.exit_code;
  rec.signal = exit.signal;
  rec.wall_ms = never_ran ? 0 : exit.usage.wall_ms;  // no duration for what never ran
  rec.cpu_ms = exit.usage.cpu_ms;
  rec.peak_memory_bytes = exit.usage.peak_memory_bytes;
  rec.peak_cpu_millicores = exit.usage.peak_cpu_millicores;
  // An atomic run's output is found by its staging directory until the commit, whose
  // artifact rows say where it went: the row does not carry it (10,000 rows rewritten at a
  // big run's end only for that).
  if (exit.kind == backend::ExitKind::kSucceeded && hook_error.ok() &&
      !r->workload->pipeline.atomic) {
    rec.output_dir = OutputDirFor(r, i);
  }
  r->plan->OnExit(i, exit, metrics, NowMs(), hook_error);
  store::Attempt att;
  att.id = launch.attempt_id;
  att.run_id = r->run.id;
  att.step = step.name;
  att.number = launch.attempt;
  // launch_json left empty: the store keeps the one written at launch.
  att.state = spec::AttemptPhase::kExited;
  att.exit_kind = backend::ExitKindName(exit.kind);
  const StepState& st = r->plan->state(i);
  att.created_at = st.launched_at ? st.launched_at : st.started_at;
  att.finished_at = NowMs();
  b->attempts.push_back(std::move(att));
  if (!st.running) ShedEndedLaunch(&r->slots[size_t(i)].launch);
  touched->insert(r);
}

void Engine::Impl::SyncRecord(RunState* r, int i) {
  const StepState& s = r->plan->state(i);
  store::Step& rec = r->slots[size_t(i)].record;
  rec.phase = s.phase;
  rec.attempts = s.attempts;
  rec.retries_used = s.retries_used;
  rec.started_at = s.started_at;
  rec.finished_at = s.running ? 0 : s.finished_at;
  rec.next_attempt_at = s.next_attempt_at;
  rec.failure_code = s.failure_code;
  rec.message = s.message;
  rec.metrics_json = s.metrics_json;
  if (!r->slots[size_t(i)].launch.attempt_id.empty()) {
    rec.attempt_id = r->slots[size_t(i)].launch.attempt_id;
    if (s.running) rec.node = s.queued ? "" : r->slots[size_t(i)].launch.node;
  }
}

void Engine::Impl::PollProgress(store::Batch* b) {
  for (auto& [id, ri] : attempts_) {
    auto [r, i] = ri;
    auto progress = ReadProgress(r->slots[size_t(i)].launch);
    if (!progress || *progress == r->slots[size_t(i)].progress_seen) continue;
    const std::string& p = *progress;
    r->slots[size_t(i)].progress_seen = p;
    r->slots[size_t(i)].record.progress = p;
    b->steps.push_back(r->slots[size_t(i)].record);
    AddEvent(b, r->run.id, r->workload->pipeline.steps[size_t(i)].name,
             spec::EventReason::kProgress, p, false);
  }
}

}  // namespace rsl::engine
