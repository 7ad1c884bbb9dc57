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
#include "image/registry.h"
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

//! How images that are not registered host environments are reached (docs/image.md).
struct ImageAccess {
  //! Registries (host[:port] as written in references) reached over plain HTTP besides
  //! loopback ones.
  std::vector<std::string> insecure_registries;
  //! Per registry host; a secret: never in messages or reports.
  std::map<std::string, image::Credentials> credentials;
  //! Where the package metadata read from an image's layers is kept, per manifest digest
  //! ("" = nothing kept: every admission reads the layers again).
  std::string cache_dir;
  int64_t connect_timeout_ms = 10000;
  //! The steps run on a cluster that pulls images itself (--backend k8s): admission checks
  //! each image reference's form only (the node's container runtime pulls it; no host
  //! environment, no local inspection of its packages).
  bool cluster_images = false;
};

//! Adds the credentials of spec.imagePullSecrets (`secrets`: their data, in the spec's order)
//! to `access`: each secret holds REGISTRY (host[:port] as written in image references;
//! "docker.io" for Docker Hub), USERNAME and PASSWORD. A secret without one of them is
//! INVALID_ARGUMENT at spec.imagePullSecrets[i] naming the missing keys (never a value).
Status AddPullSecrets(const spec::Workload& workload,
                      const std::vector<std::map<std::string, std::string>>& secrets,
                      ImageAccess* access);

//! An image as admission recorded it (the "model" admission report's environments).
struct RecordedImage {
  std::string kind;    //!< "python" or "root" (host environments) or "registry"
  std::string digest;  //!< registry: the linux/amd64 manifest digest
  std::string pinned;  //!< registry: registry/repository@digest, what the run uses
};

//! The images of a "model" admission report (JSON object {environments: [...]}, or the run's
//! whole report {model: {...}, ...}): image as written in the spec -> what was recorded.
//! Unparsable text gives an empty map.
std::map<std::string, RecordedImage> RecordedImages(const std::string& report_json);

//! What the admission check reports besides pass/fail.
struct EnvironmentAdmission {
  std::string event_reason;   //!< on failure: ImagePullBackOff, OutputSchemaMismatch, ...
  std::string event_message;  //!< the error's message, or on success what was checked
  std::string report_json;    //!< {environments, dependencySteps}
};

//! Admission, in this order, stopping at the first failure:
//!  1. every step with an `image` names a registered host environment or an image its
//!     registry has: resolved to the linux/amd64 manifest digest, or, where `pinned` names a
//!     digest for the image (a rollback: the digests of the run it re-runs), to that digest
//!     whatever the tag names now (IMAGE_NOT_FOUND with the registry's answer, event
//!     ImagePullBackOff); a step without `command` needs a host environment with an
//!     entrypoint (SPEC_INVALID, event CreateContainerConfigError);
//!  2. no step's declared `outputs` contradict model.signature (OUTPUT_SCHEMA_MISMATCH,
//!     event OutputSchemaMismatch, every contradiction in one message);
//!  3. model.dependencies hold in the environment of every model step (ModelSteps), as the
//!     environment is now (re-inspected; a registry image: its layers' package metadata,
//!     image_inspect.h), MODEL_DEPENDENCY_MISMATCH listing every difference
//!     (event ModelDependencyMismatch).
//! The report lists each image with its kind and digest (registry images also `reference`
//! and `pinned`), which RecordedImages reads back.
Status AdmitEnvironments(const spec::Workload& workload, ModelStores* stores,
                         EnvironmentAdmission* report, const ImageAccess& access = {},
                         const std::map<std::string, RecordedImage>& pinned = {});

//! Before a step with an image: resolves it (python -> the registered interpreter, PATH and
//! PYTHONPATH for root environments, the entrypoint for a step without command) by rewriting
//! the launch's `argv` and `env`. Steps without an image are left alone. An image admission
//! resolved from its registry (`recorded`, the run's admission report) sets RSL_IMAGE and
//! RSL_IMAGE_DIGEST to the recorded digest (never the tag's current one: a retry runs what
//! admission checked) and runs the command as a step without an image, on the host, until
//! steps run in containers.
Status ResolveImage(const spec::Step& step, ModelStores* stores, std::vector<std::string>* argv,
                    std::map<std::string, std::string>* env,
                    const std::map<std::string, RecordedImage>& recorded = {});

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
  //! The step's image as admission recorded it (kind "" when it has none or it is unknown).
  RecordedImage image;
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
