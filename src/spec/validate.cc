#include "spec/validate.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "base/codes.h"
#include "base/strings.h"
#include "expr/expr.h"
#include "expr/template.h"
#include "spec/names.h"
#include "spec/phase.h"
#include "spec/source_map.h"

namespace rsl::spec {

namespace {

// Reference types for a step's `when`, checked before anything runs: status.<step> is a step
// phase (a closed set), and since a step is evaluated only after all its dependencies
// succeeded, every ancestor it may read is SUCCEEDED by then. Metrics are whatever JSON the
// step wrote: unknown until the run.
class WhenTypes : public expr::TypeContext {
 public:
  WhenTypes() {
    status_.kind = expr::RefType::Kind::kString;
    for (int p = 0; p <= static_cast<int>(StepPhase::kCancelled); ++p) {
      status_.values.push_back(Name(static_cast<StepPhase>(p)));
    }
    status_.noun = "phase";
    status_.possible = {Name(StepPhase::kSucceeded)};
    status_.why = "a step runs only after all its ancestors succeeded";
  }
  expr::RefType TypeOf(const expr::Reference& ref) const override {
    return ref.parts[0] == "status" ? status_ : expr::RefType{};
  }

 private:
  expr::RefType status_;
};

// Reference types for a postProcess hook's `when` and body: the hook runs after its step
// ended, when any step may be in any phase. run.* are strings, step.exitCode and
// step.attempt numbers, step.phase a phase.
class HookTypes : public expr::TypeContext {
 public:
  HookTypes() {
    phase_.kind = expr::RefType::Kind::kString;
    for (int p = 0; p <= static_cast<int>(StepPhase::kCancelled); ++p) {
      phase_.values.push_back(Name(static_cast<StepPhase>(p)));
    }
    phase_.noun = "phase";
  }
  expr::RefType TypeOf(const expr::Reference& ref) const override {
    const auto& p = ref.parts;
    if (p[0] == "status" || (p[0] == "step" && p[1] == "phase")) return phase_;
    expr::RefType t;
    if (p[0] == "run" || (p[0] == "step" && (p[1] == "name" || p[1] == "failureCode"))) {
      t.kind = expr::RefType::Kind::kString;
    } else if (p[0] == "step") {
      t.kind = expr::RefType::Kind::kNumber;
    }
    return t;
  }

 private:
  expr::RefType phase_;
};

//! What a hook can read about the run and its own step (docs/spec.md "postProcess").
const std::vector<std::string> kHookRunFields = {"id", "name", "namespace", "workloadId"};
const std::vector<std::string> kHookStepFields = {"name", "phase", "exitCode", "attempt",
                                                  "failureCode"};

class Validator {
 public:
  Validator(const std::string& text, ParseResult* r) : text_(text), r_(r), w_(r->workload) {}

  void Run() {
    Steps();
    Conditions();
    Resources();
    DataContract();
  }

 private:
  Error& Fail(const std::string& path, const std::string& message, const std::string& hint,
              const std::string& code = codes::kSpecInvalid) {
    Error e(code, message);
    e.path = path;
    e.pos = w_.PosOf(path);
    e.hint = hint;
    r_->errors.push_back(std::move(e));
    return r_->errors.back();
  }

  void Steps() {
    auto& steps = w_.pipeline.steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].name.empty()) continue;
      auto [it, inserted] = index_.emplace(steps[i].name, i);
      if (!inserted) {
        Fail(StepPath(i) + ".name", "duplicate step name " + Quote(steps[i].name),
             "step names must be unique; the first is steps[" + std::to_string(it->second) + "]")
            .value = steps[i].name;
      }
      names_.push_back(steps[i].name);
    }
    deps_.assign(steps.size(), {});
    for (size_t i = 0; i < steps.size(); ++i) {
      std::unordered_set<std::string> seen;
      for (size_t d = 0; d < steps[i].depends_on.size(); ++d) {
        const std::string& dep = steps[i].depends_on[d];
        std::string path = StepPath(i) + ".dependsOn[" + std::to_string(d) + "]";
        if (!seen.insert(dep).second) {
          Fail(path, "step " + Quote(dep) + " is listed twice", "drop the duplicate").value = dep;
          continue;
        }
        if (dep == steps[i].name) {
          Fail(path, "step " + Quote(dep) + " depends on itself",
               "remove it from its own dependsOn")
              .value = dep;
          has_cycle_ = true;
          continue;
        }
        auto it = index_.find(dep);
        if (it == index_.end()) {
          broken_.insert(i);
          std::string close = DidYouMean(dep, names_);
          Fail(path, "unknown step " + Quote(dep),
               close.empty() ? "steps: " + Join(names_, ", ") : "did you mean '" + close + "'?")
              .value = dep;
          continue;
        }
        deps_[i].push_back(it->second);
      }
    }
    Cycles();
  }

  // Iterative depth-first search (a 10,000-step chain must not overflow the stack); every
  // back edge closes a cycle, reported once as `a -> b -> a` at the step that closes it.
  void Cycles() {
    const size_t n = deps_.size();
    enum Color : char { kWhite, kGrey, kBlack };
    std::vector<Color> color(n, kWhite);
    std::vector<size_t> on_path_at(n, 0);
    std::vector<size_t> path;
    std::vector<std::pair<size_t, size_t>> stack;  // (node, next dependency index)
    for (size_t start = 0; start < n; ++start) {
      if (color[start] != kWhite) continue;
      stack.push_back({start, 0});
      color[start] = kGrey;
      on_path_at[start] = path.size();
      path.push_back(start);
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (next < deps_[node].size()) {
          size_t dep = deps_[node][next++];
          if (color[dep] == kWhite) {
            color[dep] = kGrey;
            on_path_at[dep] = path.size();
            path.push_back(dep);
            stack.push_back({dep, 0});
          } else if (color[dep] == kGrey) {
            ReportCycle(path, on_path_at[dep], node, dep);
          }
        } else {
          color[node] = kBlack;
          path.pop_back();
          stack.pop_back();
        }
      }
    }
  }

  void ReportCycle(const std::vector<size_t>& path, size_t from, size_t node, size_t dep) {
    has_cycle_ = true;
    // path[from..] runs along dependsOn edges from `dep` to `node` (each entry depends on the
    // next), and node depends on dep: print `node -> dep -> ... -> node`.
    std::vector<std::string> names = {w_.pipeline.steps[node].name};
    for (size_t i = from; i < path.size(); ++i) names.push_back(w_.pipeline.steps[path[i]].name);
    size_t d = 0;
    const auto& deps = w_.pipeline.steps[node].depends_on;
    while (d < deps.size() && deps[d] != w_.pipeline.steps[dep].name) ++d;
    Fail(StepPath(node) + ".dependsOn[" + std::to_string(d) + "]",
         "dependency cycle: " + Join(names, " -> "), "remove one of these dependencies")
        .value = w_.pipeline.steps[dep].name;
  }

  // Breadth-first from `step` up its dependencies: conditions usually read a near ancestor,
  // which BFS reaches first. `visited_` is stamped with a generation so no query allocates
  // or clears a 10,000-entry buffer.
  bool IsAncestor(size_t ancestor, size_t step) {
    for (size_t d : deps_[step]) {
      if (d == ancestor) return true;
    }
    if (visited_.size() != deps_.size()) visited_.assign(deps_.size(), 0);
    ++generation_;
    queue_.assign(deps_[step].begin(), deps_[step].end());
    for (size_t head = 0; head < queue_.size(); ++head) {
      size_t s = queue_[head];
      if (s == ancestor) return true;
      if (visited_[s] == generation_) continue;
      visited_[s] = generation_;
      for (size_t d : deps_[s]) {
        if (visited_[d] != generation_) queue_.push_back(d);
      }
    }
    return false;
  }

  void Conditions() {
    auto& steps = w_.pipeline.steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      for (size_t k = 0; k < steps[i].post_process.size(); ++k) HookExpressions(i, k);
      if (steps[i].when.empty()) continue;
      const std::string path = StepPath(i) + ".when";
      auto e = expr::Expr::Parse(steps[i].when);
      if (!e.ok()) {
        Error& err = Fail(path, e.error().message, e.error().hint, codes::kExpressionInvalid);
        err.value = steps[i].when;
        err.pos = MapInnerPos(text_, w_.PosOf(path), 1, e.error().pos.column);
        continue;
      }
      size_t before = r_->errors.size();
      for (const auto& ref : e->references()) CheckReference(i, ref, path);
      if (r_->errors.size() != before) continue;  // types of unknown references are unknown
      Status typed = e->Check(when_types_);
      if (!typed.ok()) {
        Error& err =
            Fail(path, typed.error().message, typed.error().hint, codes::kExpressionInvalid);
        err.value = steps[i].when;
        err.pos = MapInnerPos(text_, w_.PosOf(path), 1, typed.error().pos.column);
      }
    }
  }

  // A hook's `when` (a condition) and its body's {{ }} expressions (any value).
  void HookExpressions(size_t i, size_t k) {
    const PostProcess& hook = w_.pipeline.steps[i].post_process[k];
    const std::string base = StepPath(i) + ".postProcess[" + std::to_string(k) + "]";
    if (!hook.when.empty()) {
      const std::string path = base + ".when";
      auto e = expr::Expr::Parse(hook.when);
      if (!e.ok()) {
        Error& err = Fail(path, e.error().message, e.error().hint, codes::kExpressionInvalid);
        err.value = hook.when;
        err.pos = MapInnerPos(text_, w_.PosOf(path), 1, e.error().pos.column);
      } else {
        size_t before = r_->errors.size();
        for (const auto& ref : e->references()) CheckReference(i, ref, path, 0, true);
        if (r_->errors.size() == before) {
          Status typed = e->Check(hook_types_);
          if (!typed.ok()) {
            Error& err =
                Fail(path, typed.error().message, typed.error().hint, codes::kExpressionInvalid);
            err.value = hook.when;
            err.pos = MapInnerPos(text_, w_.PosOf(path), 1, typed.error().pos.column);
          }
        }
      }
    }
    if (hook.body.empty()) return;
    const std::string path = base + ".webhook.body";
    auto t = expr::Template::Parse(hook.body);
    if (!t.ok()) {
      Error& err =
          Fail(path, "body: " + t.error().message, t.error().hint, codes::kExpressionInvalid);
      err.pos = MapInnerPos(text_, w_.PosOf(path), 1, t.error().pos.column);
      return;
    }
    for (const auto& part : t->parts()) {
      if (!part.expr) continue;
      for (const auto& ref : part.expr->references()) {
        CheckReference(i, ref, path, part.column - 1, true);
      }
    }
  }

  // `offset`: the columns before the expression in its field (a body's {{ }}); `hook`: the
  // references of postProcess (any step, run.*, step.*) rather than of a step's `when`.
  void CheckReference(size_t step, const expr::Reference& ref, const std::string& path,
                      int offset = 0, bool hook = false) {
    auto fail = [&](const std::string& message, const std::string& hint) {
      Error& err = Fail(path, message, hint, codes::kExpressionInvalid);
      err.value = ref.ToString();
      err.pos = MapInnerPos(text_, w_.PosOf(path), 1, offset + ref.column);
    };
    const auto& p = ref.parts;
    bool previous = p[0] == "previous" && p.size() == 5 && p[1] == "output" && p[3] == "metrics";
    if (hook && (p[0] == "run" || p[0] == "step")) {
      const auto& fields = p[0] == "run" ? kHookRunFields : kHookStepFields;
      if (p.size() != 2 || std::find(fields.begin(), fields.end(), p[1]) == fields.end()) {
        std::string close = p.size() == 2 ? DidYouMean(p[1], fields) : "";
        fail("unknown reference " + ref.ToString(),
             close.empty() ? p[0] + ".<" + Join(fields, "|") + ">"
                           : "did you mean '" + p[0] + "." + close + "'?");
      }
      return;
    }
    bool status = p[0] == "status" && p.size() == 2;
    bool output = p[0] == "output" && p.size() == 4 && p[2] == "metrics";
    if (!status && !output && !previous) {
      fail("unknown reference " + ref.ToString(),
           std::string("references are status.<step>, output.<step>.metrics.<key> and "
                       "previous.output.<step>.metrics.<key>") +
               (hook ? ", run.<id|name|namespace|workloadId> and step.<" +
                           Join(kHookStepFields, "|") + ">"
                     : ""));
      return;
    }
    const std::string& name = previous ? p[2] : p[1];
    auto it = index_.find(name);
    if (it == index_.end()) {
      std::string close = DidYouMean(name, names_);
      fail("reference to unknown step " + Quote(name),
           close.empty() ? "steps: " + Join(names_, ", ") : "did you mean '" + close + "'?");
      return;
    }
    // A previous version's results and a hook's view (after its step ended) may name any step.
    if (previous || hook) return;
    const std::string& self = w_.pipeline.steps[step].name;
    if (it->second == step) {
      fail("step " + Quote(self) + " refers to itself",
           "a condition can only read steps that finished before it");
      return;
    }
    // With a broken dependsOn the ancestry is unknown; that error was reported already.
    if (!broken_.count(step) && !IsAncestor(it->second, step)) {
      fail(
          "step " + Quote(name) + " is not an ancestor of " + Quote(self),
          "add " + Quote(name) + " to " + self + "'s dependsOn (directly or through another step)");
    }
  }

  void Resources() {
    auto& steps = w_.pipeline.steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      Step& s = steps[i];
      s.effective = MergeResources(w_.resources, s.resources);
      if (!s.effective.autoscaling) {
        ServingOnly(i);
        continue;
      }
      if (!s.serving && steps.size() == 1) s.serving = true;
      if (s.serving) continue;
      ServingOnly(i);
      std::string path = s.resources.autoscaling ? StepPath(i) + ".resources.autoscaling"
                                                 : "spec.resources.autoscaling";
      Error e(codes::kSpecInvalid, "autoscaling is ignored for batch step " + Quote(s.name));
      e.path = path;
      e.pos = w_.PosOf(path);
      e.hint = "set serving: true on long-running service steps";
      r_->warnings.push_back(std::move(e));
    }
  }

  // port, readinessProbe and readyTimeout mean something for serving steps only.
  void ServingOnly(size_t i) {
    const Step& s = w_.pipeline.steps[i];
    if (s.serving) return;
    for (const char* key : {"port", "readinessProbe", "readyTimeout"}) {
      std::string path = StepPath(i) + "." + key;
      if (!w_.positions.count(path)) continue;
      Error e(codes::kSpecInvalid, std::string(key) + " is only for serving steps, and step " +
                                       Quote(s.name) + " is a batch step");
      e.path = path;
      e.pos = w_.PosOf(path);
      e.hint = "set serving: true on the step, or remove " + std::string(key);
      r_->errors.push_back(std::move(e));
    }
  }

  void DataContract() {
    if (auto& in = w_.data.input) {
      Quality& q = in->quality;
      const std::string qpath = "spec.data.input.quality";
      if (q.unique_key && in->schema && !in->schema->FindPath(*q.unique_key)) {
        std::vector<std::string> fields = in->schema->RecordPaths();
        std::string close = DidYouMean(*q.unique_key, fields);
        Fail(qpath + ".uniqueKey", "uniqueKey " + Quote(*q.unique_key) + " is not a schema field",
             close.empty() ? "fields: " + Join(fields, ", ") : "did you mean '" + close + "'?")
            .value = *q.unique_key;
      } else if (q.uniqueness && !q.unique_key) {
        std::string key = in->schema ? DefaultUniqueKey(*in->schema) : "";
        if (key.empty()) {
          Fail(qpath + ".uniqueness",
               in->schema ? "uniqueness needs a key: no field is named `id` or ends in `_id`"
                          : "uniqueness needs a key, and there is no schema to find one in",
               "set uniqueKey: <field>");
        } else {
          q.unique_key = key;
        }
      }
    }
    if (auto& out = w_.data.output) {
      const std::string opath = "spec.data.output";
      if (out->schema_ref == "input") {
        const auto& in = w_.data.input;
        if (!in || !in->schema) {
          if (!in || in->schema_text.empty()) {
            Fail(opath + ".schemaRef", "schemaRef: input, but data.input has no schema",
                 "declare spec.data.input.schema");
          }
          return;  // a bad input schema was reported already
        }
        ResolveOutput(*in->schema, opath);
      } else if (!out->features.empty()) {
        schema::Schema empty;
        auto record = std::make_shared<schema::Type>();
        record->kind = schema::Kind::kRecord;
        record->name = "output";
        empty.root = record;
        ResolveOutput(empty, opath);
      }
    }
  }

  void ResolveOutput(const schema::Schema& base, const std::string& opath) {
    auto& out = *w_.data.output;
    auto extended = schema::ExtendSchema(base, out.features);
    if (!extended.ok()) {
      std::string path = opath + "." + extended.error().path;
      Fail(path, extended.error().message, extended.error().hint).value = extended.error().value;
      return;
    }
    out.schema = *extended;
  }

  const std::string& text_;
  ParseResult* r_;
  Workload& w_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::string> names_;
  std::vector<std::vector<size_t>> deps_;
  std::unordered_set<size_t> broken_;  // steps with an unknown dependency
  const WhenTypes when_types_;
  const HookTypes hook_types_;
  bool has_cycle_ = false;
  std::vector<uint32_t> visited_;  // IsAncestor: generation that last visited each step
  uint32_t generation_ = 0;
  std::vector<size_t> queue_;
};

}  // namespace

std::string DefaultUniqueKey(const schema::Schema& schema) {
  if (!schema.root) return "";
  for (const auto& f : schema.record().fields) {
    if (f.name == "id" || EndsWith(f.name, "_id")) return f.name;
  }
  return "";
}

void Validate(const std::string& text, ParseResult* result) { Validator(text, result).Run(); }

}  // namespace rsl::spec
