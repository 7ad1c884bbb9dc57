// The model contract inside a run, as plain checks: images and dependencies at admission,
// image resolution before a step, signatures, fingerprints and artifacts after it.
// docs/model.md describes the rules; runtime/model_hooks.h turns these into the engine's
// hooks, which seedctl run and rsl-controller install.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/artifact_store.h"
#include "model/env_inspect.h"
#include "model/env_registry.h"
#include "spec/workload.h"

namespace rsl::model {

//! The environment registry and the artifact store of a state directory, opened on first
//! use and kept (one connection each per ModelStores). Thread-safe.
class ModelStores {
 public:
  explicit ModelStores(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  Result<EnvRegistry*> registry();
  Result<ArtifactStore*> artifacts();

 private:
  std::string state_dir_;
  std::mutex mu_;
  std::unique_ptr<EnvRegistry> registry_;     // GUARDED_BY(mu_) until set
  std::unique_ptr<ArtifactStore> artifacts_;  // GUARDED_BY(mu_) until set
};

//! What the admission check reports besides pass/fail.
struct EnvironmentAdmission {
  std::string event_reason;   //!< on failure: ImagePullBackOff, OutputSchemaMismatch, ...
  std::string event_message;  //!< the error's message, or on success what was checked
  std::string report_json;    //!< {environments, dependencySteps}
};

//! Admission, in this order, stopping at the first failure:
//!  1. every step with an `image` names a registered environment
//!     (IMAGE_NOT_FOUND, event ImagePullBackOff), and a step without `command` one with an
//!     entrypoint (SPEC_INVALID, event CreateContainerConfigError);
//!  2. no step's declared `outputs` contradict model.signature (OUTPUT_SCHEMA_MISMATCH,
//!     event OutputSchemaMismatch, every contradiction in one message);
//!  3. model.dependencies hold in the environment of every model step (ModelSteps), as the
//!     environment is now (re-inspected), MODEL_DEPENDENCY_MISMATCH listing every difference
//!     (event ModelDependencyMismatch).
Status AdmitEnvironments(const spec::Workload& workload, ModelStores* stores,
                         EnvironmentAdmission* report);

//! Before a step with an image: resolves it (python -> the registered interpreter, PATH and
//! PYTHONPATH for root environments, the entrypoint for a step without command) by rewriting
//! the launch's `argv` and `env`. Steps without an image are left alone.
Status ResolveImage(const spec::Step& step, ModelStores* stores, std::vector<std::string>* argv,
                    std::map<std::string, std::string>* env);

//! Receives the events a check wants on the run's record: (reason, message).
using EmitEvent = std::function<void(const std::string& reason, const std::string& message)>;

//! Which run a succeeded attempt belongs to, for CheckModelOutput.
struct AttemptRef {
  std::string workload_id;
  std::string run_id;
  std::string staging_dir;  //!< the attempt's RSL_OUTPUT
  //! The run's input DataDescriptors (JSON objects) as admission measured them; empty when
  //! unknown (the provenance then records what the spec says about the input).
  std::vector<std::string> input_descriptors_json;
};

//! After a succeeded attempt: checks written tensors against the signature
//! (OUTPUT_SCHEMA_MISMATCH), fingerprints the model files (fingerprint.h), fails on a
//! buildFingerprint mismatch (MODEL_FINGERPRINT_MISMATCH, event ModelFingerprintMismatch)
//! and records the artifact as staged (event ModelRecorded). `emit` may be empty.
Status CheckModelOutput(const spec::Workload& workload, const spec::Step& step,
                        const AttemptRef& attempt, ModelStores* stores, const EmitEvent& emit);

//! At the end of a run: commits (uri = <committed uri>/<step>) or, when `committed_uri` is
//! empty, discards the run's staged artifacts. Errors are ignored (nothing to fail anymore).
void FinishModelArtifacts(const std::string& run_id, const std::string& committed_uri,
                          ModelStores* stores);

//! The steps whose environments must satisfy model.dependencies (indices into
//! pipeline.steps): the steps that declare `outputs`, if any do; otherwise the steps with an
//! image whose environment has at least one of the pinned packages (any version); if no
//! environment has any, every step with an image. Steps without an image run in the
//! backend's default environment and are not checked. `environments` maps image -> contents.
std::vector<size_t> ModelSteps(const spec::Workload& workload,
                               const std::map<std::string, Inspection>& environments);

//! True for argv[0] values that mean "the environment's Python": python, python3, python3.11.
bool IsPythonCommand(const std::string& argv0);

}  // namespace rsl::model
