// Chooses a Backend by name ("local" or "slurm"; "k8s" is made by the runtime, a layer above), as
// `seedctl run --backend` and `rsl-controller --backend` do. The Slurm part lives in slurm.h/.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"

namespace rsl::backend {

struct BackendOptions {
  std::string state_dir;
  std::string node_file;        //!< local: devices declared, not probed
  std::string slurm_conf;       //!< slurm: SLURM_CONF to use ("" = environment/default)
  std::string slurm_partition;  //!< slurm: partition ("" = default); must exist
  //! slurm: how long live attempts wait for an unreachable slurmctld before they fail, a
  //! duration ("90s", "5m"); "" = 5m.
  std::string slurm_patience;
  //! Who steps run as (identity.h): auto | users | user:NAME | namespace | none.
  std::string isolation = "auto";
  //! Where the engine keeps run directories: isolated steps must be able to pass down to it
  //! (checked when the backend is made), and "namespace" hides it with the state directory.
  std::string runs_dir;
  // --backend k8s (built by the runtime: k8s/backend.h; docs/backends/k8s.md).
  std::string kubeconfig;                   //!< "" = KUBECONFIG, ~/.kube/config, in-cluster
  std::string kube_context;                 //!< "" = the kubeconfig's current-context
  std::vector<std::string> k8s_namespaces;  //!< "rslns=k8sns" each
  std::string k8s_staging;                  //!< s3://bucket/prefix or file:///shared/dir
  std::string capability_labels;            //!< capability -> node label table file
};

Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name,
                                             const BackendOptions& options);

}  // namespace rsl::backend
