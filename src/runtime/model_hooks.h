// The model contract as engine hooks (engine/hooks.h) over the plain checks of
// model/model_checks.h: images and dependencies at admission, image resolution before a
// step, signatures, fingerprints and artifacts after it (docs/model.md).
#pragma once

#include <memory>
#include <string>

#include "engine/hooks.h"
#include "model/model_checks.h"

namespace rsl::runtime {

//! model::AdmitEnvironments as an admission check ("model"). Registry images are reached as
//! `access` says; their package metadata is cached under ImageCacheDir(state_dir) unless
//! access.cache_dir names another directory. A rollback's run pins the digests recorded by the
//! run it re-runs (RunInfo::rerun_admission_report_json).
std::shared_ptr<engine::AdmissionCheck> EnvironmentAdmissionCheck(const std::string& state_dir,
                                                                  model::ImageAccess access = {});

//! <state_dir>/images: the package metadata of registry images, one directory per digest.
std::string ImageCacheDir(const std::string& state_dir);

//! The "model" step hook. BeforeStep: model::ResolveImage on the launch, and for a serving
//! step of a workload with a signature, RSL_MODEL_SIGNATURE (model::SignatureJson) in its env.
//! AfterStep (succeeded attempts): model::CheckModelOutput, its events through the RunControl the
//! hook was last handed in OnStepStarted. AfterRun: model::FinishModelArtifacts.
std::shared_ptr<engine::StepHook> ModelStepHook(const std::string& state_dir);

}  // namespace rsl::runtime
