// Chooses a Backend by name ("local" or "slurm"), as `seedctl run --backend` and
// `rsl-controller --backend` do. The Slurm part lives in slurm.h/.cc.
#pragma once

#include <memory>
#include <string>

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
};

Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name,
                                             const BackendOptions& options);

}  // namespace rsl::backend
