#include "engine/run_state.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "base/strings.h"
#include "engine/object_root.h"

namespace rsl::engine {
namespace {

// Values of a metrics JSON object for `when` (numbers, strings, booleans, lists, null).
expr::Value FromJson(const nlohmann::json& j) {
  expr::Value v;
  if (j.is_boolean())
    v.v = j.get<bool>();
  else if (j.is_number())
    v.v = j.get<double>();
  else if (j.is_string())
    v.v = j.get<std::string>();
  else if (j.is_array()) {
    expr::List list;
    for (const auto& e : j) list.push_back(FromJson(e));
    v.v = std::move(list);
  }
  return v;
}

}  // namespace

RunState::~RunState() {
  if (owner_fd >= 0) close(owner_fd);
}

namespace {

std::optional<expr::Value> MetricOf(const std::string& metrics_json,
                                    const std::vector<std::string>& path, size_t from) {
  auto j = nlohmann::json::parse(metrics_json, nullptr, false);
  for (size_t k = from; k < path.size(); ++k) {
    if (!j.is_object() || !j.contains(path[k])) return std::nullopt;
    j = j[path[k]];
  }
  return FromJson(j);
}

}  // namespace

std::optional<expr::Value> RunContext::Lookup(const expr::Reference& ref) const {
  const auto& p = ref.parts;
  if (p.size() == 2 && p[0] == "status") {
    int i = plan_->IndexOf(p[1]);
    if (i < 0) return std::nullopt;
    if (self_ && i == self_->step) return expr::Value{std::string(spec::Name(self_->phase))};
    return expr::Value{std::string(spec::Name(plan_->state(i).phase))};
  }
  if (p.size() >= 4 && p[0] == "output" && p[2] == "metrics") {
    int i = plan_->IndexOf(p[1]);
    if (i < 0) return std::nullopt;
    if (self_ && i == self_->step) return MetricOf(self_->metrics_json, p, 3);
    return MetricOf(plan_->state(i).metrics_json, p, 3);
  }
  if (p.size() >= 5 && p[0] == "previous" && p[1] == "output" && p[3] == "metrics") {
    if (previous_ == nullptr || previous_->run_id.empty()) {
      missing_.push_back(ref.ToString() + " is unknown: no earlier SUCCEEDED run of this workload");
      return expr::Value{};
    }
    auto it = previous_->metrics.find(p[2]);
    std::optional<expr::Value> v;
    if (it != previous_->metrics.end()) v = MetricOf(it->second, p, 4);
    if (!v || v->is_null()) {
      missing_.push_back(ref.ToString() + " is unknown: " + previous_->run_id + " has no metric " +
                         Join(std::vector<std::string>(p.begin() + 4, p.end()), ".") +
                         " for step " + p[2]);
      return expr::Value{};
    }
    return v;
  }
  if (self_ && p.size() == 2 && p[0] == "run") {
    if (p[1] == "id") return expr::Value{self_->run_id};
    if (p[1] == "name") return expr::Value{self_->run_name};
    if (p[1] == "namespace") return expr::Value{self_->run_namespace};
    if (p[1] == "workloadId") return expr::Value{self_->workload_id};
  }
  if (self_ && p.size() == 2 && p[0] == "step") {
    if (p[1] == "name") return expr::Value{plan_->step_spec(self_->step).name};
    if (p[1] == "phase") return expr::Value{std::string(spec::Name(self_->phase))};
    if (p[1] == "exitCode") return expr::Value{double(self_->exit_code)};
    if (p[1] == "attempt") return expr::Value{double(self_->attempt)};
    if (p[1] == "failureCode") return expr::Value{self_->failure_code};
  }
  return std::nullopt;
}

Result<bool> EvalCondition(const expr::Expr& e, const RunContext& ctx, std::string* note) {
  if (note) note->clear();
  // Read every previous value first: one that does not exist makes the condition false
  // (an ordering with null would be a type error, and "no earlier run" is not an error).
  for (const auto& ref : e.references()) {
    if (ref.parts[0] == "previous") (void)ctx.Lookup(ref);
  }
  if (!ctx.missing().empty()) {
    if (note) *note = Join(ctx.missing(), "; ");
    return false;
  }
  return e.EvalBool(ctx);
}

Result<bool> RunState::EvalWhen(int i, std::string* note) const {
  if (note) note->clear();
  const auto& e = slots[size_t(i)].when;
  if (!e) return true;
  RunContext ctx(plan.get(), &previous);
  return EvalCondition(*e, ctx, note);
}

void ShedEndedLaunch(backend::LaunchSpec* launch) {
  // swap with empties: clear() would keep the vectors' capacity.
  std::vector<std::string>().swap(launch->argv);
  std::map<std::string, std::string>().swap(launch->env);
  std::vector<std::string>().swap(launch->secret_values);
  std::vector<std::string>().swap(launch->make_dirs);
  std::vector<std::string>().swap(launch->read_dirs);
  std::vector<std::string>().swap(launch->spread_from);
  std::map<std::string, std::string>().swap(launch->labels);
  std::map<std::string, backend::PullCredential>().swap(launch->pull_credentials);
}

int LockRunOwner(Env* env, const std::string& run_dir) {
  if (!env->MakeDirs(run_dir).ok()) return -1;
  // Passable, not listable: an isolated step reaches its own directories below by name and
  // learns nothing else of the run (docs/security.md).
  (void)env->Chmod(run_dir, 0711);
  int fd = open((run_dir + "/owner.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int64_t DefaultCpuMillis(const std::vector<sched::Node>& nodes) {
  int64_t most = 0;
  for (const auto& n : nodes) most = std::max(most, n.cpu_millis);
  if (most <= 0) return 1000;
  int64_t cores = std::max<int64_t>(1, most / 1000);
  return std::max<int64_t>(1, most / (cores + 4));
}

std::unique_ptr<RunState> NewRunState(std::shared_ptr<const spec::Workload> w,
                                      const store::WorkloadVersion& v, const store::Run& run,
                                      const std::string& state_dir, int64_t default_cpu_millis,
                                      const std::map<std::string, std::string>& inherited_env) {
  auto r = std::make_unique<RunState>();
  r->run = run;
  r->version = v;
  r->workload = std::move(w);
  r->info.workload_id = v.id;
  r->info.run_id = run.id;
  r->info.state_dir = state_dir;
  r->info.run_dir = run.run_dir;
  r->info.workload = r->workload.get();
  r->info.admission_report_json = run.admission_report_json;
  r->launch_labels = r->workload->labels;
  r->launch_labels["namespace"] = r->workload->namespace_;
  r->launch_labels["workload"] = r->workload->name;
  r->launch_env = inherited_env;
  r->launch_env["RSL_RUN_ID"] = run.id;
  r->launch_env["RSL_WORKLOAD_ID"] = v.id;
  size_t n = r->workload->pipeline.steps.size();
  r->slots.resize(n);
  r->min_cpu_request = INT64_MAX;
  for (size_t i = 0; i < n; ++i) {
    const spec::Step& s = r->workload->pipeline.steps[i];
    StepSlot& slot = r->slots[i];
    slot.record.run_id = run.id;
    slot.record.name = s.name;
    slot.record.index = static_cast<int>(i);
    if (!s.when.empty()) {
      auto e = expr::Expr::Parse(s.when);
      if (e.ok()) slot.when = *e;
    }
    int64_t cpu = s.effective.cpu_millis.value_or(0);
    r->min_cpu_request = std::min(r->min_cpu_request, cpu > 0 ? cpu : default_cpu_millis);
  }
  if (n == 0) r->min_cpu_request = 0;
  return r;
}

}  // namespace rsl::engine
