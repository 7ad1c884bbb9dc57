// Admission (before anything starts: resources any node could ever satisfy, envFrom
// references, then the admission hooks in order) and recovery of unfinished runs.
#include <unistd.h>

#include <charconv>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/strings.h"
#include "engine/engine_internal.h"
#include "engine/output_root.h"
#include "sched/placement.h"
#include "spec/canonical.h"

namespace rsl::engine {
namespace {

// Under the state directory: one file per run that holds a claim of an object-store root.
constexpr char kClaimMarkerDir[] = "object-claims";

}  // namespace

Status Engine::Impl::CheckServing(const spec::Workload& w, size_t i) {
  const spec::Step& step = w.pipeline.steps[i];
  int64_t max_replicas = step.effective.autoscaling ? step.effective.autoscaling->max_replicas : 1;
  // Every replica requests the step's resources; maxReplicas of them must fit the nodes as
  // they are (empty), or scaling up would wait forever.
  sched::Request req = RequestFor(step);
  int64_t fit = 0;
  auto inventory = Inventory();
  for (const auto& n : *inventory) {
    if (n.state != spec::NodeState::kReady) continue;
    int64_t k = req.cpu_millis > 0 ? n.cpu_millis / req.cpu_millis : max_replicas;
    if (req.memory_bytes > 0) k = std::min(k, n.memory_bytes / req.memory_bytes);
    if (req.gpus > 0) k = std::min(k, int64_t(n.gpus.size()) / req.gpus);
    fit += std::max<int64_t>(k, 0);
  }
  if (!backend_queues_ && fit < max_replicas) {
    std::string path = step.resources.autoscaling ? spec::StepPath(i) + ".resources.autoscaling"
                                                  : "spec.resources.autoscaling";
    return Error(codes::kInsufficientResources,
                 "step " + Quote(step.name) + ": maxReplicas " + std::to_string(max_replicas) +
                     " cannot fit the nodes: they hold " + std::to_string(fit) +
                     " replica(s) of its request")
        .Path(path + ".maxReplicas")
        .At(w.PosOf(path + ".maxReplicas"))
        .Value(std::to_string(max_replicas))
        .Hint("lower maxReplicas to " + std::to_string(std::max<int64_t>(fit, 1)) +
              ", request less per replica, or add nodes (`seedctl node list`)");
  }
  Status s = backend_->CheckServing(w, step);
  if (s.ok()) return s;
  Error e = s.error();
  if (e.path.empty()) e.Path(spec::StepPath(i) + (step.port ? ".port" : ""));
  return e.At(w.PosOf(e.path));
}

void Engine::Impl::Admit(std::shared_ptr<const spec::Workload> w, store::WorkloadVersion v,
                         store::Run run, int owner_fd) {
  AdmittedMsg m;
  m.owner_fd = owner_fd;
  m.run_id = run.id;
  m.workload = w;
  m.version = v;
  RunInfo info{v.id, run.id, opts_.state_dir, run.run_dir, w.get()};
  if (!v.rollback_of.empty()) {
    // A rollback re-runs what that version ran: hooks pin what its admission recorded.
    auto rerun = store_->GetRun(v.rollback_of);
    if (rerun.ok()) info.rerun_admission_report_json = rerun->admission_report_json;
  }
  auto inventory = Inventory();
  for (size_t i = 0; i < w->pipeline.steps.size() && m.status.ok(); ++i) {
    const spec::Step& step = w->pipeline.steps[i];
    std::string why = sched::WhyNeverFits(*inventory, RequestFor(step));
    if (!why.empty()) {
      std::string path = spec::StepPath(i) + ".resources";
      m.status = Error(codes::kInsufficientResources,
                       "step " + Quote(step.name) + ": no node can ever satisfy it: " + why)
                     .Path(path)
                     .At(w->PosOf(path))
                     .Hint(!backend_queues_
                               ? "request less, or add a node that has it (`seedctl node list`; "
                                 "declare devices with --node-file)"
                               : "request less, or add a node that has it to the " +
                                     backend_->name() + " cluster (`seedctl node list`)");
      m.reason = spec::Name(spec::EventReason::kInsufficientResources);
    }
    if (step.serving && m.status.ok()) {
      m.status = CheckServing(*w, i);
      if (!m.status.ok()) m.reason = spec::Name(spec::EventReason::kAdmissionFailed);
    }
    for (size_t k = 0; k < step.post_process.size() && m.status.ok(); ++k) {
      for (const auto& h : step.post_process[k].headers) {
        if (h.secret_name.empty()) continue;
        std::string path =
            spec::StepPath(i) + ".postProcess[" + std::to_string(k) + "].webhook.headers." + h.name;
        auto secret = store_->GetConfigMap(w->namespace_, h.secret_name, true);
        if (!secret.ok()) {
          Error e = secret.error();
          m.status = e.Path(path + ".secretRef").At(w->PosOf(path + ".secretRef"));
        } else if (!secret->data.count(h.secret_key)) {
          std::vector<std::string> keys;
          for (const auto& kv : secret->data) keys.push_back(kv.first);
          m.status =
              Error(codes::kNotFound,
                    "secret " + Quote(h.secret_name) + " has no key " + Quote(h.secret_key))
                  .Path(path + ".key")
                  .At(w->PosOf(path + ".key"))
                  .Value(h.secret_key)
                  .Hint(keys.empty() ? "the secret has no keys" : "its keys: " + Join(keys, ", "));
        }
        if (!m.status.ok()) {
          m.reason = spec::Name(spec::EventReason::kCreateContainerConfigError);
          break;
        }
      }
    }
    for (size_t k = 0; k < step.env_from.size() && m.status.ok(); ++k) {
      bool secret = step.env_from[k].kind == spec::EnvFrom::Kind::kSecret;
      auto cm = store_->GetConfigMap(w->namespace_, step.env_from[k].name, secret);
      if (!cm.ok()) {
        std::string path = spec::StepPath(i) + ".envFrom[" + std::to_string(k) + "]";
        Error e = cm.error();
        m.status = e.Path(path).At(w->PosOf(path));
        m.reason = spec::Name(spec::EventReason::kCreateContainerConfigError);
      }
    }
  }
  // Registry credentials for the images: the secrets must exist, like envFrom's.
  for (size_t k = 0; k < w->image_pull_secrets.size() && m.status.ok(); ++k) {
    auto cm = store_->GetConfigMap(w->namespace_, w->image_pull_secrets[k], true);
    if (!cm.ok()) {
      std::string path = "spec.imagePullSecrets[" + std::to_string(k) + "]";
      Error e = cm.error();
      m.status = e.Path(path).At(w->PosOf(path));
      m.reason = spec::Name(spec::EventReason::kCreateContainerConfigError);
      break;
    }
    info.image_pull_secrets.push_back(cm->data);
  }
  nlohmann::json report = nlohmann::json::object();
  std::vector<std::string> messages;
  for (const auto& h : hooks_.admission) {
    if (!m.status.ok()) break;
    AdmissionReport rep;
    Status s = h->Check(info, &rep);
    if (!rep.report_json.empty()) {
      auto j = nlohmann::json::parse(rep.report_json, nullptr, false);
      report[h->name()] = j.is_discarded() ? nlohmann::json(rep.report_json) : j;
    }
    m.descriptors.insert(m.descriptors.end(), rep.input_descriptors_json.begin(),
                         rep.input_descriptors_json.end());
    if (!s.ok()) {
      m.status = s;
      m.reason = rep.event_reason.empty() ? spec::Name(spec::EventReason::kAdmissionFailed)
                                          : rep.event_reason;
      break;
    }
    if (!rep.event_message.empty()) messages.push_back(h->name() + ": " + rep.event_message);
  }
  // Last: a claim on the output root, which tells later runs of the root that this one is
  // in flight (data.output.policy refuse checks the claims of the others).
  std::string base = OutputBase(*w);
  if (m.status.ok() && !base.empty()) {
    bool refuse = w->data.output->policy == spec::OutputPolicy::kRefuse;
    Status claimed = Status::Ok();
    if (base.find("://") == std::string::npos) {
      claimed = ClaimOutputRoot(env_, base, run.id, run.run_dir, refuse);
    } else if (SharedObjectRoot(base)) {
      // The claim is an object there (engine/object_root.h), renewed by the loop while the
      // run is in flight; the marker lets recovery remove it if a crash leaves it behind.
      auto taken = ObjectClaim::Take(hooks_.publisher.get(), env_, base, run.id, refuse);
      if (taken.ok()) {
        m.object_claim = std::move(*taken);
        if (!opts_.state_dir.empty() && env_->MakeDirs(ClaimMarkerDir()).ok())
          (void)env_->WriteFile(ClaimMarkerPath(run.id), m.object_claim->uri(), /*sync=*/false);
      } else {
        claimed = taken.status();
      }
    }
    // Without refuse a claim that cannot be made only means refuse runs do not see this one.
    if (!claimed.ok() && refuse) {
      Error e = claimed.error();
      if (e.path.empty()) e.Path("spec.data.output.uri");
      m.status = e.At(w->PosOf(e.path));
      m.reason = spec::Name(spec::EventReason::kAdmissionFailed);
    }
  }
  if (m.status.ok()) m.previous = LoadPrevious(store_, *w, v);
  m.report_json = report.dump();
  m.message = messages.empty() ? "admission checks passed" : Join(messages, "; ");
  Post(std::move(m));
}

void Engine::Impl::HandleAdmitted(AdmittedMsg& m, store::Batch* b, std::set<RunState*>* touched) {
  auto stored = store_->GetRun(m.run_id);
  if (!stored.ok()) return;
  store::Run run = *stored;
  int64_t now = NowMs();
  bool cancelled = run.failure_code == codes::kWorkloadCancelled;
  if (!m.status.ok() || cancelled) {
    if (m.owner_fd >= 0) close(m.owner_fd);
    std::string base = OutputBase(*m.workload);
    if (!base.empty() && base.find("://") == std::string::npos) {
      ReleaseOutputClaim(env_, base, run.id);
    }
    if (m.object_claim) ReleaseObjectClaim(run.id, m.object_claim.get());
    run.phase = cancelled ? spec::RunPhase::kCancelled : spec::RunPhase::kRejected;
    if (!cancelled) {
      run.failure_code = m.status.code();
      run.failure_message = m.status.error().ToString();
    }
    run.finished_at = now;
    run.admission_report_json = m.report_json;
    b->runs.push_back(run);
    for (size_t i = 0; i < m.workload->pipeline.steps.size(); ++i) {
      store::Step s;
      s.run_id = run.id;
      s.name = m.workload->pipeline.steps[i].name;
      s.index = static_cast<int>(i);
      s.phase = spec::StepPhase::kCancelled;
      s.message = cancelled ? "not started: the run was cancelled"
                            : "not started: the workload was rejected";
      b->steps.push_back(s);
    }
    AddEvent(b, run.id, "", cancelled ? spec::Name(spec::EventReason::kCancelled) : m.reason,
             cancelled ? run.failure_message : m.status.error().ToString(), true);
    RunInfo info{m.version.id, run.id, opts_.state_dir, run.run_dir, m.workload.get()};
    for (const auto& h : hooks_.steps) h->AfterRun(info, spec::Name(run.phase), "");
    ended_unadmitted_.push_back(run.id);
    return;
  }
  auto r = NewRunState(std::move(m.workload), m.version, run, opts_.state_dir, default_cpu_millis_,
                       inherited_env_);
  r->owner_fd = m.owner_fd;
  r->run.phase = spec::RunPhase::kRunning;
  r->run.started_at = now;
  r->run.admission_report_json = m.report_json;
  r->info.admission_report_json = m.report_json;
  b->runs.push_back(r->run);
  AddEvent(b, run.id, "", spec::EventReason::kAdmitted, m.message, false);
  r->info.input_descriptors_json = m.descriptors;
  r->previous = std::move(m.previous);
  for (const auto& d : m.descriptors) {
    auto j = nlohmann::json::parse(d, nullptr, false);
    std::string uri = j.is_object() ? j.value("uri", "") : "";
    if (!uri.empty()) b->lineage.push_back({run.id, uri, m.version.id, "input", d});
  }
  r->plan = std::make_unique<RunPlan>(r->workload.get(), now);
  if (m.object_claim) KeepObjectClaim(run.id, std::move(m.object_claim));
  touched->insert(r.get());
  runs_[run.id] = std::move(r);
}

Status Engine::Impl::Recover() {
  RemoveEndedRunsClaims();
  auto runs = store_->ListRuns(store::RunFilter{"", "", true, 0});
  if (!runs.ok()) return runs.status();
  for (const auto& run : *runs) {
    auto v = store_->GetVersion(run.workload_id);
    Result<spec::Workload> w =
        v.ok() ? spec::FromCanonicalJson(v->spec_json) : Result<spec::Workload>(v.error());
    if (!w.ok()) {
      store::Batch b;
      store::Run failed = run;
      failed.phase = spec::RunPhase::kFailed;
      failed.failure_code = codes::kInternal;
      failed.failure_message = "cannot recover: " + w.error().message;
      failed.finished_at = NowMs();
      b.runs.push_back(failed);
      AddEvent(&b, run.id, "", spec::EventReason::kFailed, failed.failure_message, true);
      RSL_RETURN_IF_ERROR(store_->Apply(&b));
      continue;
    }
    // Another live engine (a `seedctl run` still going) drives it: leave it alone.
    int owner = LockRunOwner(env_, run.run_dir);
    if (owner < 0) continue;
    auto workload = std::make_shared<const spec::Workload>(std::move(*w));
    if (run.phase == spec::RunPhase::kPending) {
      std::lock_guard<std::mutex> lock(mu_);
      StartAdmission(std::move(workload), *v, run, owner);
      continue;
    }
    auto r = NewRunState(std::move(workload), *v, run, opts_.state_dir, default_cpu_millis_,
                         inherited_env_);
    r->owner_fd = owner;
    r->previous = LoadPrevious(store_, *r->workload, *v);
    // The input descriptors admission reported live on as the run's input lineage edges.
    auto lineage = store_->ListLineage(run.id);
    if (!lineage.ok()) return lineage.status();
    for (const auto& e : *lineage) {
      if (e.relation == "input" && !e.from_json.empty()) {
        r->info.input_descriptors_json.push_back(e.from_json);
      }
    }
    auto steps = store_->ListSteps(run.id);
    if (!steps.ok()) return steps.status();
    for (const auto& s : *steps) {
      if (s.index >= 0 && size_t(s.index) < r->slots.size() &&
          r->slots[size_t(s.index)].record.name == s.name) {
        r->slots[size_t(s.index)].record = s;
      }
    }
    auto attempts = store_->ListAttempts(run.id);
    if (!attempts.ok()) return attempts.status();
    std::vector<store::Attempt> live;
    for (const auto& a : *attempts) {
      for (const auto& slot : r->slots) {
        const store::Step& s = slot.record;
        if (s.name == a.step && s.attempt_id == a.id && store::StepAttemptLive(s))
          live.push_back(a);
      }
    }
    // Its claim of an object-store root is written anew (it may have expired meanwhile);
    // one that cannot be only means refuse runs do not see this one.
    std::unique_ptr<ObjectClaim> claim;
    if (std::string base = OutputBase(*r->workload); SharedObjectRoot(base)) {
      auto taken = ObjectClaim::Take(hooks_.publisher.get(), env_, base, run.id, false);
      if (taken.ok()) claim = std::move(*taken);
    }
    Post(RecoverMsg{std::move(r), std::move(live), std::move(claim)});
  }
  return Status::Ok();
}

void Engine::Impl::HandleRecover(RecoverMsg& m, store::Batch* b, std::set<RunState*>* touched) {
  RunState* r = m.ctx.get();
  if (runs_.count(r->run.id)) return;  // already active (Recover called twice)
  r->plan = std::make_unique<RunPlan>(r->workload.get(), r->run.started_at);
  for (size_t i = 0; i < r->slots.size(); ++i) {
    const store::Step& rec = r->slots[i].record;
    StepState s;
    s.phase = rec.phase;
    s.attempts = rec.attempts;
    s.retries_used = rec.retries_used;
    s.started_at = rec.started_at;
    s.finished_at = rec.finished_at;
    s.next_attempt_at = rec.next_attempt_at;
    s.failure_code = rec.failure_code;
    s.message = rec.message;
    s.metrics_json = rec.metrics_json.empty() ? "{}" : rec.metrics_json;
    s.running = store::StepAttemptLive(rec);
    r->plan->Restore(static_cast<int>(i), s);
  }
  int adopted = 0;
  std::vector<int> lost;
  for (size_t i = 0; i < r->slots.size(); ++i) {
    if (!store::StepAttemptLive(r->slots[i].record)) continue;
    const store::Attempt* att = nullptr;
    for (const auto& a : m.live) {
      if (a.step == r->slots[i].record.name) att = &a;
    }
    auto spec = att ? LaunchFromJson(att->launch_json, LaunchBaseOf(r))
                    : Result<backend::LaunchSpec>(Error(codes::kInternal, "no attempt"));
    if (!spec.ok()) {
      lost.push_back(static_cast<int>(i));
      continue;
    }
    r->slots[i].launch = *spec;
    attempts_[spec->attempt_id] = {r, static_cast<int>(i)};
    if (!backend_queues_) {  // a queueing backend counts
      // The devices it was given (CUDA_VISIBLE_DEVICES) stay held, so no new step gets them.
      std::vector<int> gpus;
      if (auto cuda = spec->env.find("CUDA_VISIBLE_DEVICES"); cuda != spec->env.end()) {
        for (const auto& id : Split(cuda->second, ',')) {
          int g = -1;
          auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), g);
          if (ec == std::errc() && end == id.data() + id.size() && g >= 0) gpus.push_back(g);
        }
      }
      r->slots[i].gpus = gpus;
      ledger_.Hold(spec->node, RequestFor(r->workload->pipeline.steps[i]), gpus);
    }
    backend_->Adopt(*spec);
    ++adopted;
  }
  for (int i : lost) {
    backend::AttemptExit e;
    e.kind = backend::ExitKind::kNodeLost;
    e.message = "no launch record for the running attempt";
    r->plan->OnExit(i, e, "", NowMs());
  }
  if (r->run.failure_code == codes::kWorkloadCancelled &&
      r->run.phase == spec::RunPhase::kRunning) {
    r->plan->Cancel(NowMs(), r->run.failure_message.substr(r->run.failure_message.rfind(' ') + 1));
  }
  // A non-atomic run's succeeded steps whose outputs were never published (its engine
  // stopped first, e.g. while the publication waited for its root's lease): published now,
  // before the run may end and remove its staging.
  if (!r->workload->pipeline.atomic) {
    std::set<std::string> published;  // steps with an output artifact recorded
    auto artifacts = store_->ListArtifacts(r->run.id);
    for (const auto& a : artifacts.ok() ? *artifacts : std::vector<store::Artifact>()) {
      if (a.kind == "output") published.insert(a.step);
    }
    for (size_t i = 0; i < r->slots.size() && artifacts.ok(); ++i) {
      const store::Step& rec = r->slots[i].record;
      if (rec.phase == spec::StepPhase::kSucceeded && !published.count(rec.name) &&
          env_->PathExists(StagingDir(r->run.run_dir, rec.name, rec.attempts))) {
        r->pending_publications.push_back(static_cast<int>(i));
      }
    }
    if (!r->pending_publications.empty()) r->publish_retry_at = NowMs();
  }
  AddEvent(b, r->run.id, "", spec::EventReason::kRecovered,
           "engine restarted: " + std::to_string(adopted) + " running attempt(s) adopted", false);
  if (m.object_claim) KeepObjectClaim(r->run.id, std::move(m.object_claim));
  touched->insert(r);
  runs_[r->run.id] = std::move(m.ctx);
}

bool Engine::Impl::SharedObjectRoot(const std::string& base) {
  return !base.empty() && base.find("://") != std::string::npos && hooks_.publisher &&
         hooks_.publisher->ConditionalWrites(base);
}

std::string Engine::Impl::ClaimMarkerDir() { return opts_.state_dir + "/" + kClaimMarkerDir; }

std::string Engine::Impl::ClaimMarkerPath(const std::string& run_id) {
  if (opts_.state_dir.empty()) return "";
  return ClaimMarkerDir() + "/" + run_id;
}

void Engine::Impl::KeepObjectClaim(const std::string& run_id, std::unique_ptr<ObjectClaim> claim) {
  next_claim_renewal_ms_ = std::min(next_claim_renewal_ms_, claim->next_renewal_ms());
  object_claims_[run_id] = std::move(claim);
}

void Engine::Impl::ReleaseObjectClaim(const std::string& run_id, ObjectClaim* claim) {
  auto kept = object_claims_.find(run_id);
  if (!claim && kept != object_claims_.end()) claim = kept->second.get();
  if (!claim) return;
  claim->Release();
  if (std::string marker = ClaimMarkerPath(run_id); !marker.empty()) {
    (void)env_->RemoveAll(marker);
  }
  if (kept != object_claims_.end()) object_claims_.erase(kept);
}

void Engine::Impl::RenewObjectClaims(store::Batch* b) {
  int64_t next = INT64_MAX;
  for (auto& [run_id, claim] : object_claims_) {
    Status s = claim->Renew();
    // Once per outage: the next tries follow every kObjectClaimRetryMs.
    if (!s.ok() && claim->failures() == 1) {
      AddEvent(b, run_id, "", std::string(kOutputClaimNotRenewed),
               s.error().message + "; until it is renewed (retried every " +
                   std::to_string(kObjectClaimRetryMs / 1000) +
                   " s), runs of the root with policy refuse may not see this one",
               true);
    }
    next = std::min(next, claim->next_renewal_ms());
  }
  next_claim_renewal_ms_ = next;
}

void Engine::Impl::RemoveEndedRunsClaims() {
  if (opts_.state_dir.empty() || !hooks_.publisher) return;
  auto names = env_->ListDir(ClaimMarkerDir());
  if (!names.ok()) return;  // none yet
  for (const auto& run_id : *names) {
    auto run = store_->GetRun(run_id);
    if (!run.ok() && run.status().code() != codes::kNotFound) continue;  // the store: later
    if (run.ok() && !spec::IsTerminal(run->phase)) continue;             // recovered, or another's
    const std::string marker = ClaimMarkerPath(run_id);
    auto uri = env_->ReadFile(marker);
    if (uri.ok() && !uri->empty() && !hooks_.publisher->Remove(*uri).ok()) continue;  // later
    (void)env_->RemoveAll(marker);
  }
}

}  // namespace rsl::engine
