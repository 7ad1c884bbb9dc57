// Makes the backend `seedctl run`, `seedctl node list` and rsl-controller ask for by name:
// local and slurm through backend/factory.h, k8s here (the k8s layer sits above backend, and
// its staging copies need the data layer's object-store client).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/factory.h"
#include "base/status.h"

namespace rsl::runtime {

//! "local", "slurm" or "k8s". For k8s: the connection (--kubeconfig/--context, else
//! KUBECONFIG, ~/.kube/config, the in-cluster service account), the namespace map
//! ("rsl=k8s" entries), the staging prefix and the capability label table; errors name the
//! flag (INVALID_ARGUMENT, KUBECONFIG_INVALID, K8S_LABEL_TABLE_INVALID).
Result<std::unique_ptr<backend::Backend>> MakeAnyBackend(const std::string& name,
                                                         const backend::BackendOptions& options);

//! Copies every object below `uri` (s3://, ceph://, file://) into local directory `dir`,
//! keeping relative paths (the k8s backend's staging fetch).
Status FetchPrefix(const std::string& uri, const std::string& dir);

}  // namespace rsl::runtime
