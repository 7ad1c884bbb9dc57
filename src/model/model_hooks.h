// The model contract inside a run (engine/hooks.h): images and dependencies at admission,
// image resolution before a step, signatures, fingerprints and artifacts after it.
// docs/model.md describes the rules; the engine calls these through its hook interfaces, and
// seedctl run / rsl-controller install them with DefaultHooks (cli/default_hooks.cc).
//
// Note on layering: this file implements the engine's hook *interfaces* (header-only), so the
// model library does not link the engine.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/hooks.h"
#include "model/env_inspect.h"
#include "spec/workload.h"

namespace rsl::model {

//! Admission, in this order, stopping at the first failure:
//!  1. every step with an `image` names a registered environment
//!     (IMAGE_NOT_FOUND, event ImagePullBackOff);
//!  2. no step's declared `outputs` contradict model.signature (OUTPUT_SCHEMA_MISMATCH,
//!     event OutputSchemaMismatch, every contradiction in one message);
//!  3. model.dependencies hold in the environment of every model step (ModelSteps), as the
//!     environment is now (re-inspected), MODEL_DEPENDENCY_MISMATCH listing every difference
//!     (event ModelDependencyMismatch).
std::shared_ptr<engine::AdmissionCheck> EnvironmentAdmissionCheck(const std::string& state_dir);

//! BeforeStep: resolves the step's image (python -> the registered interpreter, PATH and
//! PYTHONPATH for root environments, the entrypoint for a step without command).
//! AfterStep (succeeded attempts): checks written tensors against the signature
//! (OUTPUT_SCHEMA_MISMATCH), fingerprints the model files (fingerprint.h), fails on a
//! buildFingerprint mismatch (MODEL_FINGERPRINT_MISMATCH) and records the artifact as staged.
//! AfterRun: commits (uri = <committed uri>/<step>) or discards the run's staged artifacts.
std::shared_ptr<engine::StepHook> ModelStepHook(const std::string& state_dir);

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
