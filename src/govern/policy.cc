#include "govern/policy.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "base/sqlite.h"
#include "base/strings.h"
#include "govern/cost.h"
#include "spec/yaml_load.h"

namespace rsl::govern {

using nlohmann::json;

namespace {

// Percent values above this are read as percentages (gpu_util: 85 -> 0.85).
constexpr double kPercentThreshold = 1.0;

SourcePos PosOf(const std::string& file, const YAML::Node& n) {
  return SourcePos{file, n.Mark().line + 1, n.Mark().column + 1};
}

// The file position of column `col` (1-based) of a scalar that starts at `start`: quoted
// scalars begin one character later. Approximate for folded/escaped scalars.
SourcePos ColumnIn(const std::string& yaml, SourcePos start, int col) {
  if (col <= 0 || start.line <= 0) return start;
  size_t line_begin = 0;
  for (int l = 1; l < start.line && line_begin != std::string::npos; ++l) {
    line_begin = yaml.find('\n', line_begin);
    if (line_begin != std::string::npos) ++line_begin;
  }
  if (line_begin == std::string::npos) return start;
  size_t at = line_begin + static_cast<size_t>(start.column - 1);
  bool quoted = at < yaml.size() && (yaml[at] == '"' || yaml[at] == '\'');
  start.column += (quoted ? 1 : 0) + col - 1;
  return start;
}

Result<double> ParseSeconds(const std::string& text) {
  Result<int64_t> ms = ParseSince(text);
  if (!ms.ok()) return ms.error();
  return *ms / 1000.0;
}

class SnapshotContext : public expr::Context {
 public:
  SnapshotContext(const std::map<std::string, double>& snap,
                  const std::map<std::string, double>& latest)
      : snap_(snap), latest_(latest) {}
  std::optional<expr::Value> Lookup(const expr::Reference& ref) const override {
    const std::map<std::string, double>* m = nullptr;
    std::string key;
    if (ref.parts.size() == 1) {
      m = &snap_;
      key = ref.parts[0];
    } else if (ref.parts.size() == 2 && ref.parts[0] == "metrics") {
      m = &latest_;
      key = ref.parts[1];
    }
    if (!m) return std::nullopt;
    auto it = m->find(key);
    if (it == m->end()) return std::nullopt;
    expr::Value v;
    v.v = it->second;
    return v;
  }

 private:
  const std::map<std::string, double>& snap_;
  const std::map<std::string, double>& latest_;
};

Result<PolicyAction> ParseAction(const std::string& raw, const Policy& p, bool keep_outputs) {
  std::string text(Trim(raw));
  PolicyAction a;
  a.text = text;
  static const std::regex kScale(R"(scale_down(?:_to_(\d+)_(?:node|nodes|replica|replicas))?)");
  std::smatch m;
  if (text == "stop" || text == "stop_early") {
    a.kind = PolicyAction::Kind::kStop;
    a.as_success = keep_outputs;
    return a;
  }
  if (text == "stop_as_success" || text == "stop_keep_outputs") {
    a.kind = PolicyAction::Kind::kStop;
    a.as_success = true;
    return a;
  }
  if (std::regex_match(text, m, kScale)) {
    a.kind = PolicyAction::Kind::kScaleDown;
    a.replicas = m[1].matched ? std::stoll(m[1].str()) : 1;
    return a;
  }
  if (StartsWith(text, "notify_")) {
    a.kind = PolicyAction::Kind::kNotify;
    a.webhook = text.substr(7);
    if (!p.webhooks.count(a.webhook)) {
      std::vector<std::string> names;
      for (const auto& [n, w] : p.webhooks) names.push_back(n);
      std::string near = ClosestMatch(a.webhook, names);
      return Error(codes::kSpecInvalid, "action " + Quote(text) + " names no webhook in `notify`")
          .Value(text)
          .Hint(near.empty() ? "declare notify: {" + a.webhook + ": {url: ...}}"
                             : "did you mean notify_" + near + "?");
    }
    return a;
  }
  std::string near = ClosestMatch(text, {"stop", "stop_as_success", "scale_down_to_1_node"});
  return Error(codes::kSpecInvalid, "unknown action " + Quote(text))
      .Value(text)
      .Hint(near.empty()
                ? "use stop, stop_as_success, scale_down_to_<N>_node(s) or notify_<webhook>"
                : "did you mean " + Quote(near) + "?");
}

}  // namespace

const std::vector<std::string>& PolicyMetricNames() {
  static const std::vector<std::string> k = {
      "loss_plateau_duration", "gpu_util_avg", "loss", "best_loss", "gpu_util", "step_elapsed"};
  return k;
}

static PolicyParse ParsePolicyImpl(const std::string& yaml, const std::string& file) {
  PolicyParse out;
  Policy& p = out.policy;
  p.source = file;
  std::string stem =
      file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1);
  if (stem.find('.') != std::string::npos) stem = stem.substr(0, stem.find('.'));
  p.name = stem;
  auto loaded = spec::LoadYaml(yaml, file);
  if (!loaded.ok()) {
    out.errors.push_back(loaded.error());
    return out;
  }
  YAML::Node root = *loaded;
  if (!root.IsMap()) {
    out.errors.push_back(Error(codes::kSpecInvalid, "a policy is a mapping with `rules`")
                             .At(SourcePos{file, 1, 1})
                             .Hint("see docs/govern.md"));
    return out;
  }
  static const std::vector<std::string> kTop = {"apiVersion", "kind",   "metadata",
                                                "rules",      "notify", "metrics"};
  for (const auto& kv : root) {
    std::string k = kv.first.as<std::string>();
    if (std::find(kTop.begin(), kTop.end(), k) == kTop.end()) {
      std::string near = ClosestMatch(k, kTop);
      out.errors.push_back(Error(codes::kSpecInvalid, "unknown field " + Quote(k))
                               .At(PosOf(file, kv.first))
                               .Path(k)
                               .Hint(near.empty() ? "known: " + Join(kTop, ", ")
                                                  : "did you mean " + Quote(near) + "?"));
    }
  }
  if (root["metadata"] && root["metadata"]["name"])
    p.name = root["metadata"]["name"].as<std::string>();
  if (root["notify"]) {
    if (!root["notify"].IsMap()) {
      out.errors.push_back(Error(codes::kSpecInvalid, "notify must map names to webhooks")
                               .At(PosOf(file, root["notify"]))
                               .Path("notify"));
    } else {
      for (const auto& kv : root["notify"]) {
        std::string name = kv.first.as<std::string>();
        Webhook w;
        if (kv.second.IsScalar()) {
          w.url = kv.second.as<std::string>();
        } else if (kv.second.IsMap() && kv.second["url"]) {
          w.url = kv.second["url"].as<std::string>();
          if (kv.second["retries"])
            w.retries = kv.second["retries"].as<int>(kDefaultWebhookRetries);
        }
        if (!StartsWith(w.url, "http://") && !StartsWith(w.url, "https://")) {
          out.errors.push_back(Error(codes::kSpecInvalid, "webhook url must be http:// or https://")
                                   .At(PosOf(file, kv.second))
                                   .Path("notify." + name + ".url")
                                   .Value(w.url)
                                   .Hint("e.g. {url: \"https://hooks.example/finance\"}"));
        }
        p.webhooks[name] = w;
      }
    }
  }
  if (root["metrics"] && root["metrics"].IsMap()) {
    const YAML::Node m = root["metrics"];
    if (m["lossTolerance"]) {
      try {
        p.loss_tolerance = m["lossTolerance"].as<double>();
      } catch (const YAML::Exception&) {
        out.errors.push_back(Error(codes::kSpecInvalid, "lossTolerance must be a number")
                                 .At(PosOf(file, m["lossTolerance"]))
                                 .Path("metrics.lossTolerance"));
      }
    }
    if (m["gpuUtilWindow"]) {
      Result<double> s = ParseSeconds(m["gpuUtilWindow"].as<std::string>());
      if (!s.ok()) {
        out.errors.push_back(Error(codes::kSpecInvalid, "gpuUtilWindow must be a duration")
                                 .At(PosOf(file, m["gpuUtilWindow"]))
                                 .Path("metrics.gpuUtilWindow")
                                 .Value(m["gpuUtilWindow"].as<std::string>())
                                 .Hint("e.g. 5m"));
      } else {
        p.gpu_util_window_s = *s;
      }
    }
  }
  const YAML::Node rules = root["rules"];
  if (!rules || !rules.IsSequence() || rules.size() == 0) {
    out.errors.push_back(Error(codes::kSpecInvalid, "a policy needs at least one rule")
                             .At(rules ? PosOf(file, rules) : SourcePos{file, 1, 1})
                             .Path("rules")
                             .Hint("rules: [{name: ..., condition: ..., action: ...}]"));
    return out;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < rules.size(); ++i) {
    const YAML::Node r = rules[i];
    std::string path = "rules[" + std::to_string(i) + "]";
    PolicyRule rule;
    rule.pos = PosOf(file, r);
    if (!r.IsMap()) {
      out.errors.push_back(
          Error(codes::kSpecInvalid, "a rule is a mapping").At(rule.pos).Path(path));
      continue;
    }
    for (const char* req : {"name", "condition", "action"}) {
      if (!r[req]) {
        out.errors.push_back(Error(codes::kSpecInvalid, std::string("missing ") + req)
                                 .At(rule.pos)
                                 .Path(path + "." + req)
                                 .Hint("every rule has name, condition and action"));
      }
    }
    if (!r["name"] || !r["condition"] || !r["action"]) continue;
    rule.name = r["name"].as<std::string>();
    if (!names.insert(rule.name).second) {
      out.errors.push_back(Error(codes::kSpecInvalid, "duplicate rule name " + Quote(rule.name))
                               .At(PosOf(file, r["name"]))
                               .Path(path + ".name")
                               .Value(rule.name));
    }
    rule.condition = r["condition"].as<std::string>();
    SourcePos cpos = PosOf(file, r["condition"]);
    Result<expr::Expr> e = expr::Expr::Parse(rule.condition);
    if (!e.ok()) {
      Error err = e.error();
      err.At(ColumnIn(yaml, cpos, e.error().pos.column)).Path(path + ".condition");
      out.errors.push_back(err);
    } else {
      for (const auto& ref : e->references()) {
        bool ok = (ref.parts.size() == 1 &&
                   std::find(PolicyMetricNames().begin(), PolicyMetricNames().end(),
                             ref.parts[0]) != PolicyMetricNames().end()) ||
                  (ref.parts.size() == 2 && ref.parts[0] == "metrics");
        if (!ok) {
          std::string near = ClosestMatch(ref.ToString(), PolicyMetricNames());
          out.errors.push_back(
              Error(codes::kExpressionInvalid, "unknown metric " + Quote(ref.ToString()))
                  .At(ColumnIn(yaml, cpos, ref.column))
                  .Path(path + ".condition")
                  .Value(ref.ToString())
                  .Hint(near.empty()
                            ? "use " + Join(PolicyMetricNames(), ", ") + " or metrics.<key>"
                            : "did you mean " + Quote(near) + "?"));
        }
      }
      rule.expr = *e;
    }
    bool keep = r["keepOutputs"] && r["keepOutputs"].as<bool>(false);
    std::vector<std::string> texts;
    if (r["action"].IsSequence()) {
      for (const auto& a : r["action"]) texts.push_back(a.as<std::string>());
    } else {
      for (const auto& part : Split(r["action"].as<std::string>(), ';')) {
        if (!Trim(part).empty()) texts.push_back(std::string(part));
      }
    }
    if (texts.empty()) {
      out.errors.push_back(Error(codes::kSpecInvalid, "no action")
                               .At(PosOf(file, r["action"]))
                               .Path(path + ".action"));
    }
    for (const auto& t : texts) {
      Result<PolicyAction> a = ParseAction(t, p, keep);
      if (!a.ok()) {
        Error err = a.error();
        err.At(PosOf(file, r["action"])).Path(path + ".action");
        out.errors.push_back(err);
      } else {
        rule.actions.push_back(*a);
      }
    }
    p.rules.push_back(std::move(rule));
  }
  SortByPosition(&out.errors);
  return out;
}

void MetricsWindow::Feed(const std::string& line, double now_s) {
  if (Trim(line).empty()) return;
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    ++malformed_;
    return;
  }
  double t = now_s;
  for (const char* k : {"ts", "time", "timestamp"}) {
    if (j.contains(k) && j[k].is_number()) t = j[k].get<double>();
  }
  if (!first_s_) first_s_ = t;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number()) latest_[k] = v.get<double>();
  }
  if (j.contains("loss") && j["loss"].is_number()) {
    double loss = j["loss"].get<double>();
    if (!best_loss_ || loss < *best_loss_ - tolerance_) {
      best_loss_ = loss;
      last_improvement_s_ = t;
    }
  }
  for (const char* k : {"gpu_util", "gpu_utilization"}) {
    if (j.contains(k) && j[k].is_number()) {
      double u = j[k].get<double>();
      if (u > kPercentThreshold) u /= 100;
      gpu_.push_back({t, u});
    }
  }
}

std::map<std::string, double> MetricsWindow::Snapshot(double now_s) const {
  std::map<std::string, double> s;
  if (best_loss_) {
    s["best_loss"] = *best_loss_;
    s["loss_plateau_duration"] = std::max(0.0, now_s - last_improvement_s_);
  }
  if (latest_.count("loss")) s["loss"] = latest_.at("loss");
  double sum = 0;
  int n = 0;
  for (const auto& [t, u] : gpu_) {
    if (t >= now_s - window_s_) {
      sum += u;
      ++n;
    }
  }
  if (n > 0) s["gpu_util_avg"] = sum / n;
  if (!gpu_.empty()) s["gpu_util"] = gpu_.back().second;
  if (first_s_) s["step_elapsed"] = std::max(0.0, now_s - *first_s_);
  return s;
}

bool ConditionHolds(const PolicyRule& rule, const std::map<std::string, double>& snapshot,
                    const std::map<std::string, double>& latest, std::string* why) {
  if (!rule.expr) return false;
  SnapshotContext ctx(snapshot, latest);
  Result<bool> r = rule.expr->EvalBool(ctx);
  if (!r.ok()) {
    if (why) *why = r.error().message;
    return false;
  }
  return *r;
}

Status StorePolicy(const std::string& state_dir, const Policy& policy, const std::string& yaml) {
  Result<std::unique_ptr<CostStore>> store = CostStore::Open(state_dir);
  if (!store.ok()) return store.error();
  Result<Stmt> st = (*store)->db()->Prepare(
      "INSERT INTO govern_policies(name, source, yaml, applied_at_ms) VALUES(?,?,?,?)"
      " ON CONFLICT(name) DO UPDATE SET source=excluded.source, yaml=excluded.yaml,"
      " applied_at_ms=excluded.applied_at_ms");
  if (!st.ok()) return st.error();
  st->Bind(1, policy.name).Bind(2, policy.source).Bind(3, yaml).Bind(4, Env::Default()->NowMs());
  return st->Run();
}

Result<std::vector<StoredPolicy>> ListPolicies(const std::string& state_dir) {
  Result<std::unique_ptr<CostStore>> store = CostStore::Open(state_dir);
  if (!store.ok()) return store.error();
  return ListPolicies(store->get());
}

Result<std::vector<StoredPolicy>> ListPolicies(CostStore* store) {
  std::lock_guard<std::mutex> lock(store->mu());
  Result<Stmt> st = store->db()->Prepare(
      "SELECT name, source, yaml, applied_at_ms FROM govern_policies ORDER BY name");
  if (!st.ok()) return st.error();
  std::vector<StoredPolicy> out;
  while (st->Step()) out.push_back({st->Text(0), st->Text(1), st->Text(2), st->Int(3)});
  if (!st->status().ok()) return st->status().error();
  return out;
}

Result<std::vector<Policy>> LoadPolicies(const std::string& state_dir) {
  Result<std::vector<StoredPolicy>> stored = ListPolicies(state_dir);
  if (!stored.ok()) return stored.error();
  return ParseStoredPolicies(*stored);
}

Result<std::vector<Policy>> ParseStoredPolicies(const std::vector<StoredPolicy>& stored) {
  std::vector<Policy> out;
  for (const auto& s : stored) {
    PolicyParse p = ParsePolicy(s.yaml, s.source);
    if (!p.ok()) return p.errors.front();
    p.policy.name = s.name;
    out.push_back(std::move(p.policy));
  }
  return out;
}

PolicyParse ParsePolicy(const std::string& yaml, const std::string& file) {
  try {
    return ParsePolicyImpl(yaml, file);
  } catch (const YAML::Exception& e) {  // a node of an unexpected kind (map for a string)
    PolicyParse out;
    out.errors.push_back(Error(codes::kSpecInvalid, "unexpected value: " + e.msg)
                             .At(SourcePos{file, e.mark.line + 1, e.mark.column + 1})
                             .Hint("rules have string name, condition and action"));
    return out;
  }
}

}  // namespace rsl::govern
