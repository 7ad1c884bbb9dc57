// Building one attempt's LaunchSpec: directories, the complete environment (inherited
// basics, the step's env, envFrom configmaps and secrets, the RSL_* data-passing
// variables), resources and GPU devices, then the BeforeStep hooks.
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "engine/engine_internal.h"
#include "spec/names.h"

namespace rsl::engine {
namespace {

using nlohmann::json;

}  // namespace

std::string RunDir(const std::string& runs_dir, const std::string& run_id) {
  return runs_dir + "/" + run_id;
}
std::string DefaultRunsDir(const std::string& state_dir) {
  std::string state = state_dir;
  while (state.size() > 1 && state.back() == '/') state.pop_back();
  return state + "-runs";
}
std::string RunsDirOf(const EngineOptions& options) {
  if (!options.runs_dir.empty() || options.state_dir.empty()) return options.runs_dir;
  return DefaultRunsDir(options.state_dir);
}
std::string AttemptPath(const std::string& run_dir, const std::string& step, int attempt) {
  return run_dir + "/attempts/" + step + "." + std::to_string(attempt);
}
std::string AttemptLogPath(const std::string& run_dir, const std::string& step, int attempt) {
  return AttemptPath(run_dir, step, attempt) + ".log";
}
std::string AttemptWorkDir(const std::string& run_dir, const std::string& step, int attempt) {
  return run_dir + "/work/" + step + "." + std::to_string(attempt);
}
std::string StagingDir(const std::string& run_dir, const std::string& step, int attempt) {
  if (attempt <= 1) return run_dir + "/staging/" + step;
  return run_dir + "/staging/" + step + "." + std::to_string(attempt);
}
std::string DepEnvName(const std::string& step) { return spec::StepInputVariable(step); }

// Written by hand: one per attempt on the engine's loop thread, where nlohmann's builder
// (a heap node per value) was a fifth of the engine's cost. LaunchFromJson reads it back.
std::string LaunchToJson(const backend::LaunchSpec& s, const LaunchBase& base) {
  std::string out;
  out.reserve(512);
  JsonObjectWriter w(&out);
  // A path under the run's directory is stored after it, under the key with '@' appended.
  // Returns what follows the directory's slash, "" for a path not under it.
  auto under = [&](const std::string& path) -> std::string_view {
    std::string_view dir = base.run_dir;
    if (dir.empty() || path.size() <= dir.size() + 1 || path.compare(0, dir.size(), dir) != 0 ||
        path[dir.size()] != '/') {
      return {};
    }
    return std::string_view(path).substr(dir.size() + 1);
  };
  auto path = [&](const char* k, const char* k_under, const std::string& v) {
    if (v.empty()) return;
    if (std::string_view rest = under(v); !rest.empty()) {
      w.Str(k_under, rest);
    } else {
      w.Str(k, v);
    }
  };
  auto shared = [&](const char* k, const std::string& v, std::string_view b) {
    if (v != b) w.Str(k, v);
  };
  w.Int("v", 2);  // fields left out come from the base
  shared("run_id", s.run_id, base.run_id);
  shared("version_id", s.version_id, base.version_id);
  shared("workload_name", s.workload_name, base.workload_name);
  shared("namespace", s.namespace_, base.namespace_);
  w.Str("step", s.step);
  w.Int("attempt", s.attempt);
  if (s.attempt_id != s.run_id + "/" + s.step + "/" + std::to_string(s.attempt)) {
    w.Str("attempt_id", s.attempt_id);
  }
  w.StrList("argv", s.argv);
  {
    // The environment in three parts: as written in "env" (secrets masked), under the run's
    // directory in "env@", and the run's shared values not at all.
    std::optional<JsonObjectWriter> written;  // "env", opened at its first entry
    auto write = [&](const std::string& name, std::string_view v) {
      if (!written) written.emplace(&w.Key("env"));
      written->Str(name, v);
    };
    std::vector<std::pair<std::string_view, std::string_view>> rel;  // "env@", written after
    for (const auto& [name, v] : s.env) {
      if (!v.empty() &&
          std::find(s.secret_values.begin(), s.secret_values.end(), v) != s.secret_values.end()) {
        write(name, "***");
        continue;
      }
      if (base.env) {
        auto it = base.env->find(name);
        if (it != base.env->end() && it->second == v) continue;
      }
      if (std::string_view rest = under(v); !rest.empty()) {
        rel.emplace_back(name, rest);
      } else {
        write(name, v);
      }
    }
    if (written) written->End();
    if (!rel.empty()) {
      JsonObjectWriter o(&w.Key("env@"));
      for (const auto& [name, rest] : rel) o.Str(name, rest);
      o.End();
    }
    // The shared variables it lacks are named in "unset" (one it has with another value is in
    // env or env@).
    if (base.env) {
      std::vector<std::string> unset;
      for (const auto& [name, v] : *base.env) {
        if (!s.env.count(name)) unset.push_back(name);
      }
      if (!unset.empty()) w.StrList("unset", unset);
    }
  }
  path("workdir", "workdir@", s.workdir);
  if (!s.make_dirs.empty()) {
    std::vector<std::string> rest;
    for (const auto& d : s.make_dirs) {
      if (std::string_view r = under(d); !r.empty()) rest.emplace_back(r);
    }
    if (rest.size() == s.make_dirs.size()) {
      w.StrList("make_dirs@", rest);
    } else {
      w.StrList("make_dirs", s.make_dirs);
    }
  }
  path("log_path", "log_path@", s.log_path);
  path("exit_file", "exit_file@", s.exit_file);
  if (s.cpu_millis) w.Int("cpu_millis", s.cpu_millis);
  if (s.memory_bytes) w.Int("memory_bytes", s.memory_bytes);
  if (s.gpus) w.Int("gpus", s.gpus);
  if (!s.capabilities.empty()) w.StrList("capabilities", s.capabilities);
  if (!s.node.empty()) w.Str("node", s.node);
  if (!base.labels || s.labels != *base.labels) {
    JsonObjectWriter o(&w.Key("labels"));
    for (const auto& [name, v] : s.labels) o.Str(name, v);
    o.End();
  }
  if (s.timeout_ms) w.Int("timeout_ms", *s.timeout_ms);
  if (s.serving) {  // all of it: recovery adopts the replica set with these settings
    const backend::ServingLaunch& sv = *s.serving;
    JsonObjectWriter o(&w.Key("serving"));
    o.Int("target", sv.autoscaling.target_utilization);
    o.Int("min", sv.autoscaling.min_replicas);
    o.Int("max", sv.autoscaling.max_replicas);
    o.Int("scale_down_delay_ms", sv.autoscaling.scale_down_delay_ms);
    o.Str("probe_path", sv.readiness.path);
    if (sv.readiness.port) o.Int("probe_port", *sv.readiness.port);
    o.Int("probe_period_ms", sv.readiness.period_ms);
    o.Int("probe_failures", sv.readiness.failure_threshold);
    if (sv.port) o.Int("port", *sv.port);
    o.Int("ready_timeout_ms", sv.ready_timeout_ms);
    o.End();
  }
  w.End();
  return out;
}

Result<backend::LaunchSpec> LaunchFromJson(const std::string& text, const LaunchBase& base) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Error(codes::kInternal, "garbled launch record");
  backend::LaunchSpec s;
  try {
    // Version 2 leaves out what the run's attempts share; a record without "v" has it all.
    bool based = j.value("v", 1) >= 2;
    const std::string_view none;
    const std::string dir(based ? base.run_dir : none);
    auto str = [&](const char* k, std::string_view dflt) { return j.value(k, std::string(dflt)); };
    auto path = [&](const char* k, const char* k_under) {
      if (based && j.contains(k_under)) return dir + "/" + j[k_under].get<std::string>();
      return j.value(k, std::string());
    };
    s.run_id = str("run_id", based ? base.run_id : none);
    s.version_id = str("version_id", based ? base.version_id : none);
    s.workload_name = str("workload_name", based ? base.workload_name : none);
    s.namespace_ = str("namespace", based ? base.namespace_ : none);
    s.step = j.value("step", "");
    s.attempt = j.value("attempt", 1);
    std::string derived_id = based ? s.run_id + "/" + s.step + "/" + std::to_string(s.attempt) : "";
    s.attempt_id = str("attempt_id", derived_id);
    s.argv = j.value("argv", std::vector<std::string>{});
    if (based && base.env) s.env = *base.env;
    for (auto& [name, v] : j.value("env", std::map<std::string, std::string>{})) {
      s.env[name] = std::move(v);
    }
    if (based) {
      for (const auto& [name, v] : j.value("env@", std::map<std::string, std::string>{})) {
        s.env[name] = dir + "/" + v;
      }
      for (const auto& name : j.value("unset", std::vector<std::string>{})) s.env.erase(name);
    }
    s.workdir = path("workdir", "workdir@");
    s.make_dirs = j.value("make_dirs", std::vector<std::string>{});
    if (based && j.contains("make_dirs@")) {
      for (const auto& d : j["make_dirs@"].get<std::vector<std::string>>()) {
        s.make_dirs.push_back(dir + "/" + d);
      }
    }
    s.log_path = path("log_path", "log_path@");
    s.exit_file = path("exit_file", "exit_file@");
    s.cpu_millis = j.value("cpu_millis", int64_t{0});
    s.memory_bytes = j.value("memory_bytes", int64_t{0});
    s.gpus = j.value("gpus", int64_t{0});
    s.capabilities = j.value("capabilities", std::vector<std::string>{});
    s.node = j.value("node", "");
    if (j.contains("labels") || !based || !base.labels) {
      s.labels = j.value("labels", std::map<std::string, std::string>{});
    } else {
      s.labels = *base.labels;
    }
    if (j.contains("timeout_ms")) s.timeout_ms = j["timeout_ms"].get<int64_t>();
    if (j.contains("serving")) {
      backend::ServingLaunch sv;
      if (const json& o = j["serving"]; o.is_object()) {  // older records: `"serving": 1`
        sv.autoscaling.target_utilization = o.value("target", int64_t{0});
        sv.autoscaling.min_replicas = o.value("min", int64_t{1});
        sv.autoscaling.max_replicas = o.value("max", int64_t{1});
        sv.autoscaling.scale_down_delay_ms = o.value("scale_down_delay_ms", int64_t{300'000});
        sv.readiness.path = o.value("probe_path", "/healthz");
        if (o.contains("probe_port")) sv.readiness.port = o["probe_port"].get<int64_t>();
        sv.readiness.period_ms = o.value("probe_period_ms", int64_t{1'000});
        sv.readiness.failure_threshold = o.value("probe_failures", int64_t{3});
        if (o.contains("port")) sv.port = o["port"].get<int64_t>();
        sv.ready_timeout_ms = o.value("ready_timeout_ms", int64_t{300'000});
      }
      s.serving = sv;
    }
  } catch (const json::exception& e) {
    return Error(codes::kInternal, std::string("garbled launch record: ") + e.what());
  }
  return s;
}

LaunchBase Engine::Impl::LaunchBaseOf(const RunState* r) {
  LaunchBase b;
  b.run_id = r->run.id;
  b.version_id = r->run.workload_id;
  b.workload_name = r->workload->name;
  b.namespace_ = r->workload->namespace_;
  b.run_dir = r->run.run_dir;
  b.labels = &r->launch_labels;
  b.env = &r->launch_env;
  return b;
}

std::string Engine::Impl::OutputDirFor(RunState* r, int i) {
  const std::string& name = r->workload->pipeline.steps[size_t(i)].name;
  if (r->workload->pipeline.atomic) {
    // Its successful attempt's staging (its last attempt: the one PublishStep publishes at
    // the commit); none for a step that did not succeed (skipped, or failed and allowed to).
    const StepState& st = r->plan->state(i);
    return st.phase == spec::StepPhase::kSucceeded ? StagingDir(r->run.run_dir, name, st.attempts)
                                                   : "";
  }
  bool fallback = false;
  return OutputRoot(r, &fallback) + "/" + name;
}

Result<backend::LaunchSpec> Engine::Impl::BuildLaunch(RunState* r, int i, const std::string& node,
                                                      const std::vector<int>& gpus) {
  const spec::Step& step = r->workload->pipeline.steps[size_t(i)];
  const StepState& st = r->plan->state(i);
  backend::LaunchSpec s;
  s.attempt = st.attempts + 1;
  s.attempt_id = r->run.id + "/" + step.name + "/" + std::to_string(s.attempt);
  s.run_id = r->run.id;
  s.version_id = r->run.workload_id;
  s.workload_name = r->workload->name;
  s.namespace_ = r->workload->namespace_;
  s.step = step.name;
  std::string prefix = AttemptPath(r->run.run_dir, step.name, s.attempt);
  s.workdir = AttemptWorkDir(r->run.run_dir, step.name, s.attempt);
  s.log_path = prefix + ".log";
  s.exit_file = prefix + ".exit";
  s.node = node;
  s.argv = step.command;
  s.argv.insert(s.argv.end(), step.args.begin(), step.args.end());
  s.cpu_millis = step.effective.cpu_millis.value_or(0);
  s.memory_bytes = step.effective.memory_bytes.value_or(0);
  if (step.effective.gpu) {
    s.gpus = step.effective.gpu->count;
    s.capabilities = step.effective.gpu->capabilities;
  }
  s.timeout_ms = step.timeout_ms;
  if (step.serving) {
    backend::ServingLaunch sv;
    if (step.effective.autoscaling) sv.autoscaling = *step.effective.autoscaling;
    sv.readiness = step.readiness;
    sv.port = step.port;
    sv.ready_timeout_ms = step.ready_timeout_ms;
    s.serving = sv;
  }
  s.labels = r->launch_labels;
  s.env = inherited_env_;
  for (size_t k = 0; k < step.env_from.size(); ++k) {
    const spec::EnvFrom& ef = step.env_from[k];
    bool secret = ef.kind == spec::EnvFrom::Kind::kSecret;
    auto cm = store_->GetConfigMap(r->workload->namespace_, ef.name, secret);
    if (!cm.ok()) {
      Error e = cm.error();
      return e.Path(spec::StepPath(size_t(i)) + ".envFrom[" + std::to_string(k) + "]");
    }
    for (const auto& [key, value] : cm->data) {
      s.env[key] = value;
      if (secret) s.secret_values.push_back(value);
    }
  }
  if (!step.image.empty()) {
    // The registry logins a backend pulls the image with (admission checked the secrets).
    for (size_t k = 0; k < r->workload->image_pull_secrets.size(); ++k) {
      auto cm = store_->GetConfigMap(r->workload->namespace_, r->workload->image_pull_secrets[k],
                                     /*secret=*/true);
      if (!cm.ok()) {
        Error e = cm.error();
        return e.Path("spec.imagePullSecrets[" + std::to_string(k) + "]");
      }
      auto reg = cm->data.find("REGISTRY");
      auto user = cm->data.find("USERNAME");
      auto pass = cm->data.find("PASSWORD");
      if (reg == cm->data.end() || user == cm->data.end() || pass == cm->data.end()) continue;
      s.pull_credentials[reg->second] = {user->second, pass->second};
      if (!pass->second.empty()) s.secret_values.push_back(pass->second);
    }
  }
  for (const auto& [k, v] : step.env) s.env[k] = v;
  if (r->workload->data.input) {
    const std::string& uri = r->workload->data.input->uri;
    std::string path = LocalPathOf(uri, hooks_.publisher.get());
    s.env["RSL_INPUT"] = path.empty() ? uri : path;
    s.env["RSL_INPUT_URI"] = uri;
  }
  s.env["RSL_OUTPUT"] = StagingDir(r->run.run_dir, step.name, s.attempt);
  for (int d : r->plan->deps(i)) {
    std::string dir = OutputDirFor(r, d);
    s.env[DepEnvName(r->workload->pipeline.steps[size_t(d)].name)] = dir;
    s.read_dirs.push_back(dir);
  }
  // In the working directory: the one place besides its staging an isolated step can write.
  s.env["RSL_METRICS_FILE"] = s.workdir + "/.rsl-metrics.json";
  s.env["RSL_PROGRESS_FILE"] = s.workdir + "/.rsl-progress";
  s.env["RSL_WORKLOAD_ID"] = r->version.id;
  s.env["RSL_RUN_ID"] = r->run.id;
  s.env["RSL_STEP"] = step.name;
  s.env["RSL_ATTEMPT"] = std::to_string(s.attempt);
  if (!gpus.empty()) {
    std::vector<std::string> ids;
    bool declared = false;
    for (int g : gpus) {
      ids.push_back(std::to_string(g));
      const sched::Node* n = ledger_.Find(node);
      if (n != nullptr && size_t(g) < n->gpus.size() && !n->gpus[size_t(g)].probed) declared = true;
    }
    s.env["CUDA_VISIBLE_DEVICES"] = Join(ids, ",");
    if (declared) s.env["RSL_GPUS_DECLARED_NOT_PROBED"] = "1";
  }
  for (const auto& h : hooks_.steps) {
    Status hs = h->BeforeStep(r->info, step, &s);
    if (!hs.ok()) return hs.error();
  }
  s.make_dirs = {s.env.at("RSL_OUTPUT")};  // after the hooks: they may move it
  if (s.argv.empty()) {
    return Error(codes::kSpecInvalid, "step " + Quote(step.name) + " has no command")
        .Path(spec::StepPath(size_t(i)) + ".command")
        .Hint("the " + backend_->name() + " backend has no image entrypoints: add command: [...]");
  }
  return s;
}

}  // namespace rsl::engine
