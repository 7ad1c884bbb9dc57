// seedctl env register|list|inspect|remove, signature check, model list|describe|verify
// (docs/model.md). They work directly on a state directory: --state-dir DIR, else
// $RSL_STATE_DIR, else ~/.local/state/rsl (the one `seedctl run` uses by default).
#include "cli/model_cmd.h"

#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/file.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/table.h"
#include "model/artifact_store.h"
#include "model/env_registry.h"
#include "model/fingerprint.h"
#include "model/signature.h"
#include "spec/parse.h"

namespace rsl::cli {
namespace {

using nlohmann::json;

// Environment digests are shown shortened in tables ("sha256:7a8b9c0d1e2f"); a model's
// fingerprint never is (users copy it into buildFingerprint).
constexpr size_t kShortDigest = 19;

std::string Short(const std::string& digest) {
  return digest.size() > kShortDigest ? digest.substr(0, kShortDigest) : digest;
}

std::string Timestamp(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json EnvJson(const model::Environment& env) {
  json packages = json::array();
  for (const auto& p : env.inspection.packages) {
    packages.push_back({{"name", p.name}, {"version", p.version}, {"kind", p.kind}});
  }
  return {{"image", env.image},
          {"kind", env.kind},
          {"python", env.python},
          {"root", env.root},
          {"entrypoint", env.entrypoint},
          {"interpreter", env.inspection.interpreter},
          {"pythonVersion", env.inspection.python_version},
          {"searchPath", env.inspection.search_path},
          {"digest", env.inspection.digest},
          {"registeredAt", Timestamp(env.registered_at_ms)},
          {"packages", packages}};
}

std::string EnvSummary(const model::Environment& env) {
  std::string out;
  out += "Image:        " + env.image + "\n";
  out += "Kind:         " + env.kind + "\n";
  if (env.kind == "python") out += "Python:       " + env.python + "\n";
  if (env.kind == "root") out += "Root:         " + env.root + "\n";
  if (!env.inspection.interpreter.empty() && env.kind == "root") {
    out += "Interpreter:  " + env.inspection.interpreter + "\n";
  }
  if (!env.inspection.python_version.empty()) {
    out += "Version:      Python " + env.inspection.python_version + "\n";
  }
  if (!env.entrypoint.empty()) out += "Entrypoint:   " + Join(env.entrypoint, " ") + "\n";
  out += "Digest:       " + env.inspection.digest + "\n";
  out += "Registered:   " + Timestamp(env.registered_at_ms) + "\n";
  out += "Search path:\n";
  for (const auto& d : env.inspection.search_path) out += "  " + d + "\n";
  out += "Packages:     " + std::to_string(env.inspection.CountKind("python")) + " Python, " +
         std::to_string(env.inspection.CountKind("dpkg")) + " dpkg\n";
  return out;
}

std::string ArtifactName(const model::ModelArtifact& a) { return a.name + ":" + a.version; }

}  // namespace

void RunEnvRegister(const EnvRegisterFlags& f) {
  auto registry =
      OrFail(model::EnvRegistry::Open(f.state_dir.empty() ? DefaultStateDir() : f.state_dir));
  auto env = OrFail(registry->Register(f.request));
  if (f.output == "json") {
    std::cout << EnvJson(env).dump(2) << "\n";
    return;
  }
  std::cout << "registered " << env.image << ": " << env.inspection.CountKind("python")
            << " Python and " << env.inspection.CountKind("dpkg") << " dpkg packages, digest "
            << env.inspection.digest << "\n";
}

void RunEnvList(const EnvListFlags& f) {
  auto registry =
      OrFail(model::EnvRegistry::Open(f.state_dir.empty() ? DefaultStateDir() : f.state_dir));
  auto envs = OrFail(registry->List());
  if (f.output == "json") {
    json out = json::array();
    for (const auto& e : envs) {
      json j = EnvJson(e);
      j.erase("packages");
      out.push_back(j);
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  bool wide = f.output == "wide";
  Table t(wide ? std::vector<std::string>{"IMAGE", "KIND", "LOCATION", "PYTHON", "PACKAGES",
                                          "DIGEST", "ENTRYPOINT", "REGISTERED"}
               : std::vector<std::string>{"IMAGE", "KIND", "LOCATION", "PACKAGES", "DIGEST"});
  for (const auto& e : envs) {
    std::string location = e.kind == "root" ? e.root : e.python;
    std::string packages = std::to_string(e.inspection.packages.size());
    if (wide) {
      t.AddRow({e.image, e.kind, location, e.inspection.python_version, packages,
                e.inspection.digest, Join(e.entrypoint, " "), Timestamp(e.registered_at_ms)});
    } else {
      t.AddRow({e.image, e.kind, location, packages, Short(e.inspection.digest)});
    }
  }
  if (envs.empty()) {
    std::cout << "No environments registered (seedctl env register IMAGE --python PATH).\n";
    return;
  }
  std::cout << t.Render();
}

void RunEnvInspect(const EnvInspectFlags& f) {
  auto registry =
      OrFail(model::EnvRegistry::Open(f.state_dir.empty() ? DefaultStateDir() : f.state_dir));
  auto env = OrFail(registry->Get(f.image));
  std::vector<std::string> changes;
  if (f.live) {
    auto now = OrFail(model::EnvRegistry::InspectNow(env));
    std::map<std::string, std::string> before, after;
    for (const auto& p : env.inspection.packages) before[p.kind + " " + p.normalized] = p.version;
    for (const auto& p : now.packages) after[p.kind + " " + p.normalized] = p.version;
    for (const auto& [k, v] : before) {
      if (!after.count(k))
        changes.push_back("- " + k + " " + v);
      else if (after[k] != v)
        changes.push_back("~ " + k + " " + v + " -> " + after[k]);
    }
    for (const auto& [k, v] : after) {
      if (!before.count(k)) changes.push_back("+ " + k + " " + v);
    }
    env.inspection = std::move(now);
  }
  if (f.output == "json") {
    json j = EnvJson(env);
    if (f.live) j["changesSinceRegistration"] = changes;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << EnvSummary(env) << "\n";
  Table t({"NAME", "VERSION", "KIND"});
  for (const auto& p : env.inspection.packages) t.AddRow({p.name, p.version, p.kind});
  std::cout << t.Render();
  if (f.live) {
    std::cout << "\nChanges since registration:" << (changes.empty() ? " none" : "") << "\n";
    for (const auto& c : changes) std::cout << "  " << c << "\n";
  }
}

void RunEnvRemove(const EnvRemoveFlags& f) {
  auto registry =
      OrFail(model::EnvRegistry::Open(f.state_dir.empty() ? DefaultStateDir() : f.state_dir));
  OrFail(registry->Remove(f.image));
  std::cout << "removed " << f.image << "\n";
}

void RunSignatureCheck(const SignatureCheckFlags& f) {
  auto parsed = spec::ParseWorkloadFile(f.file);
  if (!parsed.ok()) FailWith(parsed.errors);
  const auto& w = parsed.workload;
  if (!w.model || w.model->outputs.empty()) {
    FailWith(Error(codes::kInvalidArgument, "the workload has no model.signature.outputs")
                 .At(SourcePos{f.file, 0, 0})
                 .Path("spec.model.signature.outputs")
                 .Hint("declare the tensors the model produces under spec.model.signature"));
  }
  model::OutputCheck result = model::CheckOutputDir(*w.model, f.outputs);
  std::string prefix = f.outputs;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  for (auto& e : result.errors) {
    if (!e.pos.file.empty()) e.pos.file = prefix + "/" + e.pos.file;
  }
  for (const auto& c : result.checked) std::cout << "checked " << c << "\n";
  if (!result.errors.empty()) FailWith(result.errors);
  if (result.checked.empty()) {
    std::cout << "no tensor named after a signature output in " << f.outputs << "\n";
  }
  std::cout << "OK\n";
}

void RunModelList(const ModelListFlags& f) {
  std::string state_dir = f.state_dir.empty() ? DefaultStateDir() : f.state_dir;
  auto store = OrFail(model::ArtifactStore::Open(state_dir));
  auto artifacts = OrFail(store->List());
  if (f.output == "json") {
    json out = json::array();
    for (const auto& a : artifacts) out.push_back(json::parse(model::ArtifactToJson(a)));
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (artifacts.empty()) {
    // Say which store was read: model commands read a state directory, never the controller
    // (SEEDCTL_SERVER does not apply to them).
    std::cout << "No model artifacts recorded in the state directory " << state_dir << ".\n"
              << "(model commands read a local state directory, not the controller: pass "
                 "--state-dir or set RSL_STATE_DIR to the controller's)\n";
    return;
  }
  bool wide = f.output == "wide";
  Table t(
      wide ? std::vector<std::string>{"NAME", "FRAMEWORK", "STATE", "STEP", "RUN", "FINGERPRINT",
                                      "ENVIRONMENT", "URI", "CREATED"}
           : std::vector<std::string>{"NAME", "FRAMEWORK", "STATE", "FINGERPRINT", "RUN", "URI"});
  for (const auto& a : artifacts) {
    if (wide) {
      t.AddRow({ArtifactName(a), a.framework, a.state, a.step, a.run_id, a.fingerprint,
                a.image + "@" + Short(a.environment_digest), a.uri, Timestamp(a.created_at_ms)});
    } else {
      // In full: it is what a user copies into model.buildFingerprint.
      t.AddRow({ArtifactName(a), a.framework, a.state, a.fingerprint, a.run_id, a.uri});
    }
  }
  std::cout << t.Render();
}

void RunModelDescribe(const ModelDescribeFlags& f) {
  auto store =
      OrFail(model::ArtifactStore::Open(f.state_dir.empty() ? DefaultStateDir() : f.state_dir));
  auto colon = f.ref.find(':');
  std::string name = f.ref.substr(0, colon);
  std::string version = colon == std::string::npos ? "" : f.ref.substr(colon + 1);
  auto a = OrFail(store->Find(name, version));
  if (f.output == "json") {
    std::cout << model::ArtifactToJson(a) << "\n";
    return;
  }
  if (f.output == "provenance") {
    std::cout << model::ProvenanceStatement(a) << "\n";
    return;
  }
  std::cout << "Name:         " << ArtifactName(a) << "\n"
            << "Namespace:    " << a.namespace_ << "\n"
            << "Framework:    " << a.framework << "\n"
            << "State:        " << a.state << "\n"
            << "URI:          " << a.uri << "\n"
            << "Fingerprint:  " << a.fingerprint << "\n";
  if (!a.build_fingerprint.empty()) std::cout << "Pinned:       " << a.build_fingerprint << "\n";
  std::cout << "Workload:     " << a.workload_id << " (run " << a.run_id << ", step " << a.step
            << ")\n"
            << "Spec digest:  " << a.spec_digest << "\n"
            << "Environment:  " << (a.image.empty() ? "(default)" : a.image) << " "
            << a.environment_digest << "\n"
            << "Created:      " << Timestamp(a.created_at_ms) << "\n"
            << "Dependencies: " << (a.dependencies.empty() ? "(none)" : Join(a.dependencies, ", "))
            << "\n";
  auto sig = json::parse(a.signature_json, nullptr, false);
  if (sig.is_object()) {
    for (const char* part : {"inputs", "outputs"}) {
      for (const auto& t : sig.value(part, json::array())) {
        std::cout << "Signature:    " << part << " " << t.value("name", "") << " "
                  << t.value("dtype", "") << " " << t["shape"].dump() << "\n";
      }
    }
  }
  std::cout << "\n";
  Table files({"FILE", "SIZE", "SHA256"});
  for (const auto& f : a.files) files.AddRow({f.path, std::to_string(f.size), f.sha256});
  std::cout << files.Render();
}

namespace {

// A step's output directory is <root>/<step>, and <root>/_RSL_COMMIT names the run whose
// commit the root holds: another run's means a later run replaced this artifact's files
// (data.output.policy replace), whatever the fingerprint says.
std::optional<Error> SupersededBy(const std::string& dir, const std::string& run_id) {
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  root = root.substr(0, root.rfind('/'));
  auto text = ReadFile(root + "/" + kCommitManifestName);
  if (!text.ok() || run_id.empty()) return std::nullopt;
  auto m = ParseCommitManifest(*text);
  if (!m.ok() || m->run_id.empty() || m->run_id == run_id) return std::nullopt;
  return Error(codes::kOutputSuperseded, "the outputs under " + root + " are run " + m->run_id +
                                             "'s since " + Timestamp(m->committed_at) +
                                             ", not run " + run_id + "'s")
      .Path(root)
      .Value(m->run_id)
      .Hint("run " + run_id +
            "'s files were replaced by a later run of the same "
            "data.output.uri; use data.output.policy: versioned to keep every run's outputs");
}

}  // namespace

void RunModelVerify(const ModelVerifyFlags& f) {
  auto dir = model::UriToLocalDir(f.uri);
  if (!dir) {
    FailWith(Error(codes::kInvalidArgument, "model verify reads local artifacts only")
                 .Value(f.uri)
                 .Hint("copy the artifact locally and pass its directory or file:// URI"));
  }
  auto store =
      OrFail(model::ArtifactStore::Open(f.state_dir.empty() ? DefaultStateDir() : f.state_dir));
  auto a = store->FindByUri(f.uri);
  if (!a.ok()) {
    // Still useful: show what the directory hashes to, then fail.
    auto files = model::FindModelFiles(*dir, nullptr);
    if (files.ok()) {
      auto fp = model::ComputeFingerprint(*dir, *files);
      if (fp.ok()) std::cout << "computed " << fp->digest << "\n";
    }
    FailWith(a.error());
  }
  auto result = OrFail(model::VerifyArtifact(*a, *dir));
  std::cout << "artifact " << ArtifactName(*a) << " (run " << a->run_id << ")\n"
            << "recorded " << a->fingerprint << "\n"
            << "computed " << result.computed << "\n";
  Errors errors;
  for (const auto& diff : result.differences) {
    errors.push_back(Error(codes::kModelFingerprintMismatch, diff).At(SourcePos{*dir, 0, 0}));
  }
  if (auto replaced = SupersededBy(*dir, a->run_id)) errors.push_back(*replaced);
  if (!errors.empty()) FailWith(errors);
  std::cout << "OK\n";
}

namespace {

void EnvCommands(CLI::App& app) {
  CLI::App* env = app.add_subcommand("env", "Environments (images) steps run in");
  env->require_subcommand(1);

  auto r = std::make_shared<EnvRegisterFlags>();
  CLI::App* reg = env->add_subcommand(
      "register", "Record what IMAGE means here: a Python interpreter or a root directory");
  reg->add_option("IMAGE", r->request.image, "image name, e.g. volc/train-pytorch:v2.1")
      ->required();
  auto* py = reg->add_option("--python", r->request.python, "the environment's Python interpreter");
  auto* root = reg->add_option("--root", r->request.root, "an unpacked root file system");
  py->excludes(root);
  reg->add_option("--entrypoint", r->request.entrypoint,
                  "command a step without `command` runs (split like a shell)");
  AddStateDir(reg, &r->state_dir);
  AddOutput(reg, &r->output, {"json"});
  Bind(reg, r, &RunEnvRegister);

  auto l = std::make_shared<EnvListFlags>();
  CLI::App* list = env->add_subcommand("list", "Registered environments");
  AddStateDir(list, &l->state_dir);
  AddOutput(list, &l->output, {"json", "wide"});
  Bind(list, l, &RunEnvList);

  auto i = std::make_shared<EnvInspectFlags>();
  CLI::App* inspect = env->add_subcommand("inspect", "What an environment contains");
  inspect->add_option("IMAGE", i->image, "a registered image")->required();
  inspect->add_flag("--live", i->live,
                    "inspect it again now and show how it differs from the registration");
  AddStateDir(inspect, &i->state_dir);
  AddOutput(inspect, &i->output, {"json"});
  Bind(inspect, i, &RunEnvInspect);

  auto rm = std::make_shared<EnvRemoveFlags>();
  CLI::App* remove = env->add_subcommand("remove", "Forget a registered environment");
  remove->add_option("IMAGE", rm->image, "a registered image")->required();
  AddStateDir(remove, &rm->state_dir);
  Bind(remove, rm, &RunEnvRemove);
}

void SignatureCommands(CLI::App& app) {
  auto o = std::make_shared<SignatureCheckFlags>();
  CLI::App* sig = app.add_subcommand("signature", "Model signatures");
  sig->require_subcommand(1);
  CLI::App* check = sig->add_subcommand(
      "check", "Check a directory of outputs (.npy, .safetensors) against model.signature");
  check->add_option("-f,--file", o->file, "the AIWorkload YAML")->required();
  check->add_option("--outputs", o->outputs, "directory the step wrote")->required();
  Bind(check, o, &RunSignatureCheck);
}

void ModelCommands(CLI::App& app) {
  CLI::App* mdl = app.add_subcommand("model", "Model artifacts runs produced");
  mdl->require_subcommand(1);

  auto l = std::make_shared<ModelListFlags>();
  CLI::App* list = mdl->add_subcommand("list", "Every recorded model artifact, newest first");
  AddStateDir(list, &l->state_dir);
  AddOutput(list, &l->output, {"json", "wide"});
  Bind(list, l, &RunModelList);

  auto d = std::make_shared<ModelDescribeFlags>();
  CLI::App* describe = mdl->add_subcommand("describe", "One artifact: contract, files, provenance");
  describe->add_option("NAME[:VERSION]", d->ref, "workload name, optionally :model version")
      ->required();
  AddStateDir(describe, &d->state_dir);
  AddOutput(describe, &d->output, {"json", "provenance"});
  Bind(describe, d, &RunModelDescribe);

  auto v = std::make_shared<ModelVerifyFlags>();
  CLI::App* verify = mdl->add_subcommand(
      "verify", "Recompute the fingerprint of the artifact at URI and compare it with the record");
  verify->add_option("URI", v->uri, "file:///dir or a local directory")->required();
  AddStateDir(verify, &v->state_dir);
  Bind(verify, v, &RunModelVerify);
}

}  // namespace

void RegisterModelCommands(CLI::App& app) {
  EnvCommands(app);
  SignatureCommands(app);
  ModelCommands(app);
}

}  // namespace rsl::cli
