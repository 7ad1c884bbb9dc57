// The platform's vocabulary of states: run, step and attempt phases, event reasons and node
// states (SPEC.md "Lifecycle"). Inside the platform they are enums; each has ONE name table
// here, used only where the names cross a boundary: the store's rows, the API's JSON, the
// command line's output, a backend's or an inventory file's node states.
//
// Name(x) returns the stable string (what SQLite rows, JSON and tests hold); Parse*(s) is its
// inverse and answers an unknown name with an INVALID_ARGUMENT error naming the bad value and
// the known ones, never a crash.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace rsl::spec {

//! A workload run: PENDING -> RUNNING -> SUCCEEDED | FAILED | TIMED_OUT | CANCELLED, or
//! REJECTED when admission fails.
enum class RunPhase { kPending, kRunning, kSucceeded, kFailed, kTimedOut, kCancelled, kRejected };

//! A step of a run.
enum class StepPhase {
  kPending,
  kRunning,
  kRetrying,
  kSucceeded,
  kFailed,
  kSkipped,
  kTimedOut,
  kCancelled,
};

//! An attempt's record: written when it is launched, again when its exit is known.
enum class AttemptPhase { kLaunching, kExited };

//! Event reasons the platform itself records (Kubernetes-style). Hooks and policies may add
//! reasons of their own; those stay plain strings in the event log.
enum class EventReason {
  kAdmitted,
  kAdmissionFailed,
  kDataValidationFailed,
  kInsufficientResources,
  kCreateContainerConfigError,
  kImagePullBackOff,
  kScheduled,
  kSubmitted,
  kPending,
  kLimitsApplied,
  kStarted,
  kRunning,
  kProgress,
  kMetricsIgnored,
  kRetrying,
  kRescheduled,
  kOomKilled,
  kSucceeded,
  kFailed,
  kSkipped,
  kTimedOut,
  kCancelled,
  kRecovered,
  kOutputCommitted,
  kOutputCommitFailed,
  kOutputDiscarded,
  kOutputSuperseded,     //!< a later run's commit replaced this run's outputs
  kOutputCommitWaiting,  //!< its commit waits for a shared output root another run holds
  kRolledBack,
  // Serving steps (the replica supervisor, src/serve/).
  kServingReady,
  kServingNotReady,
  kScaledUp,
  kScaledDown,
  kReplicaRestarted,
  kSuperseded,  //!< a newer version of the workload took over the serving step's endpoint
  // postProcess hooks (webhooks after a step ended).
  kPostProcessSucceeded,
  kPostProcessFailed,
  kPostProcessSkipped,
  // The local backend pulls a step's container image off the launch path (docs/image.md).
  kImagePulling,
  kImagePulled,
};

//! Whether a node takes new work.
enum class NodeState { kReady, kNotReady, kDrained, kDown };

const char* Name(RunPhase phase);
const char* Name(StepPhase phase);
const char* Name(AttemptPhase phase);
const char* Name(EventReason reason);
const char* Name(NodeState state);

//! Errors: INVALID_ARGUMENT (unknown name; value set, hint lists the known names).
Result<RunPhase> ParseRunPhase(std::string_view name);
Result<StepPhase> ParseStepPhase(std::string_view name);
Result<AttemptPhase> ParseAttemptPhase(std::string_view name);
Result<EventReason> ParseEventReason(std::string_view name);
Result<NodeState> ParseNodeState(std::string_view name);

//! SUCCEEDED, FAILED, TIMED_OUT, CANCELLED, REJECTED.
bool IsTerminal(RunPhase phase);
//! SUCCEEDED, FAILED, SKIPPED, TIMED_OUT, CANCELLED.
bool IsTerminal(StepPhase phase);

}  // namespace rsl::spec
