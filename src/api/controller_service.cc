#include "api/controller_service.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "api/lineage.h"
#include "api/objects.h"
#include "api/server.h"
#include "base/codes.h"
#include "base/env.h"
#include "base/strings.h"
#include "spec/canonical.h"
#include "spec/parse.h"

namespace rsl::api {

namespace {

// A parsed spec is a few KiB (a big DAG's far more): the cache holds the versions being
// looked at now, not the history (docs/api.md: memory).
constexpr size_t kMaxCachedSnapshots = 256;
// A version without its spec text is a few hundred bytes: every read of a workload (status,
// describe, the list's lines, the namespace check of each request) starts from one, and the
// spec of a 100,000-step workload is ~25 MB to read from the store.
constexpr size_t kMaxCachedVersions = 4096;
constexpr int64_t kCancelWaitMs = 2000;  // an HTTP answer should not wait for the grace

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ControllerService::ControllerService(store::Store* store, engine::Engine* engine,
                                     backend::Backend* backend, Metrics* metrics,
                                     std::string state_dir)
    : store_(store),
      engine_(engine),
      backend_(backend),
      metrics_(metrics),
      state_dir_(std::move(state_dir)) {}

std::shared_ptr<const spec::Workload> ControllerService::Snapshot(const store::WorkloadVersion& v) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = snapshots_.find(v.id);
    if (it != snapshots_.end()) return it->second;
  }
  // A version from VersionOf's cache has no spec text: read it once, here.
  std::string text = v.spec_json;
  if (text.empty()) {
    auto full = store_->GetVersion(v.id);
    if (full.ok()) text = std::move(full->spec_json);
  }
  auto parsed = spec::FromCanonicalJson(text);
  std::shared_ptr<const spec::Workload> w;
  if (parsed.ok()) w = std::make_shared<const spec::Workload>(std::move(*parsed));
  RememberSnapshot(v.id, w);
  return w;
}

void ControllerService::RememberSnapshot(const std::string& version_id,
                                         std::shared_ptr<const spec::Workload> w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (snapshots_.size() >= kMaxCachedSnapshots) snapshots_.clear();
  snapshots_[version_id] = std::move(w);
}

Result<store::WorkloadVersion> ControllerService::VersionOf(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = versions_.find(id);
    if (it != versions_.end()) return it->second;
  }
  auto v = store_->GetVersion(id);
  if (!v.ok()) return v.error();
  store::WorkloadVersion meta = *v;
  meta.spec_json.clear();
  std::lock_guard<std::mutex> lock(mu_);
  if (versions_.size() >= kMaxCachedVersions) versions_.clear();
  versions_[id] = std::move(meta);
  return v;
}

std::shared_ptr<const spec::Workload> ControllerService::SpecSkeleton(
    const store::WorkloadVersion& v) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = skeletons_.find(v.id);
    if (it != skeletons_.end()) return it->second;
  }
  std::shared_ptr<const spec::Workload> skeleton;
  if (auto w = Snapshot(v)) {
    auto copy = std::make_shared<spec::Workload>(*w);  // once per version: it is cached
    copy->pipeline.steps.clear();
    copy->pipeline.steps.shrink_to_fit();
    skeleton = std::move(copy);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (skeletons_.size() >= kMaxCachedSnapshots) skeletons_.clear();
  skeletons_[v.id] = skeleton;
  return skeleton;
}

std::vector<std::string> ControllerService::SecretValues(const std::string& ns) {
  return SecretValuesOf(store_, ns);
}

namespace {
// A workload's version, its run and the run's steps: what describing it starts from.
struct RunRecords {
  store::WorkloadVersion version;
  store::Run run;
  std::vector<store::Step> steps;
};

Result<RunRecords> LoadRunRecords(store::Store* store, const std::string& id) {
  auto v = store->GetVersion(id);
  if (!v.ok()) return v.error();
  auto run = store->GetRun(id);
  if (!run.ok()) return run.error();
  auto steps = store->ListSteps(run->id);
  if (!steps.ok()) return steps.error();
  return RunRecords{std::move(*v), std::move(*run), std::move(*steps)};
}

// The phases whose steps a page of a big run shows beside it (status.activeSteps).
constexpr spec::StepPhase kActivePhases[] = {spec::StepPhase::kRunning, spec::StepPhase::kRetrying,
                                             spec::StepPhase::kFailed, spec::StepPhase::kTimedOut};

// The run's current step as CurrentStep finds it among every step, read by index: the first
// live or RETRYING one, else the last that started. nullopt when none has started.
// `counts` (CountSteps) leave out the reads that cannot find anything: each reads the run's
// rows until its first match, all of them when there is none.
Result<std::optional<store::Step>> ReadCurrentStep(store::Store* store, const std::string& run_id,
                                                   const std::map<std::string, int64_t>& counts) {
  auto has = [&](spec::StepPhase p) {
    auto it = counts.find(spec::Name(p));
    return it != counts.end() && it->second > 0;
  };
  std::optional<store::Step> cur;
  store::StepPageQuery q;
  q.run_id = run_id;
  q.limit = 1;
  std::vector<store::Step> live, retrying;
  if (has(spec::StepPhase::kRunning) || has(spec::StepPhase::kPending) ||
      has(spec::StepPhase::kTimedOut)) {
    q.live_only = true;
    auto found = store->ListStepsPage(q);
    if (!found.ok()) return found.error();
    live = std::move(*found);
    q.live_only = false;
  }
  if (has(spec::StepPhase::kRetrying)) {
    q.phases = {spec::StepPhase::kRetrying};
    auto found = store->ListStepsPage(q);
    if (!found.ok()) return found.error();
    retrying = std::move(*found);
  }
  for (const auto* found : {&live, &retrying}) {
    if (!found->empty() && (!cur || found->front().index < cur->index)) cur = found->front();
  }
  if (cur) return cur;
  q.phases.clear();
  q.started_only = true;
  q.last_first = true;
  auto last = store->ListStepsPage(q);
  if (!last.ok()) return last.error();
  if (!last->empty()) cur = last->front();
  return cur;
}
}  // namespace

void ControllerService::AddLiveUsage(std::vector<store::Step>* steps) {
  // A running attempt's usage so far, from the engine's latest live sample (the stored row
  // gets the totals only when the attempt ends).
  for (auto& s : *steps) {
    if (!store::StepAttemptLive(s) || s.attempt_id.empty()) continue;
    if (auto live = engine_->LiveUsage(s.attempt_id)) {
      s.wall_ms = live->usage.wall_ms;
      s.cpu_ms = live->usage.cpu_ms;
      s.peak_memory_bytes = live->usage.peak_memory_bytes;
      s.peak_cpu_millicores = live->usage.peak_cpu_millicores;
    }
  }
}

Result<Json> ControllerService::Object(const std::string& id, const StepsView& view) {
  int after = -1;
  if (!view.continue_token.empty()) {
    auto parsed = ParseStepContinueToken(view.continue_token);
    if (!parsed.ok()) return parsed.error();
    after = *parsed;
  }
  auto v = VersionOf(id);
  if (!v.ok()) return v.error();
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  const bool paged = view.limit > 0 || after >= 0;
  std::vector<store::Step> steps;  // the page: every step when not paged
  std::map<std::string, int64_t> counts;
  bool more = false;
  if (!paged) {
    auto all = store_->ListSteps(run->id);
    if (!all.ok()) return all.error();
    steps = std::move(*all);
  } else {
    store::StepPageQuery q;
    q.run_id = run->id;
    q.after_index = after;
    // One more than a page: whether more follow.
    if (view.limit > 0) q.limit = static_cast<int>(std::min<int64_t>(view.limit, 1'000'000) + 1);
    auto page = store_->ListStepsPage(q);
    if (!page.ok()) return page.error();
    steps = std::move(*page);
    more = view.limit > 0 && static_cast<int64_t>(steps.size()) > view.limit;
    if (more) steps.resize(static_cast<size_t>(view.limit));
    auto counted = store_->CountSteps(run->id);
    if (!counted.ok()) return counted.error();
    counts = std::move(*counted);
  }
  // Whether the page holds every step: then the object is what it always was.
  const bool whole = !paged || (after < 0 && !more);
  std::vector<store::Step> active;
  std::optional<store::Step> current;
  if (!whole) {
    for (spec::StepPhase phase : kActivePhases) {
      auto n = counts.find(spec::Name(phase));
      if (n == counts.end() || n->second == 0) continue;
      store::StepPageQuery q;
      q.run_id = run->id;
      q.phases = {phase};
      q.limit = static_cast<int>(kActiveStepsPerPhase);
      auto found = store_->ListStepsPage(q);
      if (!found.ok()) return found.error();
      active.insert(active.end(), found->begin(), found->end());
    }
    std::sort(active.begin(), active.end(),
              [](const store::Step& a, const store::Step& b) { return a.index < b.index; });
    auto cur = ReadCurrentStep(store_, run->id, counts);
    if (!cur.ok()) return cur.error();
    current = std::move(*cur);
  }
  AddLiveUsage(&steps);
  AddLiveUsage(&active);
  auto w = Snapshot(*v);
  Json obj = WorkloadObject(*v, *run, steps, w.get());
  Json& st = obj["status"];
  if (paged) {
    AddStepCounts(*run, counts, &st);
    if (more) st["stepsContinue"] = StepContinueToken(steps.back().index);
  }
  if (!whole) {
    st["activeSteps"] = StepsJson(*run, active, w.get());
    st.erase("currentStep");
    if (current) {
      std::vector<store::Step> one = {*current};
      AddLiveUsage(&one);
      st["currentStep"] = CurrentStepJson(StepsJson(*run, one, w.get())[0]);
    }
  }
  for (const auto* list : {&steps, &active}) {
    for (const auto& s : *list) {
      if (st.contains("serving") || !store::StepAttemptLive(s) || s.attempt_id.empty()) continue;
      if (auto serving = backend_->Serving(s.attempt_id))
        st["serving"] = ServingJson(s.name, *serving);
    }
  }
  // What the ended attempts cost so far (one indexed read); null before the first ends.
  st["cost"] = RunCost(run->id);
  return obj;
}

Result<Json> ControllerService::Submit(const std::string& yaml, const std::string& source_name,
                                       const std::string& base_dir, const NamespaceDecider& decide,
                                       const std::string& subject, Errors* errors,
                                       const AcceptedWrite& also) {
  auto start = std::chrono::steady_clock::now();
  auto observe = [&](const std::string& result) {
    metrics_->Observe("rsl_admission_duration_seconds", {{"result", result}}, Since(start));
    metrics_->Observe("rsl_reconcile_duration_seconds",
                      {{"kind", "AIWorkload"}, {"phase", "submit"}, {"result", result}},
                      Since(start));
  };
  // A relative data URI means the client's file's directory (seedctl sends it); without one
  // it would land wherever the controller runs, so it is refused.
  spec::ParseOptions options;
  options.relative_uris = spec::ParseOptions::RelativeUris::kRefuse;
  // The cluster's own features (Slurm's) are capabilities too; admission checks them.
  options.extra_capabilities = backend_->DeclaredCapabilities();
  if (!base_dir.empty()) {
    if (base_dir[0] != '/') {
      return Error(codes::kInvalidArgument, "the base directory of relative data URIs " +
                                                Quote(base_dir) + " is not absolute")
          .Path("X-Rsl-Base-Dir")
          .Value(base_dir)
          .Hint("send the absolute directory of the workload file");
    }
    options.relative_uris = spec::ParseOptions::RelativeUris::kResolve;
    options.base_dir = base_dir;
  }
  // The namespace is decided (and the caller authorized) inside the one parse of the text.
  std::optional<Result<std::string>> ns;
  options.on_namespace = [&](const std::string& yaml_ns) -> Status {
    ns = decide(yaml_ns);
    return ns->status();
  };
  spec::ParseResult parsed = spec::ParseWorkload(yaml, source_name, options);
  if (!ns) ns = decide("");  // the text was not readable YAML
  if (!ns->ok()) {
    *errors = {ns->error()};
    observe("failure");
    return ns->error();
  }
  if (!parsed.ok()) {
    *errors = parsed.errors;
    observe("failure");
    return parsed.errors.front();
  }
  parsed.workload.namespace_ = **ns;
  engine::SubmitOptions submit;
  submit.commit_also = also;
  // One object: the engine's run reads it and the new version's snapshot is it (below).
  auto workload = std::make_shared<const spec::Workload>(std::move(parsed.workload));
  auto id = engine_->Submit(workload, subject, submit);
  if (!id.ok()) {
    observe("failure");
    return id.error();
  }
  observe("success");
  // The new version's snapshot is the workload parsed here (its canonical text was made from
  // it): the answer below need not parse that text back (6 % of the controller's CPU under
  // bench/api_load.sh). ControllerServiceTest.ASubmissionIsAnsweredAsAReadOfItAnswers.
  RememberSnapshot(*id, std::move(workload));
  return Object(*id);
}

Result<Json> ControllerService::GetWorkload(const std::string& id) { return Object(id); }

Result<Json> ControllerService::GetWorkloadView(const std::string& id, const StepsView& view) {
  return Object(id, view);
}

Result<std::string> ControllerService::NamespaceOf(const std::string& id) {
  auto v = VersionOf(id);
  if (!v.ok()) return v.error();
  return v->namespace_;
}

// The whole list is the page without a limit: one way to read runs and build their summaries.
Result<Json> ControllerService::ListWorkloads(const std::vector<std::string>& namespaces,
                                              const std::string& name) {
  WorkloadListQuery q;
  q.namespaces = namespaces;
  q.name = name;
  return ListWorkloadsPage(q);
}

Result<Json> ControllerService::ListWorkloadsPage(const WorkloadListQuery& q) {
  store::RunPageQuery page;
  page.name = q.name;
  page.phase = q.phase;
  page.label_key = q.label_key;
  page.label_value = q.label_value;
  if (!q.continue_token.empty()) {
    auto after = ParseContinueToken(q.continue_token);
    if (!after.ok()) return after.error();
    page.before_created_at = after->first;
    page.before_workload_id = after->second;
  }
  // One more than a page: whether more follow.
  page.limit = q.limit > 0 ? static_cast<int>(std::min<int64_t>(q.limit, 1'000'000) + 1) : 0;
  std::vector<std::string> nss = q.namespaces.empty() ? std::vector<std::string>{""} : q.namespaces;
  std::vector<store::Run> runs;
  bool paging = q.limit > 0 || !q.continue_token.empty();
  int64_t total = 0;
  for (const auto& ns : nss) {
    page.namespace_ = ns;
    auto r = store_->ListRunsPage(page);
    if (!r.ok()) return r.error();
    runs.insert(runs.end(), r->begin(), r->end());
    if (paging) {
      auto n = store_->CountRuns(page);
      if (!n.ok()) return n.error();
      total += *n;
    }
  }
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
    return a.created_at != b.created_at ? a.created_at > b.created_at
                                        : a.workload_id > b.workload_id;
  });
  bool more = q.limit > 0 && static_cast<int64_t>(runs.size()) > q.limit;
  if (more) runs.resize(static_cast<size_t>(q.limit));
  Json items = Json::array();
  for (const auto& run : runs) {
    auto v = VersionOf(run.workload_id);
    if (!v.ok()) continue;
    Json s = WorkloadSummary(*v, run);
    // Counted by the store: a list line of a 100,000-step run reads no step.
    auto counts = store_->CountSteps(run.id);
    if (counts.ok()) AddStepCounts(run, *counts, &s["status"]);
    items.push_back(std::move(s));
  }
  Json list = {{"apiVersion", kApiVersion}, {"kind", "AIWorkloadList"}, {"items", items}};
  if (paging) {
    list["metadata"]["total"] = total;
    if (more)
      list["metadata"]["continue"] = ContinueToken(runs.back().created_at, runs.back().workload_id);
  }
  return list;
}

Result<Json> ControllerService::Describe(const std::string& id) { return DescribeView(id, {}); }

Result<Json> ControllerService::DescribeView(const std::string& id, const StepsView& view) {
  auto obj = Object(id, view);
  if (!obj.ok()) return obj.error();
  auto v = VersionOf(id);
  if (!v.ok()) return v.error();
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  // A page of a big run's steps comes with the spec of those steps only: the canonical
  // document of a 100,000-step spec is ~25 MB, parsed in a third of a second.
  const Json& st = (*obj)["status"];
  const bool partial = st.contains("stepsContinue") || st.contains("activeSteps");
  Json canonical;
  auto skeleton = partial ? SpecSkeleton(*v) : nullptr;
  auto w = partial ? Snapshot(*v) : nullptr;
  if (partial && skeleton && w) {
    spec::Workload page = *skeleton;
    for (const auto& s : st["steps"]) {
      size_t index = s.value("index", size_t{0});
      if (index < w->pipeline.steps.size()) page.pipeline.steps.push_back(w->pipeline.steps[index]);
    }
    canonical = Json::parse(spec::CanonicalJson(page), nullptr, false);
    (*obj)["specStepCount"] = w->pipeline.steps.size();
  } else {
    if (v->spec_json.empty()) {  // from VersionOf's cache
      auto full = store_->GetVersion(id);
      if (!full.ok()) return full.error();
      v->spec_json = std::move(full->spec_json);
    }
    canonical = Json::parse(v->spec_json, nullptr, false);
  }
  // `spec` is the canonical document's spec (the object has its metadata already), so the
  // pipeline is at spec.pipeline as in the YAML. It names secrets (envFrom secretRef) but never
  // holds their values; a value pasted literally into it is masked below with every other
  // occurrence.
  if (canonical.is_object() && canonical.contains("spec")) {
    (*obj)["spec"] = canonical["spec"];
  } else {
    (*obj)["spec"] = canonical.is_discarded() ? Json(v->spec_json) : canonical;
  }
  Json admission = Json::parse(run->admission_report_json, nullptr, false);
  (*obj)["status"]["admission"] = admission.is_discarded() ? Json(nullptr) : admission;
  // The run's last events, on its (run_id, seq) index; eventCount says how many there are.
  int limit = static_cast<int>(std::min<int64_t>(view.event_limit, 1'000'000'000));
  auto events = store_->ListLastEvents(run->id, limit);
  Json ev = Json::array();
  if (events.ok()) {
    for (const auto& e : *events) ev.push_back(EventJson(e));
  }
  int64_t event_count = static_cast<int64_t>(ev.size());
  if (limit > 0 && event_count >= limit) {
    auto counted = store_->CountEvents(run->id);
    if (counted.ok()) event_count = *counted;
  }
  (*obj)["events"] = ev;
  (*obj)["eventCount"] = event_count;
  // Defence in depth: no secret value of the namespace may appear anywhere in the answer.
  // (A namespace without a maskable secret skips the round trip: a 10,000-step run's
  // document is megabytes.)
  std::vector<std::string> secrets = SecretValues(v->namespace_);
  if (std::none_of(secrets.begin(), secrets.end(), spec::MaskedInLogs)) return obj;
  std::string text = MaskSecrets((*obj).dump(), secrets);
  return Json::parse(text, nullptr, false);
}

Json ControllerService::RunCost(const std::string& run_id) {
  govern::CostStore* costs = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!costs_ && !state_dir_.empty()) {
      auto opened = govern::CostStore::Open(state_dir_);
      if (opened.ok()) costs_ = std::move(*opened);
    }
    costs = costs_.get();
  }
  if (costs == nullptr) return nullptr;
  auto records = costs->ListRun(run_id);  // the store has its own mutex
  return records.ok() ? RunCostJson(*records) : Json(nullptr);
}

Result<Json> ControllerService::Events(const std::string& id) { return EventsSince(id, 0); }

Result<Json> ControllerService::EventsSince(const std::string& id, int64_t after_seq) {
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  auto events = store_->ListEvents(run->id, after_seq);
  if (!events.ok()) return events.error();
  return EventList(*events, run->namespace_);
}

Result<Json> ControllerService::LastEvents(const std::string& id, int64_t limit) {
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  auto events = store_->ListLastEvents(
      run->id, static_cast<int>(std::min<int64_t>(std::max<int64_t>(limit, 0), 1'000'000'000)));
  if (!events.ok()) return events.error();
  return EventList(*events, run->namespace_);
}

Json ControllerService::EventList(const std::vector<store::Event>& events, const std::string& ns) {
  auto secrets = SecretValues(ns);
  Json items = Json::array();
  for (const auto& e : events) {
    Json j = EventJson(e);
    j["message"] = MaskSecrets(e.message, secrets);
    items.push_back(std::move(j));
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "EventList"}, {"items", items}};
}

int64_t ControllerService::ChangeSeq() { return store_->LastEventSeq(); }

Result<Json> ControllerService::Lineage(const std::string& id, const std::string& format) {
  if (!format.empty() && format != "openlineage" && format != "json") {
    return Error(codes::kInvalidArgument, "unknown lineage format " + Quote(format))
        .Value(format)
        .Hint("use openlineage, or leave it out");
  }
  auto records = LoadRunRecords(store_, id);
  if (!records.ok()) return records.error();
  store::WorkloadVersion* v = &records->version;
  store::Run* run = &records->run;
  std::vector<store::Step>* steps = &records->steps;
  auto artifacts = store_->ListArtifacts(run->id);
  if (!artifacts.ok()) return artifacts.error();
  auto edges = store_->ListLineage(run->id);
  if (!edges.ok()) return edges.error();
  auto w = Snapshot(*v);
  LineageInput in{&*v, &*run, &*steps, &*artifacts, &*edges, w.get()};
  Json lineage = LineageJson(in);
  if (format == "openlineage") return OpenLineageEvent(in, lineage);
  lineage["apiVersion"] = kApiVersion;
  lineage["kind"] = "Lineage";
  lineage["metadata"] = {{"id", v->id}, {"name", v->name}, {"namespace", v->namespace_}};
  return lineage;
}

Result<Json> ControllerService::Cancel(const std::string& id, const std::string& subject) {
  RSL_RETURN_IF_ERROR(engine_->Cancel(id, subject));
  // Most steps stop at SIGTERM at once; answer with the final phase when it comes quickly,
  // else with the current one (the run ends within the stop grace period).
  (void)engine_->Wait(id, kCancelWaitMs);
  return Object(id);
}

Result<Json> ControllerService::Rollback(const std::string& id, const std::string& subject) {
  auto v = store_->GetVersion(id);
  if (!v.ok()) return v.error();
  auto w = spec::FromCanonicalJson(v->spec_json);
  if (!w.ok()) return w.error();
  w->namespace_ = v->namespace_;
  engine::SubmitOptions options;
  options.rollback_of = id;
  auto new_id = engine_->Submit(std::move(*w), subject, options);
  if (!new_id.ok()) return new_id.error();
  auto run = store_->GetRun(*new_id);
  if (run.ok()) {
    // The engine records the version's rollback_of; the event makes it visible in `events`.
    auto existing = store_->ListEvents(run->id, 0);
    bool has = false;
    if (existing.ok()) {
      for (const auto& e : *existing)
        has = has || e.reason == spec::Name(spec::EventReason::kRolledBack);
    }
    if (!has) {
      store::Batch batch;
      store::Event e;
      e.run_id = run->id;
      e.reason = spec::Name(spec::EventReason::kRolledBack);
      e.message = "re-runs " + id + " (version " + std::to_string(v->version) + ", " + v->digest +
                  ") by " + subject;
      e.time = Env::Default()->NowMs();
      batch.events.push_back(e);
      (void)store_->Apply(&batch);  // the version itself already says rollback_of
    }
  }
  return Object(*new_id);
}

void ControllerService::CollectMetrics(Metrics* metrics) {
  // Counted by the store: a scrape holds no run of the history (100,000 finished workloads
  // cost two GROUP BY queries, not 100,000 runs and their steps in memory).
  auto counts = store_->CountPhases();
  if (!counts.ok()) return;
  metrics->Clear("rsl_workloads");
  metrics->Clear("rsl_steps");
  for (const auto& [p, n] : counts->runs) metrics->Set("rsl_workloads", {{"phase", p}}, double(n));
  for (const auto& [p, n] : counts->steps) metrics->Set("rsl_steps", {{"phase", p}}, double(n));
  // What the controller holds in memory, to show it does not grow with the history.
  auto stats = engine_->stats();
  metrics->Set("rsl_engine_runs_in_memory", {}, double(stats.running_runs));
  metrics->Set("rsl_engine_finished_runs_remembered", {}, double(stats.finished_remembered));
  metrics->Set("rsl_engine_submits_total", {}, double(stats.submits));
  metrics->Set("rsl_engine_submit_commits_total", {}, double(stats.submit_commits));
  metrics->Set("rsl_engine_turn_commits_total", {}, double(stats.batches));
  metrics->Set("rsl_engine_launches_total", {}, double(stats.launches));
  {
    std::lock_guard<std::mutex> lock(mu_);
    metrics->Set("rsl_api_cached_snapshots", {}, double(snapshots_.size()));
  }
  // Only the running runs have serving steps.
  store::RunFilter running;
  running.unfinished_only = true;
  auto runs = store_->ListRuns(running);
  if (runs.ok()) CollectServingMetrics(*runs, metrics);
}

void ControllerService::CollectServingMetrics(const std::vector<store::Run>& runs,
                                              Metrics* metrics) {
  for (const char* name :
       {"rsl_serving_replicas", "rsl_serving_ready_replicas", "rsl_serving_utilization_ratio",
        "rsl_serving_requests_total", "rsl_serving_request_errors_total"}) {
    metrics->Clear(name);
  }
  for (const auto& r : runs) {
    if (r.phase != spec::RunPhase::kRunning) continue;
    store::StepPageQuery live;
    live.run_id = r.id;
    live.live_only = true;
    auto steps = store_->ListStepsPage(live);
    if (!steps.ok()) continue;
    for (const auto& s : *steps) {
      if (!store::StepAttemptLive(s) || s.attempt_id.empty()) continue;
      auto sv = backend_->Serving(s.attempt_id);
      if (!sv) continue;
      Labels labels = {{"namespace", r.namespace_}, {"workload", r.name}, {"step", s.name}};
      metrics->Set("rsl_serving_replicas", labels, sv->replicas);
      metrics->Set("rsl_serving_ready_replicas", labels, sv->ready_replicas);
      metrics->Set("rsl_serving_utilization_ratio", labels, sv->utilization);
      metrics->Set("rsl_serving_requests_total", labels, double(sv->requests_total));
      metrics->Set("rsl_serving_request_errors_total", labels, double(sv->request_errors_total));
    }
  }
}

}  // namespace rsl::api
