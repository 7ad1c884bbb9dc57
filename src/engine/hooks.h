// Extension points through which other parts plug into a run, without the engine knowing
// them: data validation and image/dependency checks at admission, signature and
// fingerprint checks after a step, cost accounting and cost policies.
//
// Extend if needed; do not break what others rely on.
// Hooks are called from engine threads; a hook must be thread-safe if it keeps state.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/codes.h"
#include "base/status.h"
#include "spec/workload.h"

namespace rsl::engine {

//! What a hook knows about the run it is called for.
struct RunInfo {
  std::string workload_id;  //!< wl-YYYYMMDD-<8 hex>
  std::string run_id;
  std::string state_dir;  //!< the controller's / `seedctl run`'s state directory
  std::string run_dir;    //!< <state_dir>/runs/<run_id>
  const spec::Workload* workload = nullptr;
  //! The DataDescriptors admission reported (JSON objects {uri, rows, digest or snapshot,
  //! schemaFingerprint, ...}): set for step hooks, also after the engine recovered the run.
  std::vector<std::string> input_descriptors_json{};
  //! The run's admission report as stored ({check name: report}): set for step hooks, also
  //! after the engine recovered the run (what admission pinned, e.g. image digests).
  std::string admission_report_json{};
  //! For admission checks of a rollback: the admission report of the run of the version it
  //! re-runs ("" otherwise), so that the re-run pins what that run used.
  std::string rerun_admission_report_json{};
  //! For admission checks: the data of the secrets spec.imagePullSecrets names, in order
  //! (secret values: never to be logged or reported).
  std::vector<std::map<std::string, std::string>> image_pull_secrets{};
};

//! What an admission check reports besides pass/fail; stored with the run and shown by
//! `describe` (report_json), and turned into lineage (descriptors_json).
struct AdmissionReport {
  std::string event_reason;   //!< on failure: DataValidationFailed, ImagePullBackOff, ...
  std::string event_message;  //!< on success, optional: e.g. "input: 10000 rows, 3 checks"
  std::string report_json;    //!< full report (JSON object), may be empty
  std::vector<std::string> input_descriptors_json;  //!< DataDescriptor JSON objects
};

//! Runs before any step starts; the first failure rejects the run (phase REJECTED, the
//! returned Error's code is the run's failure code, `report->event_reason` its event).
class AdmissionCheck {
 public:
  virtual ~AdmissionCheck() = default;
  virtual std::string name() const = 0;
  virtual Status Check(const RunInfo& run, AdmissionReport* report) = 0;
};

//! Lets a hook act on a running run (cost policies).
class RunControl {
 public:
  virtual ~RunControl() = default;
  //! Stops a running step (SIGTERM then SIGKILL). With `as_success` the step ends SUCCEEDED
  //! and its output is kept (e.g. a policy stopping a plateaued training); otherwise FAILED.
  virtual Status StopStep(const std::string& run_id, const std::string& step,
                          const std::string& reason, const std::string& message,
                          bool as_success) = 0;
  virtual void EmitEvent(const std::string& run_id, const std::string& step,
                         const std::string& reason, const std::string& message) = 0;
};

//! What a step's attempt produced, for AfterStep.
struct StepOutcome {
  std::string step;
  int attempt = 1;
  backend::AttemptExit exit;
  std::string staging_dir;   //!< the attempt's RSL_OUTPUT
  std::string metrics_json;  //!< what it wrote to RSL_METRICS_FILE ("{}" if nothing)
  int64_t allocated_cpu_millis = 0;
  int64_t allocated_memory_bytes = 0;
  int64_t allocated_gpus = 0;
  std::string gpu_model;  //!< of the node it ran on, if known
};

class StepHook {
 public:
  virtual ~StepHook() = default;
  virtual std::string name() const = 0;
  //! Before an attempt launches. May rewrite the launch (e.g. resolve the image: the command's
  //! interpreter and PATH) or refuse it (the step fails with the returned error, no retry).
  virtual Status BeforeStep(const RunInfo& run, const spec::Step& step,
                            backend::LaunchSpec* launch) {
    return Status::Ok();
  }
  //! The attempt is running (policies start watching RSL_METRICS_STREAM here).
  virtual void OnStepStarted(const RunInfo& run, const spec::Step& step,
                             const backend::LaunchSpec& launch, RunControl* control) {}
  //! After an attempt ended, before the engine decides success. For a succeeded attempt a
  //! returned error fails the step (OUTPUT_SCHEMA_MISMATCH, MODEL_FINGERPRINT_MISMATCH); it is
  //! not retried. Called for failed attempts too (cost accounting), whose return is ignored.
  virtual Status AfterStep(const RunInfo& run, const spec::Step& step, const StepOutcome& outcome) {
    return Status::Ok();
  }
  //! The run reached a terminal phase (after commit or discard). `committed_uri` is where the
  //! outputs were published ("" when discarded).
  virtual void AfterRun(const RunInfo& run, const std::string& phase,
                        const std::string& committed_uri) {}
};

//! Where outputs go when data.output.uri is not a local file:// path (s3://, ceph://,
//! hdfs://, or an authority a `local` datasource maps onto a directory). Provided by the
//! data layer (data::OpenStorage); without one, such outputs are published under the run
//! directory and an event says so.
//! One object of an object store with its version tag (the ETag).
struct StoredObject {
  std::string bytes;
  std::string etag;
};

class OutputPublisher {
 public:
  virtual ~OutputPublisher() = default;
  //! A local directory that serves `uri` (a `local` datasource), or "" if none.
  virtual std::string LocalPath(const std::string& uri) { return ""; }
  //! Can Publish write to `uri`?
  virtual bool Handles(const std::string& uri) = 0;
  //! Publishes every file below `local_dir` at `dest_uri`, all or nothing (manifest last).
  //! Must be idempotent: called again after a crash with the same arguments.
  virtual Status Publish(const std::string& local_dir, const std::string& dest_uri) = 0;

  // Object-store roots: the conditional object operations the commit protocol uses (its
  // lease and its manifest, engine/object_root.h). A publisher that has none (the default)
  // publishes without them: commits to one root are then not serialized.

  //! Whether `uri` is served by a store with ETags and conditional writes (s3://, ceph://).
  virtual bool ConditionalWrites(const std::string& uri) { return false; }
  //! One object and its ETag. A missing object: NOT_FOUND.
  virtual Result<StoredObject> ReadObject(const std::string& uri) {
    return Error(codes::kInvalidArgument, "no conditional object operations").Value(uri);
  }
  //! Writes one object if its ETag is `if_match`, or, with `if_match` empty, if no object
  //! exists; returns the new ETag. A condition that does not hold: CONFLICT.
  virtual Result<std::string> WriteObjectIf(const std::string& uri, const std::string& bytes,
                                            const std::string& if_match) {
    return Error(codes::kInvalidArgument, "no conditional object operations").Value(uri);
  }
  //! Removes an object or everything below a prefix; a missing one is not an error.
  virtual Status Remove(const std::string& uri) {
    return Error(codes::kInvalidArgument, "no conditional object operations").Value(uri);
  }
  //! The URIs of every object below the prefix `uri` (recursive), in any order; none: an
  //! empty list.
  virtual Result<std::vector<std::string>> ListObjects(const std::string& uri) {
    return Error(codes::kInvalidArgument, "no conditional object operations").Value(uri);
  }
};

//! The hooks a run uses; built by seedctl run and rsl-controller from what is configured.
struct Hooks {
  std::vector<std::shared_ptr<AdmissionCheck>> admission;
  std::vector<std::shared_ptr<StepHook>> steps;
  std::shared_ptr<OutputPublisher> publisher;  //!< may be null: file:// outputs only
};

}  // namespace rsl::engine
