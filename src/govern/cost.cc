#include "govern/cost.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "govern/k8s_objects.h"
#include "spec/workload.h"
#include "spec/yaml_load.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

constexpr double kMsPerHour = 3600.0 * 1000;
constexpr double kBytesPerGiB = 1024.0 * 1024 * 1024;
//! The label keys cost reports group by (SPEC.md metadata.labels).
const std::vector<std::string>& GroupKeys() {
  static const std::vector<std::string> k = {"team",      "project",  "model", "stage",
                                             "namespace", "workload", "run"};
  return k;
}

}  // namespace

const std::vector<std::string>& GovernMigrations() {
  static const std::vector<std::string> m = {
      R"(CREATE TABLE govern_step_costs(
           id INTEGER PRIMARY KEY,
           ended_at_ms INTEGER NOT NULL,
           run_id TEXT NOT NULL, workload_id TEXT NOT NULL, workload TEXT NOT NULL,
           namespace TEXT NOT NULL, step TEXT NOT NULL, attempt INTEGER NOT NULL,
           labels_json TEXT NOT NULL, pricing TEXT NOT NULL, exit_kind TEXT NOT NULL,
           currency TEXT NOT NULL, metrics_json TEXT NOT NULL,
           device_model TEXT NOT NULL, gpus REAL NOT NULL, hours REAL NOT NULL,
           cpu_cores REAL NOT NULL, memory_gib REAL NOT NULL,
           gpu_cost REAL NOT NULL, cpu_cost REAL NOT NULL, memory_cost REAL NOT NULL,
           total_cost REAL NOT NULL);
         CREATE INDEX govern_step_costs_ended ON govern_step_costs(ended_at_ms);)",
      R"(CREATE TABLE govern_policies(
           name TEXT PRIMARY KEY, source TEXT NOT NULL, yaml TEXT NOT NULL,
           applied_at_ms INTEGER NOT NULL);
         CREATE TABLE govern_policy_actions(
           id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, run_id TEXT NOT NULL,
           step TEXT NOT NULL, attempt INTEGER NOT NULL, rule TEXT NOT NULL,
           action TEXT NOT NULL, detail TEXT NOT NULL);)",
      // A run's cost (describe, the console) reads its records by run.
      R"(CREATE INDEX govern_step_costs_run ON govern_step_costs(run_id);)",
      // One record per attempt. A recovered engine may see an attempt's exit again: with the
      // transition log (store/log_store.cc) a cost can reach SQLite in an earlier transaction
      // than the turn that ended its step, and that turn can be lost in a crash before it
      // was acknowledged; the second record of the same attempt is then ignored.
      R"(DELETE FROM govern_step_costs WHERE id NOT IN
           (SELECT MIN(id) FROM govern_step_costs GROUP BY run_id, step, attempt);
         CREATE UNIQUE INDEX govern_step_costs_attempt
           ON govern_step_costs(run_id, step, attempt);)",
  };
  return m;
}

Result<StepCost> ComputeStepCost(const StepUsage& u, const PriceTable& prices) {
  StepCost c;
  c.hours = std::max<int64_t>(u.wall_ms, 0) / kMsPerHour;
  double used_cores = u.wall_ms > 0 ? static_cast<double>(u.cpu_used_ms) / u.wall_ms : 0;
  c.cpu_cores = std::max(u.cpu_request_millis / 1000.0, used_cores);
  c.memory_gib = std::max(u.memory_request_bytes, u.peak_memory_bytes) / kBytesPerGiB;
  c.gpus = static_cast<double>(u.gpus);
  c.device_model = prices.MatchDevice(u.device_model);
  if (c.device_model.empty()) c.device_model = kDefaultDevice;
  if (u.gpus > 0) {
    auto p = prices.DeviceRateFor(c.device_model, u.pricing);
    if (!p.ok()) return p.error();
    c.gpu_pricing = p->kind;
    c.gpu_cost = c.gpus * c.hours * p->price;
  }
  c.cpu_cost = c.cpu_cores * c.hours * prices.CpuPrice(u.pricing);
  c.memory_cost = c.memory_gib * c.hours * prices.MemoryPrice(u.pricing);
  c.total = c.gpu_cost + c.cpu_cost + c.memory_cost;
  return c;
}

namespace {

// The columns Record writes and List reads, in this order.
constexpr char kCostCols[] =
    "ended_at_ms, run_id, workload_id, workload, namespace, step, attempt, labels_json,"
    " pricing, exit_kind, currency, metrics_json, device_model, gpus, hours, cpu_cores,"
    " memory_gib, gpu_cost, cpu_cost, memory_cost, total_cost";

CostRecord ReadCostRecord(const Stmt& row) {
  CostRecord r;
  std::string labels_json;
  row.Into(&r.ended_at_ms, &r.run_id, &r.workload_id, &r.workload, &r.namespace_, &r.step,
           &r.attempt, &labels_json, &r.pricing, &r.exit_kind, &r.currency, &r.metrics_json,
           &r.cost.device_model, &r.cost.gpus, &r.cost.hours, &r.cost.cpu_cores, &r.cost.memory_gib,
           &r.cost.gpu_cost, &r.cost.cpu_cost, &r.cost.memory_cost, &r.cost.total);
  json labels = json::parse(labels_json, nullptr, false);
  if (labels.is_object()) {
    for (const auto& [k, v] : labels.items())
      if (v.is_string()) r.labels[k] = v;
  }
  return r;
}

}  // namespace

Result<std::unique_ptr<CostStore>> CostStore::Open(const std::string& state_dir) {
  Result<std::unique_ptr<Db>> db = OpenStateDb(state_dir, "govern", GovernMigrations());
  if (!db.ok()) return db.error();
  return std::unique_ptr<CostStore>(new CostStore(std::make_shared<SharedDb>(std::move(*db))));
}

Result<std::unique_ptr<CostStore>> CostStore::OpenShared(const std::string& state_dir,
                                                         Failed failed) {
  auto db = SharedDb::ForStateDir(state_dir, "govern", GovernMigrations());
  if (!db.ok()) return db.error();
  std::unique_ptr<CostStore> store(new CostStore(std::move(*db)));
  store->failed_ = std::move(failed);
  return store;
}

Status CostStore::Record(const CostRecord& record) {
  // One copy of the record, shared by the insert and its failure report (both may run later,
  // inside the store's next commit).
  auto r = std::make_shared<const CostRecord>(record);
  auto insert = [r](Db* db) {
    json labels = r->labels;
    return db->Run(std::string("INSERT OR IGNORE INTO govern_step_costs(") + kCostCols +
                       ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   r->ended_at_ms, r->run_id, r->workload_id, r->workload, r->namespace_, r->step,
                   r->attempt, labels.dump(), r->pricing, r->exit_kind, r->currency,
                   r->metrics_json, r->cost.device_model, r->cost.gpus, r->cost.hours,
                   r->cost.cpu_cores, r->cost.memory_gib, r->cost.gpu_cost, r->cost.cpu_cost,
                   r->cost.memory_cost, r->cost.total);
  };
  if (failed_) {
    db_->WriteWithNextCommit(std::move(insert),
                             [failed = failed_, r](const Error& e) { failed(*r, e); });
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(db_->mu());
  return insert(db_->db());
}

Result<std::vector<CostRecord>> CostStore::List(int64_t since_ms) {
  std::lock_guard<std::mutex> lock(db_->mu());
  return db_->db()->Rows(
      std::string("SELECT ") + kCostCols +
          " FROM govern_step_costs WHERE ended_at_ms >= ? ORDER BY ended_at_ms, id",
      ReadCostRecord, since_ms);
}

Result<std::vector<CostRecord>> CostStore::ListRun(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(db_->mu());
  return db_->db()->Rows(std::string("SELECT ") + kCostCols +
                             " FROM govern_step_costs WHERE run_id = ? ORDER BY ended_at_ms, id",
                         ReadCostRecord, run_id);
}

Result<std::vector<CostGroup>> GroupCosts(const std::vector<CostRecord>& records,
                                          const std::string& by) {
  const auto& keys = GroupKeys();
  if (std::find(keys.begin(), keys.end(), by) == keys.end()) {
    std::string near = ClosestMatch(by, keys);
    return Error(codes::kInvalidArgument, "cannot group by " + Quote(by))
        .Path("--by")
        .Value(by)
        .Hint(near.empty() ? "use one of " + Join(keys, ", ")
                           : "did you mean " + Quote(near) + "?");
  }
  std::map<std::string, CostGroup> groups;
  for (const auto& r : records) {
    std::string key;
    if (by == "namespace")
      key = r.namespace_;
    else if (by == "workload")
      key = r.workload;
    else if (by == "run")
      key = r.run_id;
    else if (r.labels.count(by))
      key = r.labels.at(by);
    if (key.empty()) key = "<none>";
    CostGroup& g = groups[key];
    g.key = key;
    g.steps++;
    g.gpu_hours += r.cost.gpus * r.cost.hours;
    g.cpu_core_hours += r.cost.cpu_cores * r.cost.hours;
    g.memory_gib_hours += r.cost.memory_gib * r.cost.hours;
    g.gpu_cost += r.cost.gpu_cost;
    g.cpu_cost += r.cost.cpu_cost;
    g.memory_cost += r.cost.memory_cost;
    g.total += r.cost.total;
  }
  std::vector<CostGroup> out;
  for (auto& [k, g] : groups) out.push_back(g);
  std::stable_sort(out.begin(), out.end(),
                   [](const CostGroup& a, const CostGroup& b) { return a.total > b.total; });
  return out;
}

std::vector<MetricCostRow> CostPerMetric(const std::vector<CostRecord>& records,
                                         const std::string& metric, bool lower_is_better) {
  struct Run {
    std::string workload, run_id;
    int64_t first_ms = 0;
    double cost = 0;
    bool has_metric = false;
    double metric = 0;
  };
  std::map<std::string, Run> runs;  // run_id -> run
  for (const auto& r : records) {
    Run& run = runs[r.run_id];
    if (run.run_id.empty()) {
      run.run_id = r.run_id;
      run.workload = r.workload;
      run.first_ms = r.ended_at_ms;
    }
    run.cost += r.cost.total;
    json m = json::parse(r.metrics_json, nullptr, false);
    // The last step that reports the metric decides (usually the evaluation step).
    if (m.is_object() && m.contains(metric) && m[metric].is_number()) {
      run.has_metric = true;
      run.metric = m[metric].get<double>();
    }
  }
  std::map<std::string, std::vector<Run>> by_workload;
  for (auto& [id, run] : runs) by_workload[run.workload].push_back(run);
  std::vector<MetricCostRow> out;
  for (auto& [w, rs] : by_workload) {
    std::stable_sort(rs.begin(), rs.end(),
                     [](const Run& a, const Run& b) { return a.first_ms < b.first_ms; });
    const Run* prev = nullptr;
    for (const auto& run : rs) {
      if (!run.has_metric) continue;
      MetricCostRow row;
      row.workload = w;
      row.run_id = run.run_id;
      row.run_cost = run.cost;
      row.metric = run.metric;
      if (prev) {
        row.has_previous = true;
        row.previous_run_id = prev->run_id;
        row.previous_metric = prev->metric;
        double delta = lower_is_better ? prev->metric - run.metric : run.metric - prev->metric;
        if (delta > 0) {
          row.improved = true;
          row.cost_per_hundredth = run.cost / (delta / 0.01);
        }
      }
      out.push_back(row);
      prev = &run;
    }
  }
  return out;
}

static Result<Strategy> ReadStrategyImpl(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  auto loaded = spec::LoadYaml(*text, path);
  if (!loaded.ok()) return loaded.error();
  YAML::Node root = *loaded;
  Strategy s;
  s.file = path;
  if (!root.IsMap() || !root["metadata"] || !root["metadata"]["name"]) {
    return Error(codes::kSpecInvalid, "metadata.name is required")
        .At(SourcePos{path, 1, 1})
        .Path("metadata.name")
        .Hint("cost compare reads AIWorkload files");
  }
  s.name = root["metadata"]["name"].as<std::string>();
  auto ann = root["metadata"]["annotations"];
  if (ann && ann.IsMap()) {
    if (ann[kPricingAnnotation]) s.pricing = ann[kPricingAnnotation].as<std::string>();
    if (ann[kDeviceAnnotation]) s.device_model = ann[kDeviceAnnotation].as<std::string>();
  }
  auto read = [&](const YAML::Node& res, const std::string& where, Strategy* out) -> Status {
    if (!res || !res.IsMap()) return Status::Ok();
    auto pos = [&](const YAML::Node& n) {
      return SourcePos{path, n.Mark().line + 1, n.Mark().column + 1};
    };
    if (res["cpu"]) {
      Result<long double> v = ParseQuantity(res["cpu"].Scalar());
      if (!v.ok()) return Error(v.error()).At(pos(res["cpu"])).Path(where + ".cpu");
      out->cpu_cores = static_cast<double>(*v);
    }
    if (res["memory"]) {
      Result<long double> v = ParseQuantity(res["memory"].Scalar());
      if (!v.ok()) return Error(v.error()).At(pos(res["memory"])).Path(where + ".memory");
      out->memory_gib = static_cast<double>(*v) / kBytesPerGiB;
    }
    if (res["gpu"]) {
      const YAML::Node g = res["gpu"];
      const YAML::Node count = g.IsMap() ? g["count"] : g;
      if (count && count.IsScalar()) {
        Result<long double> v = ParseQuantity(count.Scalar());
        if (!v.ok()) return Error(v.error()).At(pos(count)).Path(where + ".gpu");
        out->gpus = static_cast<int64_t>(*v);
      }
      if (g.IsMap()) {
        for (const char* key : {"capability", "capabilities", "model"}) {
          const YAML::Node caps = g[key];
          if (caps && caps.IsSequence()) {
            for (const auto& c : caps) {
              if (out->device_model.empty()) out->device_model = c.as<std::string>();
            }
          } else if (caps && caps.IsScalar() && out->device_model.empty()) {
            out->device_model = caps.as<std::string>();
          }
        }
      }
    }
    return Status::Ok();
  };
  auto spec = root["spec"];
  if (spec && spec.IsMap()) {
    Strategy base = s;
    RSL_RETURN_IF_ERROR(read(spec["resources"], "spec.resources", &base));
    s.cpu_cores = base.cpu_cores;
    s.memory_gib = base.memory_gib;
    s.gpus = base.gpus;
    if (s.device_model.empty()) s.device_model = base.device_model;
    auto steps = spec["pipeline"] ? spec["pipeline"]["steps"] : YAML::Node();
    if (steps && steps.IsSequence()) {
      size_t i = 0;
      for (const auto& step : steps) {
        Strategy st = base;
        RSL_RETURN_IF_ERROR(read(step["resources"], spec::StepPath(i++) + ".resources", &st));
        // The widest step decides what the strategy holds per hour.
        s.cpu_cores = std::max(s.cpu_cores, st.cpu_cores);
        s.memory_gib = std::max(s.memory_gib, st.memory_gib);
        s.gpus = std::max(s.gpus, st.gpus);
        if (s.device_model.empty()) s.device_model = st.device_model;
      }
    }
  }
  return s;
}

Result<StrategyCost> PriceStrategy(const Strategy& s, double hours, const PriceTable& prices) {
  StrategyCost c;
  c.strategy = s;
  c.hours = hours;
  double gpu = 0;
  if (s.gpus > 0) {
    auto p = prices.DeviceRateFor(s.device_model, s.pricing);
    if (!p.ok()) {
      Error e = p.error();
      e.message = s.file + ": " + e.message;
      return e;
    }
    c.gpu_pricing = p->kind;
    gpu = static_cast<double>(s.gpus) * p->price;
  }
  c.hourly =
      gpu + s.cpu_cores * prices.CpuPrice(s.pricing) + s.memory_gib * prices.MemoryPrice(s.pricing);
  c.total = c.hourly * hours;
  return c;
}

Result<int64_t> ParseSince(const std::string& text) {
  auto bad = [&]() {
    return Error(codes::kInvalidArgument, "invalid duration " + Quote(text))
        .Path("--since")
        .Value(text)
        .Hint("write e.g. 7d, 12h or 30m");
  };
  if (text.size() < 2) return bad();
  char unit = text.back();
  std::string num = text.substr(0, text.size() - 1);
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (!end || *end != '\0' || !(v >= 0)) return bad();
  double ms = 0;
  switch (unit) {
    case 'd':
      ms = v * 24 * 3600 * 1000;
      break;
    case 'h':
      ms = v * 3600 * 1000;
      break;
    case 'm':
      ms = v * 60 * 1000;
      break;
    case 's':
      ms = v * 1000;
      break;
    default:
      return bad();
  }
  return static_cast<int64_t>(ms);
}

Result<Strategy> ReadStrategy(const std::string& path) {
  try {
    return ReadStrategyImpl(path);
  } catch (const YAML::Exception& e) {
    return Error(codes::kSpecInvalid, "unexpected value: " + e.msg)
        .At(SourcePos{path, e.mark.line + 1, e.mark.column + 1})
        .Hint("metadata and spec.resources must have the AIWorkload shape");
  }
}

}  // namespace rsl::govern
