#include "model/model_checks.h"

#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "image/reference.h"
#include "model/dependencies.h"
#include "model/fingerprint.h"
#include "model/image_inspect.h"
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

std::string ArtifactSignatureJson(const spec::ModelSpec& model) {
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

Status AddPullSecrets(const spec::Workload& w,
                      const std::vector<std::map<std::string, std::string>>& secrets,
                      ImageAccess* access) {
  for (size_t i = 0; i < secrets.size() && i < w.image_pull_secrets.size(); ++i) {
    std::vector<std::string> missing;
    for (const char* key : {"REGISTRY", "USERNAME", "PASSWORD"}) {
      if (secrets[i].count(key) == 0) missing.push_back(key);
    }
    std::string path = "spec.imagePullSecrets[" + std::to_string(i) + "]";
    const std::string& name = w.image_pull_secrets[i];
    if (!missing.empty()) {
      return Error(codes::kInvalidArgument, "secret " + Quote(name) +
                                                " is not registry credentials: it has no " +
                                                Join(missing, ", "))
          .Path(path)
          .At(w.PosOf(path))
          .Hint("seedctl secret create " + name +
                " --from-literal REGISTRY=HOST[:PORT] --from-literal USERNAME=USER "
                "--from-literal PASSWORD=... -n " +
                w.namespace_);
    }
    access->credentials[secrets[i].at("REGISTRY")] =
        image::Credentials{secrets[i].at("USERNAME"), secrets[i].at("PASSWORD")};
  }
  return Status::Ok();
}

std::map<std::string, RecordedImage> RecordedImages(const std::string& report_json) {
  std::map<std::string, RecordedImage> out;
  auto j = json::parse(report_json, nullptr, false);
  if (!j.is_object()) return out;
  if (j.contains("model") && j["model"].is_object()) j = j["model"];
  if (!j.contains("environments") || !j["environments"].is_array()) return out;
  for (const auto& e : j["environments"]) {
    if (!e.is_object()) continue;
    RecordedImage r;
    r.kind = e.value("kind", std::string());
    r.digest = e.value("digest", std::string());
    r.pinned = e.value("pinned", std::string());
    out[e.value("image", std::string())] = r;
  }
  return out;
}

namespace {

// One image of a workload, as admission found it.
struct AdmittedImage {
  bool registry = false;
  Environment env;                //!< a host environment
  image::ResolvedImage resolved;  //!< a registry image
};

// Resolves an image that is not a registered host environment against its registry (the
// pinned digest when there is one) and reads its package metadata.
Result<Inspection> ResolveFromRegistry(const std::string& ref_text, const ImageAccess& access,
                                       const RecordedImage* pinned, image::ResolvedImage* out) {
  image::ParseOptions parse;
  parse.insecure_registries = access.insecure_registries;
  auto ref = image::ParseReference(ref_text, parse);
  if (!ref.ok()) return ref.error();
  if (pinned != nullptr && !pinned->digest.empty()) ref->digest = pinned->digest;
  image::RegistryOptions options;
  options.credentials = access.credentials;
  options.connect_timeout_ms = access.connect_timeout_ms;
  image::RegistryClient client(options);
  auto resolved = client.Resolve(*ref);
  if (!resolved.ok()) return resolved.error();
  *out = *resolved;
  return InspectImage(&client, *resolved, access.cache_dir);
}

}  // namespace

namespace {

// --backend k8s: the cluster pulls the images; each reference must parse.
Status AdmitClusterImages(const spec::Workload& w, EnvironmentAdmission* report) {
  json env_report = json::array();
  std::set<std::string> seen;
  for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
    const auto& step = w.pipeline.steps[i];
    if (step.image.empty() || !seen.insert(step.image).second) continue;
    auto ref = image::ParseReference(step.image);
    if (!ref.ok()) {
      Error e = ref.error();
      e.message = "step " + Quote(step.name) + ": " + e.message;
      e.Path(StepPath(i) + ".image").At(w.PosOf(StepPath(i) + ".image"));
      report->event_reason = "InvalidImageName";
      report->event_message = e.message;
      return e;
    }
    env_report.push_back({{"image", step.image}, {"kind", "cluster"}, {"reference", ref->Name()}});
  }
  Errors contradictions = CheckDeclaredOutputs(w);
  if (!contradictions.empty()) {
    Error e = Combine(contradictions);
    report->event_reason = "OutputSchemaMismatch";
    report->event_message = e.message;
    return e;
  }
  report->report_json = json{{"environments", env_report}}.dump();
  if (!seen.empty()) {
    report->event_message =
        std::to_string(seen.size()) + " image reference(s) checked; the cluster pulls them";
  }
  return Status::Ok();
}

}  // namespace

Status AdmitEnvironments(const spec::Workload& w, ModelStores* stores, EnvironmentAdmission* report,
                         const ImageAccess& access,
                         const std::map<std::string, RecordedImage>& pinned) {
  if (access.cluster_images) return AdmitClusterImages(w, report);
  auto reg = stores->registry();
  if (!reg.ok()) return reg.status();

  // 1. Every image is a registered host environment or in its registry, as it is now.
  std::map<std::string, AdmittedImage> images;
  std::map<std::string, Inspection> live;
  json env_report = json::array();
  auto refuse = [&](Error e, size_t i, const std::string& field, const std::string& reason) {
    e.message = "step " + Quote(w.pipeline.steps[i].name) + ": " + e.message;
    e.Path(StepPath(i) + field).At(w.PosOf(StepPath(i) + (field == ".image" ? field : "")));
    report->event_reason = reason;
    report->event_message = e.message;
    report->report_json = json{{"environments", env_report}}.dump();
    return e;
  };
  for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
    const auto& step = w.pipeline.steps[i];
    if (step.image.empty() || images.count(step.image)) continue;
    AdmittedImage admitted;
    auto env = (*reg)->Get(step.image);
    if (env.ok()) {
      admitted.env = std::move(env).value();
      images.emplace(step.image, std::move(admitted));
      continue;
    }
    if (env.error().code != codes::kImageNotFound) return env.status();
    std::string host_hint = env.error().hint;  // "did you mean ...?" or how to register
    auto p = pinned.find(step.image);
    const RecordedImage* pin =
        p != pinned.end() && p->second.kind == "registry" ? &p->second : nullptr;
    auto ins = ResolveFromRegistry(step.image, access, pin, &admitted.resolved);
    if (!ins.ok()) {
      Error e = ins.error();
      if (e.code != codes::kImageNotFound) return refuse(e, i, ".image", "ImagePullBackOff");
      // Neither kind applies: say both, the registry's answer first.
      e.message += " (and it is not a registered host environment)";
      std::string hint = StartsWith(host_hint, "did you mean")
                             ? host_hint + " (a registered host environment)"
                             : "register a host environment: seedctl env register " + step.image +
                                   " --python PATH";
      e.Hint(e.hint.empty() ? hint : e.hint + "; or " + hint);
      return refuse(e, i, ".image", "ImagePullBackOff");
    }
    admitted.registry = true;
    live.emplace(step.image, std::move(ins).value());
    images.emplace(step.image, std::move(admitted));
  }
  // ... and every step without a command has an entrypoint to run.
  for (size_t i = 0; i < w.pipeline.steps.size(); ++i) {
    const auto& step = w.pipeline.steps[i];
    if (step.image.empty()) continue;
    const AdmittedImage& admitted = images.at(step.image);
    Status runnable = Status::Ok();
    if (admitted.registry && step.command.empty()) {
      runnable =
          Error(codes::kSpecInvalid,
                "step " + Quote(step.name) + " has no command, and image " + Quote(step.image) +
                    " comes from a registry: its entrypoint runs only in a container, "
                    "and steps do not run in containers yet")
              .Hint(
                  "add command: [...] to the step, or register a host environment "
                  "with --entrypoint");
    } else if (!admitted.registry) {
      runnable = CheckRunnable(step, admitted.env);
    }
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
  std::map<std::string, Inspection> by_location;  // images sharing an interpreter: once
  std::vector<std::string> resolved_notes;
  size_t host_count = 0;
  for (const auto& [image_name, admitted] : images) {
    if (admitted.registry) {
      const image::ResolvedImage& r = admitted.resolved;
      std::string plain =
          r.reference.Name() + (r.reference.tag.empty() ? "" : ":" + r.reference.tag);
      std::string pinned_ref = r.reference.Name() + "@" + r.digest;
      json entry = {{"image", image_name},
                    {"kind", "registry"},
                    {"reference", plain},
                    {"digest", r.digest},
                    {"pinned", pinned_ref},
                    {"platform", r.platform},
                    {"packages", live.at(image_name).packages.size()}};
      if (!r.index_digest.empty()) entry["indexDigest"] = r.index_digest;
      env_report.push_back(entry);
      resolved_notes.push_back(image_name + " -> " + pinned_ref);
      continue;
    }
    ++host_count;
    const Environment& env = admitted.env;
    std::string location = env.kind + ":" + (env.kind == "root" ? env.root : env.python);
    auto cached = by_location.find(location);
    Result<Inspection> ins = cached != by_location.end() ? Result<Inspection>(cached->second)
                                                         : EnvRegistry::InspectNow(env);
    if (ins.ok()) by_location.emplace(location, *ins);
    if (!ins.ok()) {
      Error e(codes::kImageNotFound,
              "image " + Quote(image_name) + " cannot be inspected: " + ins.error().message);
      e.Value(image_name)
          .Hint("re-register it: seedctl env register " + image_name + " --python PATH");
      report->event_reason = "ImagePullBackOff";
      report->event_message = e.message;
      return e;
    }
    env_report.push_back({{"image", image_name},
                          {"kind", env.kind},
                          {"digest", ins->digest},
                          {"registeredDigest", env.inspection.digest},
                          {"packages", ins->packages.size()}});
    live.emplace(image_name, std::move(ins).value());
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
      const AdmittedImage& admitted = images.at(step.image);
      problems.push_back("step " + Quote(step.name) + " (image " + Quote(step.image) +
                         (admitted.registry ? " " + admitted.resolved.digest : "") +
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
  if (images.empty() && pins == 0) return Status::Ok();
  std::vector<std::string> notes;
  if (host_count > 0 || resolved_notes.empty()) {
    notes.push_back(std::to_string(host_count) + " image(s) registered");
  }
  for (const auto& n : resolved_notes) notes.push_back(n);
  report->event_message =
      Join(notes, "; ") + (pins > 0
                               ? "; " + std::to_string(pins) + " pinned dependencies hold in " +
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
                    std::map<std::string, std::string>* launch_env,
                    const std::map<std::string, RecordedImage>& recorded) {
  if (step.image.empty()) return Status::Ok();
  auto rec = recorded.find(step.image);
  if (rec != recorded.end() && rec->second.kind == "cluster") {
    (*launch_env)["RSL_IMAGE"] = step.image;  // the cluster pulls it (--backend k8s)
    return Status::Ok();
  }
  if (rec != recorded.end() && rec->second.kind == "registry") {
    // What admission resolved and checked, not what the tag names now.
    if (argv->empty()) {
      return Error(codes::kSpecInvalid, "step " + Quote(step.name) + " has no command, and image " +
                                            Quote(step.image) + " comes from a registry")
          .Hint("add command: [...] to the step");
    }
    (*launch_env)["RSL_IMAGE"] = step.image;
    (*launch_env)["RSL_IMAGE_DIGEST"] = rec->second.digest;
    return Status::Ok();
  }
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
  a.signature_json = ArtifactSignatureJson(model);
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
  if (attempt.image.kind == "registry") {
    a.environment_digest = attempt.image.digest;  // the manifest digest the step ran with
  } else if (!step.image.empty()) {
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
