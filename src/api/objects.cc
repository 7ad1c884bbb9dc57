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

// The spec's steps by name, so a run's limits cost one lookup per step (a 10,000-step run
// searched step by step would be 10^8 comparisons).
class StepIndex {
 public:
  explicit StepIndex(const spec::Workload* w) : w_(w) {
    if (!w) return;
    by_name_.reserve(w->pipeline.steps.size());
    for (const auto& s : w->pipeline.steps) by_name_.emplace(s.name, &s);
  }
  int64_t MemoryLimit(const std::string& step) const {
    if (!w_) return 0;
    const spec::Step* s = Find(step);
    if (s && s->effective.memory_bytes) return *s->effective.memory_bytes;
    return w_->resources.memory_bytes.value_or(0);
  }
  int64_t CpuLimit(const std::string& step) const {
    if (!w_) return 0;
    const spec::Step* s = Find(step);
    if (s && s->effective.cpu_millis) return *s->effective.cpu_millis;
    return w_->resources.cpu_millis.value_or(0);
  }

 private:
  const spec::Step* Find(const std::string& step) const {
    auto it = by_name_.find(step);
    return it == by_name_.end() ? nullptr : it->second;
  }
  const spec::Workload* w_;
  std::unordered_map<std::string, const spec::Step*> by_name_;
};

// The step a user cares about now: the first running one (a timed-out one being stopped
// included), else the last one that started.
const store::Step* CurrentStep(const std::vector<store::Step>& steps) {
  const store::Step* last_started = nullptr;
  for (const auto& s : steps) {
    if (store::StepAttemptLive(s) || s.phase == spec::StepPhase::kRetrying) return &s;
    if (s.started_at > 0) last_started = &s;
  }
  return last_started;
}

}  // namespace

std::string StepPhaseName(const store::Run& run, const store::Step& step) {
  if (run.phase == spec::RunPhase::kRejected && step.phase == spec::StepPhase::kCancelled &&
      step.attempts == 0) {
    return spec::Name(spec::RunPhase::kRejected);
  }
  return spec::Name(step.phase);
}

void AddStepCounts(const std::vector<store::Step>& steps, nlohmann::json* status) {
  int succeeded = 0;
  int skipped = 0;
  for (const auto& s : steps) {
    succeeded += s.phase == spec::StepPhase::kSucceeded;
    skipped += s.phase == spec::StepPhase::kSkipped;
  }
  (*status)["stepCount"] = steps.size();
  (*status)["stepsSucceeded"] = succeeded;
  (*status)["stepsSkipped"] = skipped;
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
  StepIndex index(w);
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& s : steps) {
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
                        {"memoryLimitBytes", index.MemoryLimit(s.name)},
                        {"cpuLimitMillis", index.CpuLimit(s.name)},
                        {"failureCode", s.failure_code},
                        {"message", s.message},
                        {"progress", ProgressJson(s.progress)}};
    if (s.next_attempt_at > 0) j["nextAttemptAtMs"] = s.next_attempt_at;
    // What the step wrote to RSL_METRICS_FILE (the `output.<step>.metrics` of `when`).
    nlohmann::json metrics = nlohmann::json::parse(s.metrics_json, nullptr, false);
    if (metrics.is_object() && !metrics.empty()) j["metrics"] = std::move(metrics);
    arr.push_back(std::move(j));
  }
  st["steps"] = arr;
  AddStepCounts(steps, &st);
  if (const store::Step* cur = CurrentStep(steps)) {
    st["currentStep"] = {{"name", cur->name},
                         {"index", cur->index},
                         {"phase", StepPhaseName(run, *cur)},
                         {"progress", ProgressJson(cur->progress)},
                         {"cpuMs", cur->cpu_ms},
                         {"wallMs", cur->wall_ms},
                         {"peakMemoryBytes", cur->peak_memory_bytes},
                         {"peakCpuMillicores", cur->peak_cpu_millicores},
                         {"memoryLimitBytes", index.MemoryLimit(cur->name)},
                         {"cpuLimitMillis", index.CpuLimit(cur->name)}};
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
