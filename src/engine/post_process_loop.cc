// The loop's side of postProcess hooks: which hooks a step's end sends (conditions over the
// run and the previous version's results, bodies rendered), and what their outcome does
// (an event; for a required hook, the held exit of its step applied).
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/strings.h"
#include "engine/engine_internal.h"
#include "expr/template.h"

namespace rsl::engine {
namespace {

bool ReadsPrevious(const std::string& text) { return text.find("previous.") != std::string::npos; }

}  // namespace

PreviousResults LoadPrevious(store::Store* store, const spec::Workload& w,
                             const store::WorkloadVersion& version) {
  PreviousResults p;
  bool reads = false;
  for (const auto& s : w.pipeline.steps) {
    reads = reads || ReadsPrevious(s.when);
    for (const auto& h : s.post_process) {
      reads = reads || ReadsPrevious(h.when) || ReadsPrevious(h.body);
    }
  }
  if (!reads) return p;
  p.loaded = true;
  // Versions are numbered by the store (1, 2, ... per name): newest first, before this one.
  auto versions = store->ListVersions(w.namespace_, w.name);
  if (!versions.ok()) return p;
  for (auto v = versions->rbegin(); v != versions->rend(); ++v) {
    if (v->id == version.id || (version.version > 0 && v->version >= version.version)) continue;
    auto run = store->GetRun(v->id);
    if (!run.ok() || run->phase != spec::RunPhase::kSucceeded) continue;
    auto steps = store->ListSteps(run->id);
    if (!steps.ok()) return p;
    p.run_id = run->id;
    for (const auto& s : *steps) p.metrics[s.name] = s.metrics_json;
    break;
  }
  return p;
}

std::vector<Delivery> Engine::Impl::BuildDeliveries(RunState* r, int i, spec::StepPhase phase,
                                                    const std::string& metrics, int exit_code,
                                                    int attempt, const std::string& failure_code,
                                                    bool required_stage, store::Batch* b,
                                                    Status* error) {
  std::vector<Delivery> out;
  const spec::Step& step = r->workload->pipeline.steps[size_t(i)];
  bool succeeded = phase == spec::StepPhase::kSucceeded;
  for (size_t k = 0; k < step.post_process.size(); ++k) {
    const spec::PostProcess& hook = step.post_process[k];
    if (!(succeeded ? hook.on_success : hook.on_failure)) continue;
    bool held = hook.required && succeeded;  // decided with the attempt's exit
    if (held != required_stage) continue;
    const std::string name = "postProcess[" + std::to_string(k) + "]";
    auto fail = [&](const std::string& message) {
      AddEvent(b, r->run.id, step.name, spec::EventReason::kPostProcessFailed,
               name + ": " + message, true);
      if (required_stage && error->ok()) {
        *error = Error(codes::kPostProcessFailed,
                       "required " + name + " of step " + Quote(step.name) + ": " + message)
                     .Path(spec::StepPath(size_t(i)) + "." + name);
      }
    };
    RunContext ctx(r->plan.get(), &r->previous);
    RunContext::Self self;
    self.step = i;
    self.phase = phase;
    self.metrics_json = metrics;
    self.exit_code = exit_code;
    self.attempt = attempt;
    self.failure_code = failure_code;
    self.run_id = r->run.id;
    self.run_name = r->workload->name;
    self.run_namespace = r->workload->namespace_;
    self.workload_id = r->version.id;
    ctx.SetSelf(self);
    if (!hook.when.empty()) {
      auto e = expr::Expr::Parse(hook.when);
      if (!e.ok()) {
        fail("when " + hook.when + ": " + e.error().message);
        continue;
      }
      std::string note;
      auto holds = EvalCondition(*e, ctx, &note);
      if (!holds.ok()) {
        fail("when " + hook.when + ": " + holds.error().message);
        continue;
      }
      if (!*holds) {
        AddEvent(b, r->run.id, step.name, spec::EventReason::kPostProcessSkipped,
                 name + " not sent: when " + hook.when + " is false" +
                     (note.empty() ? "" : " (" + note + ")"),
                 false);
        continue;
      }
    }
    Delivery d;
    if (!hook.body.empty()) {
      auto t = expr::Template::Parse(hook.body);
      auto body = t.ok() ? t->Render(ctx) : Result<std::string>(t.error());
      if (!body.ok()) {
        fail("body: " + body.error().message);
        continue;
      }
      d.body = *body;
    }
    d.key = r->run.id + "." + step.name + "." + std::to_string(k);
    d.run_id = r->run.id;
    d.namespace_ = r->workload->namespace_;
    d.step = step.name;
    d.hook = int(k);
    d.required = hook.required;
    d.method = hook.method;
    d.url = hook.url;
    d.headers = hook.headers;
    d.retries = hook.retries;
    d.timeout_ms = hook.timeout_ms;
    out.push_back(std::move(d));
  }
  return out;
}

void Engine::Impl::HandlePostProcessDone(PostProcessDoneMsg& m, store::Batch* b,
                                         std::set<RunState*>* touched) {
  const Delivery& d = m.delivery;
  const DeliveryResult& res = m.result;
  std::string tries = res.tries > 1 ? " after " + std::to_string(res.tries) + " tries" : "";
  AddEvent(
      b, d.run_id, d.step,
      res.ok ? spec::EventReason::kPostProcessSucceeded : spec::EventReason::kPostProcessFailed,
      d.Describe() + ": " + res.message + tries + (d.required && !res.ok ? " (required)" : ""),
      !res.ok);
  if (!d.required) return;
  auto it = runs_.find(d.run_id);
  if (it == runs_.end()) return;
  RunState* r = it->second.get();
  int i = r->plan ? r->plan->IndexOf(d.step) : -1;
  if (i < 0) return;
  StepSlot& slot = r->slots[size_t(i)];
  if (!slot.held_exit) return;
  StepSlot::HeldExit& held = *slot.held_exit;
  if (!res.ok && held.failure.empty()) {
    held.failure = d.Describe() + ": " + res.message + tries;
  }
  if (held.waiting > 0) --held.waiting;
  if (held.waiting > 0) return;
  StepSlot::HeldExit h = std::move(held);
  slot.held_exit.reset();
  Status hook_error;
  if (!h.failure.empty()) {
    hook_error =
        Error(codes::kPostProcessFailed, "required " + h.failure)
            .Path(spec::StepPath(size_t(i)) + ".postProcess")
            .Hint("the receiver must answer 2xx; or set required: false to only report it");
  }
  ApplyExit(r, i, h.exit, h.metrics_json, h.never_ran, hook_error, b, touched);
}

}  // namespace rsl::engine
