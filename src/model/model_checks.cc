#include "model/model_checks.h"

#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "model/dependencies.h"
#include "model/fingerprint.h"
#include "model/signature.h"
#include "spec/canonical.h"

namespace rsl::model {
namespace {

using nlohmann::json;

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

using spec::StepPath;

// Several errors of one kind become one: the first one's place, every message.
Error Combine(const Errors& errors) {
  Error first = errors.front();
  if (errors.size() == 1) return first;
  std::vector<std::string> parts;
  for (const auto& e : errors) {
    std::string where = e.pos.ToString();
    parts.push_back((where.empty() || where == first.pos.file ? "" : where + ": ") + e.message);
  }
  first.message = Join(parts, "; ");
  return first;
}

std::string Dirname(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void PrependPath(std::map<std::string, std::string>* env, const std::string& var,
                 const std::vector<std::string>& dirs, const std::string& fallback) {
  if (dirs.empty()) return;
  std::string joined = Join(dirs, ":");
  auto it = env->find(var);
  std::string rest = it != env->end() ? it->second : fallback;
  (*env)[var] = rest.empty() ? joined : joined + ":" + rest;
}

// A step without a command runs its image's entrypoint: one of the two must exist.
Status CheckRunnable(const spec::Step& step, const Environment& env) {
  if (!step.command.empty() || !env.entrypoint.empty()) return Status::Ok();
  return Error(codes::kSpecInvalid, "step " + Quote(step.name) + " has no command and image " +
                                        Quote(step.image) + " has no entrypoint")
      .Hint("add command: [...] to the step, or register the image with --entrypoint");
}

std::string SignatureJson(const spec::ModelSpec& model) {
  auto tensors = [](const std::vector<spec::TensorSpec>& list) {
    json out = json::array();
    for (const auto& t : list) {
      json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
      if (t.range) j["constraints"] = {{"range", {t.range->first, t.range->second}}};
      out.push_back(j);
    }
    return out;
  };
  return json{{"inputs", tensors(model.inputs)}, {"outputs", tensors(model.outputs)}}.dump();
}

}  // namespace

bool IsPythonCommand(const std::string& argv0) {
  static const std::regex re(R"(python(3(\.[0-9]+)?)?)");
  return std::regex_match(argv0, re);
}

std::vector<size_t> ModelSteps(const spec::Workload& w,
                               const std::map<std::string, Inspection>& environments) {
  std::vector<size_t> declaring, holding, all;
  for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
    const auto& step = w.pipeline.steps[i];
    if (step.image.empty()) continue;
    all.push_back(i);
    if (!step.outputs.empty()) declaring.push_back(i);
    auto it = environments.find(step.image);
    if (w.model && it != environments.end() &&
        CountPresent(w.model->dependencies, it->second) > 0) {
      holding.push_back(i);
    }
  }
  if (!declaring.empty()) return declaring;
  if (!holding.empty()) return holding;
  return all;
}

Status AdmitEnvironments(const spec::Workload& w, ModelStores* stores,
                         EnvironmentAdmission* report) {
  auto reg = stores->registry();
  if (!reg.ok()) return reg.status();

  // 1. Every image is registered.
  std::map<std::string, Environment> envs;
  json env_report = json::array();
  for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
    const auto& step = w.pipeline.steps[i];
    if (step.image.empty() || envs.count(step.image)) continue;
    auto env = (*reg)->Get(step.image);
    if (!env.ok()) {
      Error e = env.error();
      e.message = "step " + Quote(step.name) + ": " + e.message;
      e.Path(StepPath(i) + ".image").At(w.PosOf(StepPath(i) + ".image"));
      report->event_reason = "ImagePullBackOff";
      report->event_message = e.message;
      return e;
    }
    envs.emplace(step.image, std::move(env).value());
  }
  // ... and every step without a command has an entrypoint to run.
  for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
    const auto& step = w.pipeline.steps[i];
    if (step.image.empty()) continue;
    Status runnable = CheckRunnable(step, envs.at(step.image));
    if (!runnable.ok()) {
      Error e = runnable.error();
      e.Path(StepPath(i) + ".command").At(w.PosOf(StepPath(i)));
      report->event_reason = "CreateContainerConfigError";
      report->event_message = e.message;
      return e;
    }
  }

  // 2. Declared outputs agree with the signature.
  Errors contradictions = CheckDeclaredOutputs(w);
  if (!contradictions.empty()) {
    Error e = Combine(contradictions);
    report->event_reason = "OutputSchemaMismatch";
    report->event_message = e.message;
    return e;
  }

  // 3. Dependencies, against each environment as it is now.
  std::map<std::string, Inspection> live;
  std::map<std::string, Inspection> by_location;  // images sharing an interpreter: once
  for (const auto& [image, env] : envs) {
    std::string location = env.kind + ":" + (env.kind == "root" ? env.root : env.python);
    auto cached = by_location.find(location);
    Result<Inspection> ins = cached != by_location.end() ? Result<Inspection>(cached->second)
                                                         : EnvRegistry::InspectNow(env);
    if (ins.ok()) by_location.emplace(location, *ins);
    if (!ins.ok()) {
      Error e(codes::kImageNotFound,
              "image " + Quote(image) + " cannot be inspected: " + ins.error().message);
      e.Value(image).Hint("re-register it: seedctl env register " + image + " --python PATH");
      report->event_reason = "ImagePullBackOff";
      report->event_message = e.message;
      return e;
    }
    env_report.push_back({{"image", image},
                          {"kind", env.kind},
                          {"digest", ins->digest},
                          {"registeredDigest", env.inspection.digest},
                          {"packages", ins->packages.size()}});
    live.emplace(image, std::move(ins).value());
  }
  json checked = json::array();
  size_t pins = 0;
  if (w.model && !w.model->dependencies.empty()) {
    pins = w.model->dependencies.size();
    std::vector<std::string> problems;
    for (size_t i : ModelSteps(w, live)) {
      const auto& step = w.pipeline.steps[i];
      checked.push_back(step.name);
      auto diffs = DependencyDifferences(w.model->dependencies, live.at(step.image));
      if (diffs.empty()) continue;
      problems.push_back("step " + Quote(step.name) + " (image " + Quote(step.image) +
                         "): " + Join(diffs, "; "));
    }
    if (!problems.empty()) {
      Error e(codes::kModelDependencyMismatch, Join(problems, "; "));
      e.Path("spec.model.dependencies").At(w.PosOf("spec.model.dependencies"));
      e.Hint("install the pinned versions and re-register the image, or change the pins");
      report->event_reason = "ModelDependencyMismatch";
      report->event_message = e.message;
      report->report_json = json{{"environments", env_report}, {"dependencySteps", checked}}.dump();
      return e;
    }
  }
  report->report_json = json{{"environments", env_report}, {"dependencySteps", checked}}.dump();
  // A workload that names no image and pins nothing has nothing to report here.
  if (envs.empty() && pins == 0) return Status::Ok();
  report->event_message =
      std::to_string(envs.size()) + " image(s) registered" +
      (pins > 0 ? "; " + std::to_string(pins) + " pinned dependencies hold in " +
                      std::to_string(checked.size()) + " step(s)"
                : "");
  return Status::Ok();
}

namespace {

// REQUIRES: the caller holds the stores' mutex.
template <typename T>
Result<T*> OpenOnce(const std::string& state_dir, std::unique_ptr<T>* slot) {
  if (!*slot) {
    auto opened = T::Open(state_dir);
    if (!opened.ok()) return opened.error();
    *slot = std::move(opened).value();
  }
  return slot->get();
}

}  // namespace

Result<EnvRegistry*> ModelStores::registry() {
  std::lock_guard<std::mutex> lock(mu_);
  return OpenOnce(state_dir_, &registry_);
}

Result<ArtifactStore*> ModelStores::artifacts() {
  std::lock_guard<std::mutex> lock(mu_);
  return OpenOnce(state_dir_, &artifacts_);
}

Status ResolveImage(const spec::Step& step, ModelStores* stores, std::vector<std::string>* argv,
                    std::map<std::string, std::string>* launch_env) {
  if (step.image.empty()) return Status::Ok();
  auto reg = stores->registry();
  if (!reg.ok()) return reg.status();
  auto env = (*reg)->Get(step.image);
  if (!env.ok()) return env.status();
  if (argv->empty()) {
    RSL_RETURN_IF_ERROR(CheckRunnable(step, *env));
    *argv = env->entrypoint;
    argv->insert(argv->end(), step.args.begin(), step.args.end());
  }
  std::vector<std::string> path_dirs;
  std::string interpreter;
  if (env->kind == "python") {
    interpreter = env->python;
    if (interpreter.find('/') != std::string::npos) path_dirs.push_back(Dirname(interpreter));
  } else {
    interpreter = env->inspection.interpreter;
    for (const char* bin : {"/usr/local/bin", "/usr/bin", "/bin"}) {
      if (IsDirectory(env->root + bin)) path_dirs.push_back(env->root + bin);
    }
    PrependPath(launch_env, "PYTHONPATH", env->inspection.search_path, "");
  }
  if (!interpreter.empty() && IsPythonCommand((*argv)[0])) (*argv)[0] = interpreter;
  PrependPath(launch_env, "PATH", path_dirs, kDefaultPath);
  // The check ran without the user site directory; the step must not see it either.
  (*launch_env)["PYTHONNOUSERSITE"] = "1";
  (*launch_env)["RSL_IMAGE"] = step.image;
  return Status::Ok();
}

Status CheckModelOutput(const spec::Workload& w, const spec::Step& step, const AttemptRef& attempt,
                        ModelStores* stores, const EmitEvent& emit) {
  if (!w.model) return Status::Ok();
  const spec::ModelSpec& model = *w.model;
  auto Emit = [&emit](const std::string& reason, const std::string& message) {
    if (emit) emit(reason, message);
  };

  OutputCheck check = CheckOutputDir(model, attempt.staging_dir);
  if (!check.errors.empty()) return Combine(check.errors);

  auto files = FindModelFiles(attempt.staging_dir, &model);
  if (!files.ok()) return files.status();
  if (files->empty()) return Status::Ok();
  auto fp = ComputeFingerprint(attempt.staging_dir, *files);
  if (!fp.ok()) return fp.status();
  if (!model.build_fingerprint.empty() && ToLower(model.build_fingerprint) != fp->digest) {
    Error e(codes::kModelFingerprintMismatch,
            "step " + Quote(step.name) + " produced a model with fingerprint " + fp->digest +
                ", buildFingerprint is " + model.build_fingerprint + " (" +
                std::to_string(fp->files.size()) + " file(s): " + Join(*files, ", ") + ")");
    e.Path("spec.model.buildFingerprint").At(w.PosOf("spec.model.buildFingerprint"));
    e.Value(fp->digest);
    e.Hint("the build is not reproducible; if the change is intended, pin buildFingerprint: \"" +
           fp->digest + "\"");
    Emit("ModelFingerprintMismatch", e.message);
    return e;
  }

  // Recorded as staged: committed or discarded with the run (FinishModelArtifacts).
  ModelArtifact a;
  a.name = w.name;
  a.namespace_ = w.namespace_;
  a.version = model.version;
  a.framework = model.framework;
  for (const auto& d : model.dependencies) a.dependencies.push_back(d.ToString());
  a.signature_json = SignatureJson(model);
  a.fingerprint = fp->digest;
  a.build_fingerprint = model.build_fingerprint;
  a.files = fp->files;
  a.uri = DirToUri(attempt.staging_dir);
  a.state = kArtifactStaged;
  a.step = step.name;
  a.run_id = attempt.run_id;
  a.workload_id = attempt.workload_id;
  a.spec_digest = spec::SpecDigest(w);
  a.image = step.image;
  if (!step.image.empty()) {
    auto reg = stores->registry();
    if (reg.ok()) {
      auto env = (*reg)->Get(step.image);
      if (env.ok()) {
        auto ins = EnvRegistry::InspectNow(*env);
        a.environment_digest = ins.ok() ? ins->digest : env->inspection.digest;
      }
    }
  }
  a.input_descriptors_json = attempt.input_descriptors_json;
  if (a.input_descriptors_json.empty() && w.data.input) {
    // Not measured (no admission report): what the spec says about the input.
    a.input_descriptors_json.push_back(json{
        {"uri", w.data.input->uri},
        {"format", w.data.input->format},
        {"schema",
         w.data.input->schema_text}}.dump());
  }
  auto store = stores->artifacts();
  if (!store.ok()) return store.status();
  auto id = (*store)->Record(a);
  if (!id.ok()) return id.status();
  Emit("ModelRecorded",
       "model " + w.name + ":" + model.version + " fingerprint " + fp->digest + " (" +
           std::to_string(fp->files.size()) + " file(s))" +
           (model.build_fingerprint.empty() ? "; pin it with spec.model.buildFingerprint"
                                            : "; matches buildFingerprint"));
  return Status::Ok();
}

void FinishModelArtifacts(const std::string& run_id, const std::string& committed_uri,
                          ModelStores* stores) {
  auto store = stores->artifacts();
  if (!store.ok()) return;
  if (!committed_uri.empty()) {
    (void)(*store)->Commit(run_id, DirToUri(committed_uri));
  } else {
    (void)(*store)->Discard(run_id);
  }
}
}  // namespace rsl::model
