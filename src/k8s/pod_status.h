#pragma once

// What a Pod's status means for the RSL attempt it runs: pure functions over the Pod JSON as
// the API server returns it (status.phase, status.reason, conditions, containerStatuses[].
// state.{waiting,running,terminated}). No I/O; the backend feeds them the informer's objects.
//
//   Succeeded                                  -> kEnded, kSucceeded, exit code 0
//   Failed, container terminated exit N        -> kEnded, kFailed, exit code N
//   terminated reason OOMKilled                -> kEnded, kOomKilled (as the local backend)
//   pod reason DeadlineExceeded                -> kEnded, kTimedOut (activeDeadlineSeconds)
//   pod reason Evicted, DisruptionTarget=True, phase Unknown, or the caller saying its node is
//   lost (NotReady or deleted)                 -> kEnded, kNodeLost (no retry spent, as on Slurm)
//   waiting ErrImagePull / ImagePullBackOff    -> kBlocked, code IMAGE_NOT_FOUND, the registry's
//                                                 message; InvalidImageName ->
//                                                 IMAGE_REFERENCE_INVALID
//   waiting CreateContainerConfigError         -> kBlocked, code K8S_CONTAINER_CONFIG_ERROR
//                                                 (a missing Secret or ConfigMap key)
//   Pending otherwise                          -> kPending; Running -> kRunning
// kBlocked pods will not progress without someone changing the cluster: the backend deletes
// them and ends the attempt with `exit` (kFailed and the code).

#include <string>

#include <nlohmann/json.hpp>

#include "backend/backend.h"

namespace rsl::k8s {

struct PodOutcome {
  enum class State { kPending, kRunning, kEnded, kBlocked };
  State state = State::kPending;
  //! For kEnded and kBlocked: how the attempt ends (attempt_id left for the caller).
  backend::AttemptExit exit;
  std::string reason;  //!< the Kubernetes reason behind it (OOMKilled, Evicted, ...), if any
};

const char* Name(PodOutcome::State state);

//! Classifies a Pod. `node_lost`: the caller knows the pod's node is NotReady or gone (the
//! pod's own status lags behind until the node controller marks it).
PodOutcome ClassifyPod(const nlohmann::json& pod, bool node_lost = false);

}  // namespace rsl::k8s
