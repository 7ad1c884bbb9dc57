#include "engine/run_state.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

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

class PlanContext : public expr::Context {
 public:
  explicit PlanContext(const RunPlan* plan) : plan_(plan) {}
  std::optional<expr::Value> Lookup(const expr::Reference& ref) const override {
    const auto& p = ref.parts;
    if (p.size() == 2 && p[0] == "status") {
      int i = plan_->IndexOf(p[1]);
      if (i < 0) return std::nullopt;
      return expr::Value{std::string(spec::Name(plan_->state(i).phase))};
    }
    if (p.size() >= 4 && p[0] == "output" && p[2] == "metrics") {
      int i = plan_->IndexOf(p[1]);
      if (i < 0) return std::nullopt;
      auto j = nlohmann::json::parse(plan_->state(i).metrics_json, nullptr, false);
      for (size_t k = 3; k < p.size(); ++k) {
        if (!j.is_object() || !j.contains(p[k])) return std::nullopt;
        j = j[p[k]];
      }
      return FromJson(j);
    }
    return std::nullopt;
  }

 private:
  const RunPlan* plan_;
};

}  // namespace

RunState::~RunState() {
  if (owner_fd >= 0) close(owner_fd);
}

Result<bool> RunState::EvalWhen(int i) const {
  const auto& e = slots[size_t(i)].when;
  if (!e) return true;
  PlanContext ctx(plan.get());
  return e->EvalBool(ctx);
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

std::unique_ptr<RunState> NewRunState(const spec::Workload& w, const store::WorkloadVersion& v,
                                      const store::Run& run, const std::string& state_dir,
                                      int64_t default_cpu_millis) {
  auto r = std::make_unique<RunState>();
  r->run = run;
  r->version = v;
  r->workload = w;
  r->info.workload_id = v.id;
  r->info.run_id = run.id;
  r->info.state_dir = state_dir;
  r->info.run_dir = run.run_dir;
  r->info.workload = &r->workload;
  r->info.admission_report_json = run.admission_report_json;
  size_t n = w.pipeline.steps.size();
  r->slots.resize(n);
  r->min_cpu_request = INT64_MAX;
  for (size_t i = 0; i < n; ++i) {
    const spec::Step& s = w.pipeline.steps[i];
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
