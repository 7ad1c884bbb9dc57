// seedctl run (docs/engine.md): the command's flags and the function that runs it.
#pragma once

#include "backend/factory.h"

#include <string>
#include <vector>

namespace rsl::cli {

struct RunFlags {
  std::string file;
  std::string state_dir;  //!< "" = $RSL_STATE_DIR, else ~/.local/state/rsl
  std::string node_file;
  std::string backend = "local";  //!< local | slurm | k8s
  std::string output = "table";   //!< table | json
  std::string sync = "full";      //!< full | normal
  std::string step_isolation = "auto";
  std::string runs_dir;
  bool recover = false;
  bool no_hooks = false;
  std::vector<std::string> insecure_registries;  //!< --insecure-registry (docs/image.md)
  //! --kubeconfig, --context, --k8s-namespace, --k8s-staging, --capability-labels.
  backend::BackendOptions k8s;
};

//! `seedctl run -f FILE`: admits and runs the workload in this process, with live progress
//! and a final table (or JSON); exit 1 unless it succeeded. With `recover`, finishes the runs
//! a killed `seedctl run` left in the state directory instead. SIGINT and SIGTERM cancel the
//! run (the function blocks them in every thread it starts).
void RunRun(const RunFlags& flags);

}  // namespace rsl::cli
