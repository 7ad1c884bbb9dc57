// The model hooks as the engine calls them, with real environments (venvs of Debian's
// python3), real step processes launched from what BeforeStep resolved, and real files:
// admission refusals, image resolution, signature and fingerprint checks after a step, and
// the artifact life cycle with its provenance.
#include "runtime/model_hooks.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "model/artifact_store.h"
#include "model/env_registry.h"
#include "model/model_checks.h"
#include "model/subprocess.h"
#include "model/test_util.h"

namespace rsl::model {
namespace {

using testing::Capture;
using testing::TempDir;

class RecordingControl : public engine::RunControl {
 public:
  Status StopStep(const std::string&, const std::string&, const std::string&, const std::string&,
                  bool) override {
    return Status::Ok();
  }
  void EmitEvent(const std::string& run_id, const std::string& step, const std::string& reason,
                 const std::string& message) override {
    events.push_back(step + " " + reason + ": " + message);
  }
  std::vector<std::string> events;
};

// A deterministic "training": weights from a seeded generator, saved as safetensors by hand
// (json + struct), and predictions as fraud_prob.npy. argv: seed, dtype of the predictions.
constexpr char kTrainScript[] = R"(
import json, os, struct, sys
import numpy as np
out = os.environ['RSL_OUTPUT']
seed, pred_dtype = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(seed)
w = rng.standard_normal((8, 4)).astype('<f4')
h = json.dumps({'weight': {'dtype': 'F32', 'shape': [8, 4], 'data_offsets': [0, w.nbytes]}}).encode()
with open(os.path.join(out, 'model.safetensors'), 'wb') as f:
    f.write(struct.pack('<Q', len(h)) + h + w.tobytes())
x = rng.standard_normal((5, 4)).astype('<f4')
p = 1 / (1 + np.exp(-(x @ w.T).sum(axis=1, keepdims=True) / 10))
np.save(os.path.join(out, 'fraud_prob.npy'), p.astype(pred_dtype))
with open(os.path.join(out, 'which.txt'), 'w') as f:
    f.write(sys.executable)
)";

class ModelHooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_ / "state";
    venv_ = dir_ / "venv";
    std::string site = testing::MakeVenv(venv_, /*system_site=*/true);
    testing::AddDistInfo(site, "torch", "1.13.1");
    testing::WriteText(dir_ / "train.py", kTrainScript);
    auto reg = EnvRegistry::Open(state_);
    ASSERT_TRUE(reg.ok());
    ASSERT_TRUE((*reg)->Register({"volc/train:v1", venv_ + "/bin/python", "", ""}).ok());
    ASSERT_TRUE((*reg)->Register({"volc/sys:v1", testing::kSystemPython, "", ""}).ok());
    numpy_version_ = Capture(std::string(testing::kSystemPython) +
                             " -c 'import numpy; print(numpy.__version__, end=\"\")'");
  }

  spec::Workload Fraud(std::vector<std::string> deps) {
    spec::Workload w;
    w.name = "fraud-detect-daily";
    w.source_file = "wl.yaml";
    spec::ModelSpec m;
    m.framework = "pytorch";
    m.version = "2.1.7";
    for (const auto& d : deps) {
      auto eq = d.find("==");
      m.dependencies.push_back({d.substr(0, eq), d.substr(eq + 2)});
    }
    m.outputs.push_back({"fraud_prob", "float32", {-1, 1}, std::make_pair(0.0, 1.0)});
    w.model = m;
    w.data.input = spec::DataInput{};
    w.data.input->uri = "file:///data/tx";
    spec::Step prep;
    prep.name = "preprocess";
    prep.image = "volc/sys:v1";
    prep.command = {"python3", "-c", "pass"};
    spec::Step train;
    train.name = "train";
    train.image = "volc/train:v1";
    train.command = {"python", dir_ / "train.py", "1", "float32"};
    train.depends_on = {"preprocess"};
    w.pipeline.steps = {prep, train};
    w.positions["spec.model.dependencies"] = SourcePos{"wl.yaml", 12, 5};
    w.positions["spec.pipeline.steps[1].image"] = SourcePos{"wl.yaml", 30, 16};
    w.positions["spec.model.buildFingerprint"] = SourcePos{"wl.yaml", 9, 23};
    return w;
  }

  engine::RunInfo Info(const spec::Workload& w, const std::string& run_id) {
    return engine::RunInfo{"wl-20240615-7a8b9c0d", run_id, state_, state_ + "/runs/" + run_id, &w};
  }

  Status Admit(const spec::Workload& w, engine::AdmissionReport* report) {
    return runtime::EnvironmentAdmissionCheck(state_)->Check(Info(w, "run-1"), report);
  }

  // BeforeStep, then the process itself, then AfterStep: one attempt as the engine runs it.
  Status RunStep(engine::StepHook& hook, const spec::Workload& w, const std::string& run_id,
                 size_t step_idx, const std::string& staging) {
    const spec::Step& step = w.pipeline.steps[step_idx];
    backend::LaunchSpec launch;
    launch.argv = step.command;
    launch.env = {{"PATH", "/usr/bin:/bin"}, {"RSL_OUTPUT", staging}};
    RSL_RETURN_IF_ERROR(hook.BeforeStep(Info(w, run_id), step, &launch));
    EXPECT_TRUE(MakeDirs(staging).ok());
    hook.OnStepStarted(Info(w, run_id), step, launch, &control_);
    auto proc = RunProcess(launch.argv, launch.env, 60000, /*merge_stderr=*/true);
    if (!proc.ok()) return proc.status();
    engine::StepOutcome outcome;
    outcome.step = step.name;
    outcome.staging_dir = staging;
    outcome.exit.kind =
        proc->exit_code == 0 ? backend::ExitKind::kSucceeded : backend::ExitKind::kFailed;
    EXPECT_EQ(proc->exit_code, 0) << proc->out;
    return hook.AfterStep(Info(w, run_id), step, outcome);
  }

  TempDir dir_;
  std::string state_, venv_, numpy_version_;
  RecordingControl control_;
};

TEST_F(ModelHooksTest, UnregisteredImageIsImagePullBackOff) {
  auto w = Fraud({});
  // Not registered, and its registry (loopback, nothing listening on port 9) cannot answer.
  auto reg = EnvRegistry::Open(state_);
  ASSERT_TRUE(reg.ok());
  ASSERT_TRUE((*reg)->Register({"127.0.0.1:9/volc/train:v1", venv_ + "/bin/python", "", ""}).ok());
  w.pipeline.steps[1].image = "127.0.0.1:9/volc/train:v2";
  engine::AdmissionReport report;
  Status s = Admit(w, &report);
  ASSERT_FALSE(s.ok());
  const Error& e = s.error();
  EXPECT_EQ(e.code, "IMAGE_NOT_FOUND");
  EXPECT_EQ(e.path, "spec.pipeline.steps[1].image");
  EXPECT_EQ(e.pos.ToString(), "wl.yaml:30:16");
  EXPECT_EQ(e.message.rfind("step \"train\": image \"127.0.0.1:9/volc/train:v2\": cannot reach "
                            "registry http://127.0.0.1:9: ",
                            0),
            0u)
      << e.message;
  EXPECT_TRUE(EndsWith(e.message, " (and it is not a registered host environment)")) << e.message;
  EXPECT_TRUE(EndsWith(e.hint,
                       "; or did you mean \"127.0.0.1:9/volc/train:v1\"? (a registered "
                       "host environment)"))
      << e.hint;
  EXPECT_EQ(report.event_reason, "ImagePullBackOff");
  EXPECT_EQ(report.event_message, e.message);
}

// A step without command runs its image's entrypoint: one without is refused at admission,
// before any step runs, not when the step is reached.
TEST_F(ModelHooksTest, AStepWithoutCommandNeedsAnEntrypointAtAdmission) {
  auto w = Fraud({});
  w.pipeline.steps[1].command.clear();
  w.positions["spec.pipeline.steps[1]"] = SourcePos{"wl.yaml", 28, 7};
  engine::AdmissionReport report;
  Status s = Admit(w, &report);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().ToString(),
            "wl.yaml:28:7: SPEC_INVALID spec.pipeline.steps[1].command: step \"train\" has no "
            "command and image \"volc/train:v1\" has no entrypoint (add command: [...] to the "
            "step, or register the image with --entrypoint)");
  EXPECT_EQ(report.event_reason, "CreateContainerConfigError");
  auto reg = EnvRegistry::Open(state_);
  ASSERT_TRUE(
      (*reg)->Register({"volc/train:v1", venv_ + "/bin/python", "", "python train.py"}).ok());
  EXPECT_TRUE(Admit(w, &report).ok());
}

// A workload with no image and no model (examples/hello.yaml) admits without a model note, so
// its Admitted event does not say "model: 0 image(s) registered".
TEST_F(ModelHooksTest, NothingToCheckSaysNothing) {
  spec::Workload w;
  w.name = "hello";
  spec::Step s;
  s.name = "hello";
  s.command = {"echo", "hi"};
  w.pipeline.steps = {s};
  engine::AdmissionReport report;
  ASSERT_TRUE(Admit(w, &report).ok());
  EXPECT_EQ(report.event_message, "");
}

TEST_F(ModelHooksTest, EveryDependencyDifferenceIsListed) {
  auto w = Fraud({"torch==2.1.2+cu118", "xformers==0.0.22", "Scikit_Learn==1.3.0",
                  "numpy==" + numpy_version_});
  engine::AdmissionReport report;
  Status s = Admit(w, &report);
  ASSERT_FALSE(s.ok());
  // preprocess's environment has numpy but the venv has torch too; both hold pins, so both
  // are model steps. The system one lacks torch, xformers and scikit-learn.
  EXPECT_EQ(s.error().ToString(),
            "wl.yaml:12:5: MODEL_DEPENDENCY_MISMATCH spec.model.dependencies: step \"preprocess\" "
            "(image \"volc/sys:v1\"): torch: not installed; xformers: not installed; Scikit_Learn: "
            "not installed; step \"train\" (image \"volc/train:v1\"): torch: declared 2.1.2+cu118, "
            "environment has 1.13.1; xformers: not installed; Scikit_Learn: not installed "
            "(install the pinned versions and re-register the image, or change the pins)");
  EXPECT_EQ(report.event_reason, "ModelDependencyMismatch");
}

TEST_F(ModelHooksTest, OnlyModelStepsAreChecked) {
  // torch is only in the train image: preprocess's environment holds none of the pins.
  auto w = Fraud({"torch==1.13.1"});
  engine::AdmissionReport report;
  Status s = Admit(w, &report);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(report.event_message, "2 image(s) registered; 1 pinned dependencies hold in 1 step(s)");
  auto json = nlohmann::json::parse(report.report_json);
  EXPECT_EQ(json["dependencySteps"], nlohmann::json::array({"train"}));

  // A step that declares outputs is the model step, whatever its environment holds.
  w.pipeline.steps[0].outputs.push_back({"features", "float32", {-1, 4}, std::nullopt});
  s = Admit(w, &report);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "step \"preprocess\" (image \"volc/sys:v1\"): torch: not installed");
}

TEST_F(ModelHooksTest, MatchingPinsPassAgainstTheRealSystemPython) {
  auto w = Fraud({"numpy==" + numpy_version_, "torch==1.13.1.0"});
  engine::AdmissionReport report;
  Status s = Admit(w, &report);
  // numpy: both environments (the venv sees the system packages); torch only in train.
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "step \"preprocess\" (image \"volc/sys:v1\"): torch: not installed");
  w.pipeline.steps[0].image = "volc/train:v1";
  s = Admit(w, &report);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto json = nlohmann::json::parse(report.report_json);
  EXPECT_EQ(json["environments"][0]["image"], "volc/train:v1");
  EXPECT_EQ(json["environments"][0]["digest"], json["environments"][0]["registeredDigest"]);
}

TEST_F(ModelHooksTest, DeclaredOutputsContradictingTheSignatureAreRefused) {
  auto w = Fraud({});
  w.pipeline.steps[1].outputs.push_back({"fraud_prob", "int32", {-1, 1}, std::nullopt});
  engine::AdmissionReport report;
  Status s = Admit(w, &report);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "OUTPUT_SCHEMA_MISMATCH");
  EXPECT_EQ(s.error().message, "fraud_prob.dtype expected float32, got int32");
  EXPECT_EQ(report.event_reason, "OutputSchemaMismatch");
}

TEST_F(ModelHooksTest, BeforeStepResolvesTheInterpreterAndEntrypoint) {
  auto w = Fraud({});
  auto hook = runtime::ModelStepHook(state_);
  backend::LaunchSpec launch;
  launch.argv = {"python", "train.py"};
  launch.env = {{"PATH", "/usr/bin:/bin"}};
  ASSERT_TRUE(hook->BeforeStep(Info(w, "r"), w.pipeline.steps[1], &launch).ok());
  EXPECT_EQ(launch.argv[0], venv_ + "/bin/python");
  EXPECT_EQ(launch.env["PATH"], venv_ + "/bin:/usr/bin:/bin");
  EXPECT_EQ(launch.env["PYTHONNOUSERSITE"], "1");

  // A step without command runs the image's entrypoint with the step's args.
  auto reg = EnvRegistry::Open(state_);
  ASSERT_TRUE(
      (*reg)->Register({"volc/serve:v1", venv_ + "/bin/python", "", "python -m http.server"}).ok());
  spec::Step serve;
  serve.name = "serve";
  serve.image = "volc/serve:v1";
  serve.args = {"8080"};
  backend::LaunchSpec launch2;
  ASSERT_TRUE(hook->BeforeStep(Info(w, "r"), serve, &launch2).ok());
  EXPECT_EQ(launch2.argv,
            (std::vector<std::string>{venv_ + "/bin/python", "-m", "http.server", "8080"}));
  EXPECT_EQ(launch2.env["PATH"], venv_ + "/bin:/usr/local/bin:/usr/bin:/bin");
  serve.image = "volc/train:v1";
  backend::LaunchSpec launch3;
  EXPECT_EQ(hook->BeforeStep(Info(w, "r"), serve, &launch3).ToString(),
            "SPEC_INVALID: step \"serve\" has no command and image \"volc/train:v1\" has no "
            "entrypoint (add command: [...] to the step, or register the image with --entrypoint)");

  // A root: its bin directories on PATH, its Python directories on PYTHONPATH.
  std::string root = dir_ / "rootfs";
  testing::AddDistInfo(root + "/usr/lib/python3/dist-packages", "torch", "2.1.2+cu118");
  ASSERT_TRUE(MakeDirs(root + "/usr/bin").ok());
  ASSERT_TRUE((*reg)->Register({"volc/root:v1", "", root, ""}).ok());
  serve.image = "volc/root:v1";
  backend::LaunchSpec launch4;
  launch4.argv = {"python3", "x.py"};
  launch4.env = {{"PYTHONPATH", "/mine"}};
  ASSERT_TRUE(hook->BeforeStep(Info(w, "r"), serve, &launch4).ok());
  EXPECT_EQ(launch4.argv[0], "python3");  // the root has no interpreter of its own
  EXPECT_EQ(launch4.env["PATH"], root + "/usr/bin:/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(launch4.env["PYTHONPATH"], root + "/usr/lib/python3/dist-packages:/mine");

  EXPECT_TRUE(IsPythonCommand("python3.11"));
  EXPECT_FALSE(IsPythonCommand("/usr/bin/python3"));
  EXPECT_FALSE(IsPythonCommand("pythonista"));
}

TEST_F(ModelHooksTest, AServingStepGetsTheSignatureInItsEnvironment) {
  auto w = Fraud({});
  w.model->inputs.push_back({"features", "float32", {1, 128}, std::nullopt});
  auto hook = runtime::ModelStepHook(state_);
  spec::Step serve;
  serve.name = "serve";
  serve.serving = true;
  serve.command = {"/usr/bin/python3", "serve.py"};
  backend::LaunchSpec launch;
  launch.argv = serve.command;
  ASSERT_TRUE(hook->BeforeStep(Info(w, "r"), serve, &launch).ok());
  EXPECT_EQ(
      launch.env["RSL_MODEL_SIGNATURE"],
      R"({"inputs":[{"dtype":"float32","name":"features","shape":[1,128]}],)"
      R"("outputs":[{"dtype":"float32","name":"fraud_prob","range":[0.0,1.0],"shape":[-1,1]}]})");
  // Batch steps, and serving steps of a workload without a signature, get none.
  backend::LaunchSpec batch;
  batch.argv = {"python3", "-c", "pass"};
  ASSERT_TRUE(hook->BeforeStep(Info(w, "r"), w.pipeline.steps[0], &batch).ok());
  EXPECT_EQ(batch.env.count("RSL_MODEL_SIGNATURE"), 0u);
  w.model->inputs.clear();
  w.model->outputs.clear();
  backend::LaunchSpec bare;
  bare.argv = serve.command;
  ASSERT_TRUE(hook->BeforeStep(Info(w, "r"), serve, &bare).ok());
  EXPECT_EQ(bare.env.count("RSL_MODEL_SIGNATURE"), 0u);
}

// The end-to-end reproducibility check: the same training twice gives the same fingerprint
// (equal to an independent computation in Python), a pinned buildFingerprint passes, and a
// changed training fails with MODEL_FINGERPRINT_MISMATCH.
TEST_F(ModelHooksTest, DeterministicTrainingReproducesItsFingerprint) {
  auto w = Fraud({"torch==1.13.1"});
  auto hook = runtime::ModelStepHook(state_);
  ASSERT_TRUE(RunStep(*hook, w, "run-1", 1, dir_ / "s1").ok());
  EXPECT_EQ(*ReadFile(dir_ / "s1/which.txt"), venv_ + "/bin/python");  // the image's interpreter
  ASSERT_TRUE(RunStep(*hook, w, "run-2", 1, dir_ / "s2").ok());

  auto store = ArtifactStore::Open(state_);
  ASSERT_TRUE(store.ok());
  auto list = (*store)->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  const ModelArtifact& second = (*list)[0];
  const ModelArtifact& first = (*list)[1];
  EXPECT_EQ(first.fingerprint, second.fingerprint);
  ASSERT_EQ(first.files.size(), 1u);  // fraud_prob.npy and which.txt are not model files
  EXPECT_EQ(first.files[0].path, "model.safetensors");
  EXPECT_EQ(first.state, "staged");
  EXPECT_EQ(first.uri, "file://" + (dir_ / "s1"));
  // The documented formula, computed by Python.
  std::string independent = Capture("cd '" + (dir_ / "s1") + "' && " + testing::kSystemPython +
                                    " -c '"
                                    "import hashlib\n"
                                    "h = hashlib.sha256()\n"
                                    "for f in [\"model.safetensors\"]:\n"
                                    "    h.update(f.encode() + b\"\\0\" + hashlib.sha256(open(f, "
                                    "\"rb\").read()).hexdigest().encode() + b\"\\n\")\n"
                                    "print(\"sha256:\" + h.hexdigest(), end=\"\")'");
  EXPECT_EQ(first.fingerprint, independent);
  ASSERT_FALSE(control_.events.empty());
  EXPECT_EQ(control_.events.back(),
            "train ModelRecorded: model fraud-detect-daily:2.1.7 fingerprint " + first.fingerprint +
                " (1 file(s)); pin it with spec.model.buildFingerprint");

  // Pinned: the same training passes, a changed one (another seed) fails the step.
  w.model->build_fingerprint = first.fingerprint;
  ASSERT_TRUE(RunStep(*hook, w, "run-3", 1, dir_ / "s3").ok());
  w.pipeline.steps[1].command[2] = "2";
  Status s = RunStep(*hook, w, "run-4", 1, dir_ / "s4");
  ASSERT_FALSE(s.ok());
  auto changed = ComputeFingerprint(dir_ / "s4", {"model.safetensors"});
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(changed->digest, first.fingerprint);
  EXPECT_EQ(s.error().ToString(),
            "wl.yaml:9:23: MODEL_FINGERPRINT_MISMATCH spec.model.buildFingerprint: step \"train\" "
            "produced a model with fingerprint " +
                changed->digest + ", buildFingerprint is " + first.fingerprint +
                " (1 file(s): model.safetensors) (the build is not "
                "reproducible; if the change is intended, pin buildFingerprint: \"" +
                changed->digest + "\")");
  EXPECT_EQ((*store)->List()->size(), 3u);  // the mismatching artifact is not recorded
}

TEST_F(ModelHooksTest, WrittenTensorsAreCheckedAfterTheStep) {
  auto w = Fraud({});
  w.pipeline.steps[1].command[3] = "float64";
  auto hook = runtime::ModelStepHook(state_);
  Status s = RunStep(*hook, w, "run-1", 1, dir_ / "s1");
  EXPECT_EQ(s.ToString(),
            "fraud_prob.npy: OUTPUT_SCHEMA_MISMATCH spec.model.signature.outputs[0]: "
            "fraud_prob.dtype expected float32, got float64");
  // A failed attempt is not checked and records nothing.
  engine::StepOutcome failed;
  failed.staging_dir = dir_ / "s1";
  failed.exit.kind = backend::ExitKind::kFailed;
  EXPECT_TRUE(hook->AfterStep(Info(w, "run-1"), w.pipeline.steps[1], failed).ok());
  EXPECT_EQ((*ArtifactStore::Open(state_))->List()->size(), 0u);
}

TEST_F(ModelHooksTest, ArtifactsCommitWithTheRunAndCarryProvenance) {
  auto w = Fraud({"torch==1.13.1"});
  auto hook = runtime::ModelStepHook(state_);
  ASSERT_TRUE(RunStep(*hook, w, "run-ok", 1, dir_ / "ok").ok());
  ASSERT_TRUE(RunStep(*hook, w, "run-bad", 1, dir_ / "bad").ok());
  // The engine publishes run-ok's outputs (here: renames the staging dir) and discards run-bad.
  ASSERT_TRUE(MakeDirs(dir_ / "published").ok());
  ASSERT_EQ(rename((dir_ / "ok").c_str(), (dir_ / "published/train").c_str()), 0);
  hook->AfterRun(Info(w, "run-ok"), "SUCCEEDED", dir_ / "published");
  hook->AfterRun(Info(w, "run-bad"), "FAILED", "");

  auto store = ArtifactStore::Open(state_);
  auto list = (*store)->List();
  ASSERT_EQ(list->size(), 1u);
  auto a = (*store)->Find("fraud-detect-daily", "2.1.7");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->state, "committed");
  EXPECT_EQ(a->uri, "file://" + (dir_ / "published/train"));
  EXPECT_EQ(a->run_id, "run-ok");
  EXPECT_EQ(a->dependencies, (std::vector<std::string>{"torch==1.13.1"}));
  EXPECT_EQ((*store)->FindByUri(dir_ / "published/train/")->id, a->id);
  EXPECT_EQ((*store)->Find("fraud-detect-daly", "").error().ToString(),
            "NOT_FOUND: no model artifact \"fraud-detect-daly\" (did you mean "
            "\"fraud-detect-daily\"?)");
  EXPECT_EQ((*store)->Find("fraud-detect-daily", "9.9.9").error().ToString(),
            "NOT_FOUND: no model artifact \"fraud-detect-daily:9.9.9\" (did you mean "
            "\"fraud-detect-daily:2.1.7\"?)");
  EXPECT_EQ((*store)->Find("other-model", "").error().ToString(),
            "NOT_FOUND: no model artifact \"other-model\" (known: fraud-detect-daily)");

  auto env = (*EnvRegistry::Open(state_))->Get("volc/train:v1");
  auto statement = nlohmann::json::parse(ProvenanceStatement(*a));
  EXPECT_EQ(statement["_type"], "https://in-toto.io/Statement/v1");
  EXPECT_EQ(statement["subject"][0]["name"], "model.safetensors");
  std::string sha =
      Capture("sha256sum '" + (dir_ / "published/train/model.safetensors") + "' | cut -c1-64");
  EXPECT_EQ(statement["subject"][0]["digest"]["sha256"].get<std::string>() + "\n", sha);
  EXPECT_EQ(statement["predicate"]["workloadId"], "wl-20240615-7a8b9c0d");
  EXPECT_EQ(statement["predicate"]["environment"]["digest"], env->inspection.digest);
  EXPECT_EQ(statement["predicate"]["inputs"][0]["uri"], "file:///data/tx");
  EXPECT_EQ(statement["predicate"]["specDigest"].get<std::string>().substr(0, 7), "sha256:");

  // Verification: intact, then a changed and an added file.
  auto v = VerifyArtifact(*a, dir_ / "published/train");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok());
  EXPECT_EQ(v->computed, a->fingerprint);
  testing::WriteText(dir_ / "published/train/model.safetensors", "tampered");
  testing::WriteText(dir_ / "published/train/extra.pt", "x");
  v = VerifyArtifact(*a, dir_ / "published/train");
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->differences.size(), 2u);
  EXPECT_EQ(v->differences[0], "model.safetensors: sha256 " + Sha256Hex("tampered") +
                                   ", recorded " + a->files[0].sha256);
  EXPECT_EQ(v->differences[1], "extra.pt: not part of the recorded artifact");
}

}  // namespace
}  // namespace rsl::model
