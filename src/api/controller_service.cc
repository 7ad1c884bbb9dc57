#include "api/controller_service.h"

#include <algorithm>
#include <chrono>
#include <fstream>

#include "api/lineage.h"
#include "api/objects.h"
#include "api/server.h"
#include "base/codes.h"
#include "base/strings.h"
#include "spec/canonical.h"
#include "spec/names.h"
#include "spec/parse.h"
#ifdef RSL_API_HAVE_DATA
#include "data/catalog.h"
#endif
#ifdef RSL_API_HAVE_MODEL
#include "model/env_registry.h"
#endif

namespace rsl::api {

namespace {

constexpr size_t kMaxCachedSnapshots = 4096;  // a parsed spec is a few KiB
constexpr int64_t kCancelWaitMs = 2000;       // an HTTP answer should not wait for the grace

// Every key of a configmap or secret becomes an environment variable of the steps that use
// it: refuse what cannot be one, or what RSL sets itself (spec::CheckEnvFromKey).
Status CheckEnvFromKeys(const std::map<std::string, std::string>& data, bool secret) {
  for (const auto& [key, value] : data) {
    std::string hint;
    std::string why = spec::CheckEnvFromKey(key, secret, &hint);
    if (!why.empty()) {
      return Error(codes::kInvalidArgument, why).Path("data." + key).Value(key).Hint(hint);
    }
  }
  return Status::Ok();
}

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The log of a step as one stream: attempt 1's file, then "--- attempt 2 ---\n" and
// attempt 2's file, and so on. Earlier attempts' files are complete and never change.
struct LogPart {
  std::string header;
  std::string path;
  int64_t size = 0;
};

std::vector<LogPart> LogParts(const std::string& run_dir, const std::string& step, int attempts) {
  std::vector<LogPart> parts;
  for (int a = 1; a <= attempts; ++a) {
    LogPart p;
    if (a > 1) p.header = "--- attempt " + std::to_string(a) + " ---\n";
    p.path = engine::AttemptLogPath(run_dir, step, a);
    std::ifstream in(p.path, std::ios::binary | std::ios::ate);
    p.size = in ? static_cast<int64_t>(in.tellg()) : 0;
    parts.push_back(std::move(p));
  }
  return parts;
}

std::string ReadRange(const std::string& path, int64_t offset, int64_t len) {
  std::ifstream in(path, std::ios::binary);
  if (!in || len <= 0) return "";
  in.seekg(offset);
  std::string buf(static_cast<size_t>(len), '\0');
  in.read(buf.data(), len);
  buf.resize(static_cast<size_t>(in.gcount()));
  return buf;
}

}  // namespace

ControllerService::ControllerService(store::Store* store, engine::Engine* engine,
                                     backend::Backend* backend, Metrics* metrics,
                                     std::string state_dir)
    : store_(store), engine_(engine), backend_(backend), metrics_(metrics),
      state_dir_(std::move(state_dir)) {}

std::shared_ptr<const spec::Workload> ControllerService::Snapshot(const store::WorkloadVersion& v) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = snapshots_.find(v.id);
    if (it != snapshots_.end()) return it->second;
  }
  auto parsed = spec::FromCanonicalJson(v.spec_json);
  std::shared_ptr<const spec::Workload> w;
  if (parsed.ok()) w = std::make_shared<const spec::Workload>(std::move(*parsed));
  std::lock_guard<std::mutex> lock(mu_);
  if (snapshots_.size() >= kMaxCachedSnapshots) snapshots_.clear();
  snapshots_[v.id] = w;
  return w;
}

std::vector<std::string> ControllerService::SecretValues(const std::string& ns) {
  std::vector<std::string> out;
  auto secrets = store_->ListConfigMaps(ns, /*secret=*/true);
  if (!secrets.ok()) return out;
  for (const auto& s : *secrets) {
    for (const auto& [k, v] : s.data) out.push_back(v);
  }
  // Longest first, so a secret that contains another is masked whole.
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return out;
}

Result<Json> ControllerService::Object(const std::string& id) {
  auto v = store_->GetVersion(id);
  if (!v.ok()) return v.error();
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  auto steps = store_->ListSteps(run->id);
  if (!steps.ok()) return steps.error();
  // A running attempt's usage so far, from the engine's latest live sample (the stored row
  // gets the totals only when the attempt ends).
  for (auto& s : *steps) {
    if (!store::StepAttemptLive(s) || s.attempt_id.empty()) continue;
    if (auto live = engine_->LiveUsage(s.attempt_id)) {
      s.wall_ms = live->usage.wall_ms;
      s.cpu_ms = live->usage.cpu_ms;
      s.peak_memory_bytes = live->usage.peak_memory_bytes;
    }
  }
  auto w = Snapshot(*v);
  return WorkloadObject(*v, *run, *steps, w.get());
}

Result<Json> ControllerService::Submit(const std::string& yaml, const std::string& source_name,
                                       const std::string& base_dir, const std::string& ns,
                                       const std::string& subject, Errors* errors) {
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
  spec::ParseResult parsed = spec::ParseWorkload(yaml, source_name, options);
  if (!parsed.ok()) {
    *errors = parsed.errors;
    observe("failure");
    return parsed.errors.front();
  }
  parsed.workload.namespace_ = ns;
  auto id = engine_->Submit(parsed.workload, subject);
  if (!id.ok()) {
    observe("failure");
    return id.error();
  }
  observe("success");
  return Object(*id);
}

Result<Json> ControllerService::GetWorkload(const std::string& id) { return Object(id); }

Result<Json> ControllerService::ListWorkloads(const std::vector<std::string>& namespaces,
                                              const std::string& name) {
  std::vector<store::Run> runs;
  std::vector<std::string> nss = namespaces.empty() ? std::vector<std::string>{""} : namespaces;
  for (const auto& ns : nss) {
    store::RunFilter f;
    f.namespace_ = ns;
    f.name = name;
    auto r = store_->ListRuns(f);
    if (!r.ok()) return r.error();
    runs.insert(runs.end(), r->begin(), r->end());
  }
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
    return a.created_at != b.created_at ? a.created_at > b.created_at : a.id > b.id;
  });
  Json items = Json::array();
  for (const auto& run : runs) {
    auto v = store_->GetVersion(run.workload_id);
    if (!v.ok()) continue;
    Json s = WorkloadSummary(*v, run);
    auto steps = store_->ListSteps(run.id);
    if (steps.ok()) {
      int done = 0;
      for (const auto& st : *steps) done += st.phase == store::kSucceeded || st.phase == store::kSkipped;
      s["status"]["stepCount"] = steps->size();
      s["status"]["stepsDone"] = done;
    }
    items.push_back(std::move(s));
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "AIWorkloadList"}, {"items", items}};
}

Result<Json> ControllerService::Describe(const std::string& id) {
  auto obj = Object(id);
  if (!obj.ok()) return obj.error();
  auto v = store_->GetVersion(id);
  if (!v.ok()) return v.error();
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  Json spec = Json::parse(v->spec_json, nullptr, false);
  // The canonical spec names secrets (envFrom secretRef) but never holds their values; a value
  // pasted literally into the spec is masked below with every other occurrence.
  (*obj)["spec"] = spec.is_discarded() ? Json(v->spec_json) : spec;
  Json admission = Json::parse(run->admission_report_json, nullptr, false);
  (*obj)["status"]["admission"] = admission.is_discarded() ? Json(nullptr) : admission;
  auto events = store_->ListEvents(run->id, 0);
  Json ev = Json::array();
  if (events.ok()) {
    for (const auto& e : *events) ev.push_back(EventJson(e));
  }
  (*obj)["events"] = ev;
  // Defence in depth: no secret value of the namespace may appear anywhere in the answer.
  std::string text = MaskSecrets((*obj).dump(), SecretValues(v->namespace_));
  return Json::parse(text, nullptr, false);
}

Result<Json> ControllerService::Events(const std::string& id) {
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  auto events = store_->ListEvents(run->id, 0);
  if (!events.ok()) return events.error();
  auto secrets = SecretValues(run->namespace_);
  Json items = Json::array();
  for (const auto& e : *events) {
    Json j = EventJson(e);
    j["message"] = MaskSecrets(e.message, secrets);
    items.push_back(std::move(j));
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "EventList"}, {"items", items}};
}

Result<LogChunk> ControllerService::Logs(const std::string& id, const std::string& step,
                                         int64_t offset, int64_t max_bytes) {
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  auto steps = store_->ListSteps(run->id);
  if (!steps.ok()) return steps.error();
  const store::Step* s = nullptr;
  for (const auto& st : *steps) {
    if (st.name == step) s = &st;
  }
  if (!s) return Error(codes::kNotFound, "no step " + Quote(step) + " in " + id).Value(step);
  // A TIMED_OUT step whose attempt is still being stopped may still write.
  bool step_done = (store::IsTerminalPhase(s->phase) && !store::StepAttemptLive(*s)) ||
                   store::IsTerminalPhase(run->phase);
  std::vector<LogPart> parts = LogParts(run->run_dir, step, s->attempts);
  // Map the virtual offset onto the parts.
  LogChunk out;
  int64_t pos = 0;
  int64_t want = offset;
  for (const auto& p : parts) {
    int64_t hlen = static_cast<int64_t>(p.header.size());
    int64_t plen = hlen + p.size;
    if (want < pos + plen && static_cast<int64_t>(out.data.size()) < max_bytes) {
      int64_t in_part = want - pos;
      if (in_part < hlen) {
        out.data += p.header.substr(static_cast<size_t>(in_part));
        in_part = hlen;
      }
      int64_t budget = max_bytes - static_cast<int64_t>(out.data.size());
      int64_t file_off = in_part - hlen;
      out.data += ReadRange(p.path, file_off, std::min(budget, p.size - file_off));
      want = offset + static_cast<int64_t>(out.data.size());
    }
    pos += plen;
  }
  int64_t total = pos;
  int64_t end = offset + static_cast<int64_t>(out.data.size());
  // While the step runs, hand out whole lines only, so a secret value never straddles two
  // chunks (each chunk is masked on its own).
  if (!(step_done && end >= total) && !out.data.empty()) {
    size_t nl = out.data.rfind('\n');
    if (nl != std::string::npos) {
      out.data.resize(nl + 1);
    } else if (static_cast<int64_t>(out.data.size()) < max_bytes) {
      out.data.clear();
    }
  }
  out.next_offset = offset + static_cast<int64_t>(out.data.size());
  out.finished = step_done && out.next_offset >= total;
  out.data = MaskSecrets(std::move(out.data), SecretValues(run->namespace_));
  return out;
}

Result<Json> ControllerService::Lineage(const std::string& id, const std::string& format) {
  if (!format.empty() && format != "openlineage" && format != "json") {
    return Error(codes::kInvalidArgument, "unknown lineage format " + Quote(format))
        .Value(format)
        .Hint("use openlineage, or leave it out");
  }
  auto v = store_->GetVersion(id);
  if (!v.ok()) return v.error();
  auto run = store_->GetRun(id);
  if (!run.ok()) return run.error();
  auto steps = store_->ListSteps(run->id);
  if (!steps.ok()) return steps.error();
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
  auto new_id = engine_->Submit(*w, subject, options);
  if (!new_id.ok()) return new_id.error();
  auto run = store_->GetRun(*new_id);
  if (run.ok()) {
    // The engine records the version's rollback_of; the event makes it visible in `events`.
    auto existing = store_->ListEvents(run->id, 0);
    bool has = false;
    if (existing.ok()) {
      for (const auto& e : *existing) has = has || e.reason == "RolledBack";
    }
    if (!has) {
      store::Batch batch;
      store::Event e;
      e.run_id = run->id;
      e.reason = "RolledBack";
      e.message = "re-runs " + id + " (version " + std::to_string(v->version) + ", " + v->digest +
                  ") by " + subject;
      e.time = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
      batch.events.push_back(e);
      (void)store_->Apply(&batch);  // the version itself already says rollback_of
    }
  }
  return Object(*new_id);
}

Result<Json> ControllerService::ListNodes(const std::string& capability) {
  auto nodes = backend_->ListNodes();
  if (!nodes.ok()) return nodes.error();
  Json items = Json::array();
  for (const auto& n : *nodes) {
    std::vector<std::string> caps = n.capabilities;
    Json gpus = Json::array();
    for (const auto& g : n.gpus) {
      caps.insert(caps.end(), g.capabilities.begin(), g.capabilities.end());
      gpus.push_back({{"model", g.model}, {"memoryBytes", g.memory_bytes},
                      {"capabilities", g.capabilities}, {"probed", g.probed}});
    }
    std::sort(caps.begin(), caps.end());
    caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
    if (!capability.empty() && std::find(caps.begin(), caps.end(), capability) == caps.end()) {
      continue;
    }
    items.push_back({{"apiVersion", kApiVersion},
                     {"kind", "Node"},
                     {"metadata", {{"name", n.name}, {"labels", n.labels}}},
                     {"status",
                      {{"state", n.state},
                       {"cpuMillis", n.cpu_millis},
                       {"memoryBytes", n.memory_bytes},
                       {"usedCpuMillis", n.used_cpu_millis},
                       {"usedMemoryBytes", n.used_memory_bytes},
                       {"usedGpus", n.used_gpus},
                       {"gpus", gpus},
                       {"capabilities", caps}}}});
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "NodeList"}, {"items", items}};
}

Result<Json> ControllerService::ClusterStatus() {
  auto nodes = backend_->ListNodes();
  if (!nodes.ok()) return nodes.error();
  int gpu_total = 0, gpu_ready = 0, cpu_total = 0, cpu_ready = 0;
  std::map<std::string, int> models;
  for (const auto& n : *nodes) {
    bool ready = n.state == "Ready";
    if (!n.gpus.empty()) {
      ++gpu_total;
      gpu_ready += ready;
      models[n.gpus.front().model] += 1;
    } else {
      ++cpu_total;
      cpu_ready += ready;
    }
  }
  Json proxies = {{"total", 0}, {"registered", Json::array()}};
#ifdef RSL_API_HAVE_DATA
  auto catalog = data::Catalog::Open(state_dir_);
  if (catalog.ok()) {
    auto list = (*catalog)->List();
    if (list.ok()) {
      for (const auto& d : *list) proxies["registered"].push_back(d.name);
      proxies["total"] = list->size();
    }
  }
#endif
  std::map<std::string, int> phases;
  auto runs = store_->ListRuns({});
  if (runs.ok()) {
    for (const auto& r : *runs) phases[r.phase] += 1;
  }
  return Json{{"apiVersion", kApiVersion},
              {"kind", "ClusterStatus"},
              {"controller", {{"state", "Running"}, {"version", kControllerVersion},
                              {"backend", backend_->name()}}},
              {"dataSources", proxies},
              {"gpuNodes", {{"total", gpu_total}, {"ready", gpu_ready}, {"models", models}}},
              {"cpuNodes", {{"total", cpu_total}, {"ready", cpu_ready}}},
              {"workloads", phases}};
}

Status ControllerService::PutConfigMap(const std::string& ns, const std::string& name,
                                       const std::map<std::string, std::string>& data) {
  RSL_RETURN_IF_ERROR(CheckEnvFromKeys(data, /*secret=*/false));
  store::ConfigMap cm;
  cm.namespace_ = ns;
  cm.name = name;
  cm.data = data;
  cm.updated_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return store_->PutConfigMap(cm);
}

Status ControllerService::PutSecret(const std::string& ns, const std::string& name,
                                    const std::map<std::string, std::string>& data,
                                    std::vector<std::string>* warnings) {
  RSL_RETURN_IF_ERROR(CheckEnvFromKeys(data, /*secret=*/true));
  *warnings = UnmaskedSecretWarnings(data);
  store::ConfigMap cm;
  cm.namespace_ = ns;
  cm.name = name;
  cm.secret = true;
  cm.data = data;
  cm.updated_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return store_->PutConfigMap(cm);
}

Result<Json> ControllerService::ListConfigMaps(const std::string& ns) {
  auto list = store_->ListConfigMaps(ns, false);
  if (!list.ok()) return list.error();
  Json items = Json::array();
  for (const auto& cm : *list) {
    items.push_back({{"apiVersion", kApiVersion}, {"kind", "ConfigMap"},
                     {"metadata", {{"name", cm.name}, {"namespace", cm.namespace_},
                                   {"updatedAtMs", cm.updated_at}}},
                     {"data", cm.data}});
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "ConfigMapList"}, {"items", items}};
}

Result<Json> ControllerService::ListSecrets(const std::string& ns) {
  auto list = store_->ListConfigMaps(ns, true);
  if (!list.ok()) return list.error();
  Json items = Json::array();
  for (const auto& cm : *list) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : cm.data) keys.push_back(k);
    items.push_back({{"apiVersion", kApiVersion}, {"kind", "Secret"},
                     {"metadata", {{"name", cm.name}, {"namespace", cm.namespace_},
                                   {"updatedAtMs", cm.updated_at}}},
                     {"keys", keys}});
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "SecretList"}, {"items", items}};
}

Result<Json> ControllerService::ListDatasources() {
  Json items = Json::array();
#ifdef RSL_API_HAVE_DATA
  auto catalog = data::Catalog::Open(state_dir_);
  if (!catalog.ok()) return catalog.error();
  auto list = (*catalog)->List();
  if (!list.ok()) return list.error();
  for (const auto& d : *list) {
    items.push_back({{"apiVersion", kApiVersion}, {"kind", "Datasource"},
                     {"metadata", {{"name", d.name}}}, {"spec", d.RedactedJson()}});
  }
#endif
  return Json{{"apiVersion", kApiVersion}, {"kind", "DatasourceList"}, {"items", items}};
}

Result<Json> ControllerService::ListEnvironments() {
  Json items = Json::array();
#ifdef RSL_API_HAVE_MODEL
  auto registry = model::EnvRegistry::Open(state_dir_);
  if (!registry.ok()) return registry.error();
  auto list = (*registry)->List();
  if (!list.ok()) return list.error();
  for (const auto& e : *list) {
    items.push_back({{"apiVersion", kApiVersion},
                     {"kind", "Environment"},
                     {"metadata", {{"name", e.image}, {"registeredAtMs", e.registered_at_ms}}},
                     {"spec", {{"kind", e.kind}, {"python", e.python}, {"root", e.root},
                               {"entrypoint", e.entrypoint}}},
                     {"status", {{"pythonVersion", e.inspection.python_version},
                                 {"packages", e.inspection.packages.size()},
                                 {"digest", e.inspection.digest}}}});
  }
#endif
  return Json{{"apiVersion", kApiVersion}, {"kind", "EnvironmentList"}, {"items", items}};
}

void ControllerService::CollectMetrics(Metrics* metrics) {
  auto runs = store_->ListRuns({});
  if (!runs.ok()) return;
  std::map<std::string, int> run_phases;
  std::map<std::string, int> step_phases;
  for (const auto& r : *runs) {
    run_phases[r.phase] += 1;
    std::vector<std::string> phases;
    bool cached = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = finished_steps_.find(r.id);
      if (it != finished_steps_.end()) {
        phases = it->second;
        cached = true;
      }
    }
    if (!cached) {
      auto steps = store_->ListSteps(r.id);
      if (!steps.ok()) continue;
      for (const auto& s : *steps) phases.push_back(s.phase);
      if (store::IsTerminalPhase(r.phase)) {
        std::lock_guard<std::mutex> lock(mu_);
        finished_steps_[r.id] = phases;
      }
    }
    for (const auto& p : phases) step_phases[p] += 1;
  }
  metrics->Clear("rsl_workloads");
  metrics->Clear("rsl_steps");
  for (const auto& [p, n] : run_phases) metrics->Set("rsl_workloads", {{"phase", p}}, n);
  for (const auto& [p, n] : step_phases) metrics->Set("rsl_steps", {{"phase", p}}, n);
}

}  // namespace rsl::api
