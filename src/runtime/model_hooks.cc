#include "runtime/model_hooks.h"

#include <atomic>

#include "model/model_checks.h"
#include "model/request_check.h"

namespace rsl::runtime {
namespace {

class EnvironmentAdmission : public engine::AdmissionCheck {
 public:
  EnvironmentAdmission(std::string state_dir, model::ImageAccess access)
      : stores_(state_dir), access_(std::move(access)) {
    if (access_.cache_dir.empty()) access_.cache_dir = ImageCacheDir(state_dir);
  }
  std::string name() const override { return "model"; }

  Status Check(const engine::RunInfo& run, engine::AdmissionReport* report) override {
    model::EnvironmentAdmission admission;
    model::ImageAccess access = access_;
    Status creds = model::AddPullSecrets(*run.workload, run.image_pull_secrets, &access);
    if (!creds.ok()) {
      report->event_reason = "CreateContainerConfigError";
      report->event_message = creds.error().message;
      return creds;
    }
    // A rollback runs the digests the version it re-runs ran, even if a tag has moved.
    Status st = model::AdmitEnvironments(*run.workload, &stores_, &admission, access,
                                         model::RecordedImages(run.rerun_admission_report_json));
    report->event_reason = std::move(admission.event_reason);
    report->event_message = std::move(admission.event_message);
    report->report_json = std::move(admission.report_json);
    return st;
  }

 private:
  model::ModelStores stores_;
  model::ImageAccess access_;
};

class ModelHook : public engine::StepHook {
 public:
  explicit ModelHook(std::string state_dir) : stores_(std::move(state_dir)) {}
  std::string name() const override { return "model"; }

  Status BeforeStep(const engine::RunInfo& run, const spec::Step& step,
                    backend::LaunchSpec* launch) override {
    // A serving step's replicas check requests against signature.inputs: they read it here.
    if (run.workload && run.workload->model && step.serving) {
      const spec::ModelSpec& m = *run.workload->model;
      if (!m.inputs.empty() || !m.outputs.empty()) {
        launch->env[model::kSignatureEnv] = model::SignatureJson(m);
      }
    }
    return model::ResolveImage(step, &stores_, &launch->argv, &launch->env,
                               model::RecordedImages(run.admission_report_json));
  }

  void OnStepStarted(const engine::RunInfo& run, const spec::Step& step,
                     const backend::LaunchSpec& launch, engine::RunControl* control) override {
    if (control) control_.store(control);
  }

  Status AfterStep(const engine::RunInfo& run, const spec::Step& step,
                   const engine::StepOutcome& outcome) override {
    if (outcome.exit.kind != backend::ExitKind::kSucceeded) return Status::Ok();
    model::AttemptRef attempt;
    attempt.workload_id = run.workload_id;
    attempt.run_id = run.run_id;
    attempt.staging_dir = outcome.staging_dir;
    attempt.input_descriptors_json = run.input_descriptors_json;
    auto recorded = model::RecordedImages(run.admission_report_json);
    if (auto it = recorded.find(step.image); it != recorded.end()) attempt.image = it->second;
    return model::CheckModelOutput(
        *run.workload, step, attempt, &stores_,
        [this, &run, &step](const std::string& reason, const std::string& message) {
          if (engine::RunControl* c = control_.load()) {
            c->EmitEvent(run.run_id, step.name, reason, message);
          }
        });
  }

  void AfterRun(const engine::RunInfo& run, const std::string& phase,
                const std::string& committed_uri) override {
    model::FinishModelArtifacts(run.run_id, committed_uri, &stores_);
  }

 private:
  model::ModelStores stores_;
  std::atomic<engine::RunControl*> control_{nullptr};
};

}  // namespace

std::string ImageCacheDir(const std::string& state_dir) { return state_dir + "/images"; }

std::shared_ptr<engine::AdmissionCheck> EnvironmentAdmissionCheck(const std::string& state_dir,
                                                                  model::ImageAccess access) {
  return std::make_shared<EnvironmentAdmission>(state_dir, std::move(access));
}

std::shared_ptr<engine::StepHook> ModelStepHook(const std::string& state_dir) {
  return std::make_shared<ModelHook>(state_dir);
}

}  // namespace rsl::runtime
