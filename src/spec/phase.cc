#include "spec/phase.h"

#include <iterator>
#include <utility>

#include "base/codes.h"

namespace rsl::spec {
namespace {

// One table per enum, in declaration order (Name indexes it by the enum's value).
constexpr const char* kRunPhaseNames[] = {"PENDING",   "RUNNING",   "SUCCEEDED", "FAILED",
                                          "TIMED_OUT", "CANCELLED", "REJECTED"};
constexpr const char* kStepPhaseNames[] = {"PENDING", "RUNNING", "RETRYING",  "SUCCEEDED",
                                           "FAILED",  "SKIPPED", "TIMED_OUT", "CANCELLED"};
constexpr const char* kAttemptPhaseNames[] = {"launching", "exited"};
constexpr const char* kEventReasonNames[] = {"Admitted",
                                             "AdmissionFailed",
                                             "DataValidationFailed",
                                             "InsufficientResources",
                                             "CreateContainerConfigError",
                                             "ImagePullBackOff",
                                             "Scheduled",
                                             "Submitted",
                                             "Pending",
                                             "LimitsApplied",
                                             "Started",
                                             "Running",
                                             "Progress",
                                             "MetricsIgnored",
                                             "Retrying",
                                             "Rescheduled",
                                             "OOMKilled",
                                             "Succeeded",
                                             "Failed",
                                             "Skipped",
                                             "TimedOut",
                                             "Cancelled",
                                             "Recovered",
                                             "OutputCommitted",
                                             "OutputCommitFailed",
                                             "OutputDiscarded",
                                             "OutputSuperseded",
                                             "OutputCommitWaiting",
                                             "RolledBack",
                                             "ServingReady",
                                             "ServingNotReady",
                                             "ScaledUp",
                                             "ScaledDown",
                                             "ReplicaRestarted",
                                             "Superseded",
                                             "PostProcessSucceeded",
                                             "PostProcessFailed",
                                             "PostProcessSkipped",
                                             "ImagePulling",
                                             "ImagePulled"};
constexpr const char* kNodeStateNames[] = {"Ready", "NotReady", "Drained", "Down"};

static_assert(std::size(kRunPhaseNames) == size_t(RunPhase::kRejected) + 1);
static_assert(std::size(kStepPhaseNames) == size_t(StepPhase::kCancelled) + 1);
static_assert(std::size(kAttemptPhaseNames) == size_t(AttemptPhase::kExited) + 1);
static_assert(std::size(kEventReasonNames) == size_t(EventReason::kImagePulled) + 1);
static_assert(std::size(kNodeStateNames) == size_t(NodeState::kDown) + 1);

template <typename E, size_t N>
Result<E> ParseIn(const char* const (&names)[N], std::string_view name, const char* what) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<E>(i);
  }
  std::string known;
  for (size_t i = 0; i < N; ++i) known += std::string(i ? ", " : "") + names[i];
  return Error(codes::kInvalidArgument,
               "unknown " + std::string(what) + " '" + std::string(name) + "'")
      .Value(std::string(name))
      .Hint("one of " + known);
}

}  // namespace

const char* Name(RunPhase phase) { return kRunPhaseNames[size_t(phase)]; }
const char* Name(StepPhase phase) { return kStepPhaseNames[size_t(phase)]; }
const char* Name(AttemptPhase phase) { return kAttemptPhaseNames[size_t(phase)]; }
const char* Name(EventReason reason) { return kEventReasonNames[size_t(reason)]; }
const char* Name(NodeState state) { return kNodeStateNames[size_t(state)]; }

Result<RunPhase> ParseRunPhase(std::string_view name) {
  return ParseIn<RunPhase>(kRunPhaseNames, name, "run phase");
}
Result<StepPhase> ParseStepPhase(std::string_view name) {
  return ParseIn<StepPhase>(kStepPhaseNames, name, "step phase");
}
Result<AttemptPhase> ParseAttemptPhase(std::string_view name) {
  return ParseIn<AttemptPhase>(kAttemptPhaseNames, name, "attempt phase");
}
Result<EventReason> ParseEventReason(std::string_view name) {
  return ParseIn<EventReason>(kEventReasonNames, name, "event reason");
}
Result<NodeState> ParseNodeState(std::string_view name) {
  return ParseIn<NodeState>(kNodeStateNames, name, "node state");
}

bool IsTerminal(RunPhase phase) {
  return phase != RunPhase::kPending && phase != RunPhase::kRunning;
}
bool IsTerminal(StepPhase phase) {
  return phase != StepPhase::kPending && phase != StepPhase::kRunning &&
         phase != StepPhase::kRetrying;
}

}  // namespace rsl::spec
