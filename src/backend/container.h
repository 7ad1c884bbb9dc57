// Running a local attempt in its container image (docs/image.md "Execution"): the OCI runtime
// config of one attempt, generated from the cached bundle (image/cache.h) and the attempt's
// LaunchSpec, and the command rsl-shim runs for it (`runc run`, in the attempt's cgroup).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "image/cache.h"

namespace rsl::backend {

//! Fixed paths inside every container (the RSL_* variables that name host paths below the
//! attempt's directories are rewritten to these).
inline constexpr char kContainerWorkdir[] = "/rsl/work";     // the attempt's working dir
inline constexpr char kContainerOutput[] = "/rsl/output";    // RSL_OUTPUT's staging dir
inline constexpr char kContainerInputs[] = "/rsl/inputs";    // dependencies' outputs: /N
inline constexpr char kContainerAttempt[] = "/rsl/attempt";  // the log's dir (progress file)
inline constexpr char kContainerPaths[] = "/rsl/paths";      // other RSL_* paths: /NAME
inline constexpr char kContainerInit[] = "/.rsl/init";       // rsl-cinit, PID 1

struct ContainerPlan {
  std::string id;                 //!< the runc container id: "rsl-" + sanitized attempt id
  std::string bundle_dir;         //!< holds config.json; root.path points into the image cache
  nlohmann::json config;          //!< the OCI runtime config
  std::vector<std::string> argv;  //!< rsl-shim runs: runc --root R [--log L] run --bundle B ID
  std::string gpus;               //!< what was passed of the placed GPUs ("" = none placed)
};

struct ContainerOptions {
  std::string runc = "runc";   //!< the runtime binary
  std::string runc_root;       //!< runc --root: <state-dir>/runc
  std::string containers_dir;  //!< bundles' config dirs: <state-dir>/containers
  std::string cinit;           //!< host path of rsl-cinit
  std::string cgroups_path;    //!< linux.cgroupsPath: the attempt's cgroup ("" = runc's)
  int64_t uid = -1, gid = -1;  //!< the step's identity; -1: the image's user
  //! Pass the placed GPUs (CUDA_VISIBLE_DEVICES of the step's env: host indices) as devices
  //! (docs/image.md "GPUs in containers"). Off where the placement is not this host's.
  bool gpu_devices = true;
};

//! The plan for running `spec` in `image`. No files written; it reads the host's GPU device
//! nodes (RSL_GPU_DEVICE_DIR, default /dev) and looks up nvidia-container-runtime-hook in PATH.
//! GPU_DEVICE_NOT_FOUND when a placed GPU's node is missing (unless RSL_GPUS_DECLARED_NOT_PROBED).
Result<ContainerPlan> PlanContainer(const LaunchSpec& spec, const image::CachedImage& image,
                                    const ContainerOptions& options);

//! The container id for an attempt.
std::string ContainerId(const std::string& attempt_id);

//! The runtime that runs registry images, for the local and the Slurm backend alike.
struct ContainerRuntime {
  std::string runc;   //!< absolute path; "" = no runtime (registry images run on the host)
  std::string cinit;  //!< rsl-cinit's host path
};
//! RSL_CONTAINER_RUNTIME (default "runc": looked up in PATH; a path: that binary; "none": no
//! runtime) and RSL_CINIT (default `cinit_dir`/rsl-cinit). Empty `runc` unless both exist.
ContainerRuntime FindContainerRuntime(const std::string& cinit_dir);

}  // namespace rsl::backend
