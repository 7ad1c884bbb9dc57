#include "api/objects.h"

#include <ctime>
#include <unordered_map>

#include "api/service.h"
#include "spec/names.h"

namespace rsl::api {

std::string Rfc3339(int64_t ms) {
  if (ms <= 0) return "";
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

nlohmann::json ProgressJson(const std::string& progress) {
  size_t slash = progress.find('/');
  if (slash == std::string::npos) return nullptr;
  try {
    double done = std::stod(progress.substr(0, slash));
    double total = std::stod(progress.substr(slash + 1));
    if (total <= 0 || done < 0) return nullptr;
    double pct = done / total * 100.0;
    if (pct > 100) pct = 100;
    return {{"done", done}, {"total", total}, {"percent", pct}};
  } catch (const std::exception&) {
    return nullptr;
  }
}

namespace {

nlohmann::json Metadata(const store::WorkloadVersion& v) {
  nlohmann::json m = {{"id", v.id},
                      {"name", v.name},
                      {"namespace", v.namespace_},
                      {"labels", v.labels},
                      {"version", v.version},
                      {"digest", v.digest},
                      {"createdBy", v.created_by},
                      {"creationTimestamp", Rfc3339(v.created_at)},
                      {"createdAtMs", v.created_at}};
  if (!v.rollback_of.empty()) m["rollbackOf"] = v.rollback_of;
  return m;
}

// A step's spec, for its limits: found at its pipeline index (the store's index is the
// spec's), else by name from a map built at the first miss (a 10,000-step run searched step by
// step would be 10^8 comparisons; building the map for a page of a 100,000-step run would cost
// more than the page).
class StepIndex {
 public:
  explicit StepIndex(const spec::Workload* w) : w_(w) {}
  int64_t MemoryLimit(const store::Step& step) const {
    if (!w_) return 0;
    const spec::Step* s = Find(step);
    if (s && s->effective.memory_bytes) return *s->effective.memory_bytes;
    return w_->resources.memory_bytes.value_or(0);
  }
  int64_t CpuLimit(const store::Step& step) const {
    if (!w_) return 0;
    const spec::Step* s = Find(step);
    if (s && s->effective.cpu_millis) return *s->effective.cpu_millis;
    return w_->resources.cpu_millis.value_or(0);
  }

 private:
  const spec::Step* Find(const store::Step& step) const {
    const auto& steps = w_->pipeline.steps;
    if (step.index >= 0 && static_cast<size_t>(step.index) < steps.size() &&
        steps[static_cast<size_t>(step.index)].name == step.name) {
      return &steps[static_cast<size_t>(step.index)];
    }
    if (by_name_.empty()) {
      by_name_.reserve(steps.size());
      for (const auto& s : steps) by_name_.emplace(s.name, &s);
    }
    auto it = by_name_.find(step.name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  const spec::Workload* w_;
  mutable std::unordered_map<std::string, const spec::Step*> by_name_;
};

nlohmann::json StepJson(const store::Run& run, const store::Step& s, const StepIndex& index) {
  nlohmann::json j = {{"name", s.name},
                      {"index", s.index},
                      {"phase", StepPhaseName(run, s)},
                      {"attempts", s.attempts},
                      {"retriesUsed", s.retries_used},
                      {"node", s.node},
                      {"exitCode", s.exit_code},
                      {"signal", s.signal},
                      {"startedAtMs", s.started_at},
                      {"finishedAtMs", s.finished_at},
                      {"wallMs", s.wall_ms},
                      {"cpuMs", s.cpu_ms},
                      {"peakMemoryBytes", s.peak_memory_bytes},
                      {"peakCpuMillicores", s.peak_cpu_millicores},
                      {"memoryLimitBytes", index.MemoryLimit(s)},
                      {"cpuLimitMillis", index.CpuLimit(s)},
                      {"failureCode", s.failure_code},
                      {"message", s.message},
                      {"progress", ProgressJson(s.progress)}};
  if (s.next_attempt_at > 0) j["nextAttemptAtMs"] = s.next_attempt_at;
  // What the step wrote to RSL_METRICS_FILE (the `output.<step>.metrics` of `when`).
  nlohmann::json metrics = nlohmann::json::parse(s.metrics_json, nullptr, false);
  if (metrics.is_object() && !metrics.empty()) j["metrics"] = std::move(metrics);
  return j;
}

}  // namespace

std::string StepPhaseName(const store::Run& run, const store::Step& step) {
  if (run.phase == spec::RunPhase::kRejected && step.phase == spec::StepPhase::kCancelled &&
      step.attempts == 0) {
    return spec::Name(spec::RunPhase::kRejected);
  }
  return spec::Name(step.phase);
}

void AddStepCounts(const store::Run& run, const std::map<std::string, int64_t>& counts,
                   nlohmann::json* status) {
  int64_t total = 0;
  nlohmann::json by_phase = nlohmann::json::object();
  const std::string cancelled = spec::Name(spec::StepPhase::kCancelled);
  for (const auto& [phase, n] : counts) {
    total += n;
    // As StepPhaseName: a REJECTED run's steps never started.
    bool rejected = run.phase == spec::RunPhase::kRejected && phase == cancelled;
    by_phase[rejected ? spec::Name(spec::RunPhase::kRejected) : phase] = n;
  }
  auto count = [&](spec::StepPhase p) {
    auto it = counts.find(spec::Name(p));
    return it == counts.end() ? int64_t{0} : it->second;
  };
  (*status)["stepCount"] = total;
  (*status)["stepsSucceeded"] = count(spec::StepPhase::kSucceeded);
  (*status)["stepsSkipped"] = count(spec::StepPhase::kSkipped);
  (*status)["stepCounts"] = std::move(by_phase);
}

void AddStepCounts(const store::Run& run, const std::vector<store::Step>& steps,
                   nlohmann::json* status) {
  std::map<std::string, int64_t> counts;
  for (const auto& s : steps) counts[spec::Name(s.phase)] += 1;
  AddStepCounts(run, counts, status);
}

nlohmann::json StepsJson(const store::Run& run, const std::vector<store::Step>& steps,
                         const spec::Workload* workload) {
  StepIndex index(workload);
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& s : steps) arr.push_back(StepJson(run, s, index));
  return arr;
}

nlohmann::json CurrentStepJson(const nlohmann::json& step) {
  nlohmann::json cur = nlohmann::json::object();
  for (const char* key :
       {"name", "index", "phase", "progress", "cpuMs", "wallMs", "peakMemoryBytes",
        "peakCpuMillicores", "memoryLimitBytes", "cpuLimitMillis"}) {
    if (step.contains(key)) cur[key] = step[key];
  }
  return cur;
}

const store::Step* CurrentStep(const std::vector<store::Step>& steps) {
  const store::Step* last_started = nullptr;
  for (const auto& s : steps) {
    if (store::StepAttemptLive(s) || s.phase == spec::StepPhase::kRetrying) return &s;
    if (s.started_at > 0) last_started = &s;
  }
  return last_started;
}

nlohmann::json WorkloadSummary(const store::WorkloadVersion& v, const store::Run& run) {
  return {{"apiVersion", kApiVersion},
          {"kind", "AIWorkload"},
          {"metadata", Metadata(v)},
          {"status",
           {{"phase", spec::Name(run.phase)},
            {"runId", run.id},
            {"failureCode", run.failure_code},
            {"createdAtMs", run.created_at},
            {"startedAtMs", run.started_at},
            {"finishedAtMs", run.finished_at}}}};
}

nlohmann::json WorkloadObject(const store::WorkloadVersion& v, const store::Run& run,
                              const std::vector<store::Step>& steps, const spec::Workload* w) {
  nlohmann::json obj = WorkloadSummary(v, run);
  nlohmann::json& st = obj["status"];
  st["failureMessage"] = run.failure_message;
  st["startTime"] = Rfc3339(run.started_at);
  st["completionTime"] = Rfc3339(run.finished_at);
  st["commitState"] = run.commit_state;
  st["committedUri"] = run.committed_uri;
  // Retention collected the run's steps, attempts, events and directory (store/retention.h).
  if (run.collected_at > 0) st["historyCollectedAt"] = Rfc3339(run.collected_at);
  st["steps"] = StepsJson(run, steps, w);
  AddStepCounts(run, steps, &st);
  if (const store::Step* cur = CurrentStep(steps)) {
    st["currentStep"] = CurrentStepJson(st["steps"][static_cast<size_t>(cur - steps.data())]);
  }
  return obj;
}

nlohmann::json RunCostJson(const std::vector<govern::CostRecord>& records) {
  if (records.empty()) return nullptr;
  double gpu = 0, cpu = 0, memory = 0, total = 0;
  std::vector<std::string> order;  // steps in the order their first attempt ended
  std::map<std::string, std::pair<int, double>> steps;  // step -> attempts, total
  for (const auto& r : records) {
    gpu += r.cost.gpu_cost;
    cpu += r.cost.cpu_cost;
    memory += r.cost.memory_cost;
    total += r.cost.total;
    auto [it, inserted] = steps.try_emplace(r.step, 0, 0.0);
    if (inserted) order.push_back(r.step);
    it->second.first++;
    it->second.second += r.cost.total;
  }
  nlohmann::json by_step = nlohmann::json::array();
  for (const auto& name : order) {
    by_step.push_back(
        {{"name", name}, {"attempts", steps[name].first}, {"total", steps[name].second}});
  }
  return {{"currency", records.front().currency},
          {"total", total},
          {"gpuCost", gpu},
          {"cpuCost", cpu},
          {"memoryCost", memory},
          {"attempts", records.size()},
          {"steps", by_step}};
}

nlohmann::json ServingJson(const std::string& step, const backend::ServingStatus& s) {
  nlohmann::json replicas = nlohmann::json::array();
  for (const auto& r : s.replica_list) {
    replicas.push_back({{"index", r.index},
                        {"node", r.node},
                        {"port", r.port},
                        {"state", r.state},
                        {"restarts", r.restarts},
                        {"utilization", r.utilization}});
  }
  nlohmann::json history = nlohmann::json::array();
  for (const auto& h : s.history) {
    history.push_back({{"timeMs", h.time_ms},
                       {"utilization", h.utilization},
                       {"readyReplicas", h.ready_replicas},
                       {"desiredReplicas", h.desired_replicas}});
  }
  return {{"step", step},
          {"endpoint", s.endpoint},
          {"replicas", s.replicas},
          {"readyReplicas", s.ready_replicas},
          {"desiredReplicas", s.desired_replicas},
          {"utilization", s.utilization},
          {"lastScaleTime", s.last_scale_time_ms ? Rfc3339(s.last_scale_time_ms) : ""},
          {"requestsTotal", s.requests_total},
          {"requestErrorsTotal", s.request_errors_total},
          {"replicaList", replicas},
          {"history", history}};
}

nlohmann::json EventJson(const store::Event& e) {
  return {{"seq", e.seq},     {"runId", e.run_id},      {"step", e.step},
          {"type", e.type},   {"reason", e.reason},     {"message", e.message},
          {"timeMs", e.time}, {"time", Rfc3339(e.time)}};
}

std::string MaskSecrets(std::string text, const std::vector<std::string>& secret_values) {
  for (const auto& secret : secret_values) {
    if (!spec::MaskedInLogs(secret)) continue;
    size_t pos = 0;
    while ((pos = text.find(secret, pos)) != std::string::npos) {
      text.replace(pos, secret.size(), "***");
      pos += 3;
    }
  }
  return text;
}

std::vector<std::string> UnmaskedSecretWarnings(const std::map<std::string, std::string>& data) {
  std::vector<std::string> out;
  for (const auto& [key, value] : data) {
    if (spec::MaskedInLogs(value)) continue;
    out.push_back("the value of " + key + " is shorter than " +
                  std::to_string(spec::kMinMaskedSecretBytes) +
                  " bytes: it will not be masked in logs");
  }
  return out;
}

}  // namespace rsl::api
