// How one attempt (LaunchSpec) becomes one Slurm batch job: the sbatch command line, the batch
// script that sets the step's complete environment and writes the exit record, and the
// masking of secrets in the step's log. Pure functions; docs/backends/slurm.md has the table.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/identity.h"
#include "base/status.h"

namespace rsl::backend::slurm {

//! Files the backend keeps per attempt, in a directory only RSL reads (0700): the batch
//! script, the environment (0600: it may hold secrets), the job id (for Adopt after a
//! restart) and, when the step has secrets, Slurm's raw output before masking.
struct AttemptFiles {
  std::string dir;
  std::string script;
  std::string env;
  std::string job_id;
  std::string raw_log;
  std::string container_config;  //!< a container step's OCI config template (0600)
};
//! Writes `contents` to `path` (via path.tmp and rename) readable by its owner alone when
//! `mode` says so (the environment file may hold secret values).
Status WritePrivateFile(const std::string& path, const std::string& contents, mode_t mode);

//! <base>/<attempt id with '/' and other unsafe characters turned into '_'>.
AttemptFiles AttemptPaths(const std::string& base, const std::string& attempt_id);

//! "rsl-<workload>-<step>", kept to the characters Slurm shows plainly.
std::string JobName(const LaunchSpec& spec);

//! Minutes for --time: the timeout rounded up to whole minutes (Slurm's granularity), >= 1.
int64_t TimeLimitMinutes(int64_t timeout_ms);

//! The comment RSL puts on its jobs: "rsl attempt=<id> namespace=<ns> <label>=<value>...".
//! Adopt finds jobs by the attempt id in it; accounting groups by namespace/labels.
std::string JobComment(const LaunchSpec& spec);

//! sbatch's argv (without the script path, which comes last):
//!   sbatch --parsable --no-requeue --job-name=... --chdir=... --output=LOG --error=LOG
//!   --open-mode=append --cpus-per-task=N [--mem=NM] [--gres=gpu:N] [--constraint=a&b]
//!   [--time=M] [--partition=P] [--exclude=a,b] --comment=... --wckey=<namespace>
//!   --export=NONE
//! `output` is where Slurm writes stdout+stderr (the step's log, or the raw log to mask);
//! `exclude`: nodes to keep the job off (a serving replica's anti-affinity).
std::vector<std::string> SbatchArgs(const LaunchSpec& spec, const std::string& partition,
                                    const std::string& output,
                                    const std::vector<std::string>& exclude = {});

//! The batch script: reads the NUL-separated environment file, runs argv under exactly that
//! environment in the working directory, and writes the exit record (JSON, atomically via
//! rename) to spec.exit_file in the local backend's key=value format (exit_code=, signal=,
//! oom=0, stop=, wall_ms=, cpu_ms=, peak_memory_bytes=, limits=slurm, message=), unless
//! the job id file no longer names this job (an orphan on a lost node). cpu_ms is the step's
//! user + system time (bash `times`: the step and the descendants it waited for);
//! peak_memory_bytes the high-water mark of the job's memory cgroup (Slurm's task/cgroup,
//! cgroup v1 or v2), 0 where the job has none. While the step runs, a sampler beside it
//! rewrites UsageFile(spec) every kUsageSampleSeconds (the job's cgroup, else /proc of its
//! processes): the monitor's live usage, and the usage of a step killed before the script
//! could write the exit record.
//! With `who`, the step runs as that identity (setpriv: uid, gid, no supplementary groups,
//! no capabilities) while the script, root, keeps writing the exit record.
//! With `container`, the step runs in its image instead (ContainerJob).
struct ContainerJob;
std::string BatchScript(const LaunchSpec& spec, const AttemptFiles& files,
                        const std::optional<StepIdentity>& who = std::nullopt,
                        const ContainerJob* container = nullptr);

//! A step that runs in its registry image (docs/backends/slurm.md "Container images"): the
//! controller writes the attempt's OCI config (backend/container.h, as the local backend
//! does) with two placeholders that only the node knows, and the batch script fills them in,
//! holds the bundle in use (a shared flock on its in-use file), runs `runc run` inside the
//! job's cgroup, and removes the container however the step ends (also when scancel'ed:
//! TERM is forwarded by runc, and the script deletes the container before it dies of it).
struct ContainerJob {
  std::string id;                 //!< runc's container id
  std::string config_template;    //!< the OCI config with the placeholders (mode 0600)
  std::string bundle_dir;         //!< where the script writes config.json for runc
  std::string runc;               //!< the runtime binary
  std::string runc_root;          //!< runc --root
  std::string in_use;             //!< the image bundle's in-use file
  std::vector<std::string> args;  //!< runc's arguments after --root R: [--log L] run ... ID
  //! The step asks for GPUs: the script adds the device nodes of those Slurm bound to the job
  //! (SLURM_JOB_GPUS, the node's indices: nvidia<i> in gpu_device_dir, and the control nodes
  //! that exist) with one allow rule each, at kGpuDevicesPlaceholder / kGpuRulesPlaceholder;
  //! inside they are 0..n-1 (CUDA_VISIBLE_DEVICES), as on the local backend.
  bool gpus = false;
  std::string gpu_device_dir = "/dev";
};
//! linux.cgroupsPath: the script puts its own cgroup of the job there (the memory cgroup on
//! v1, where Slurm's task/cgroup put it), so the container shares the job's limits and an OOM
//! kill is Slurm's to see; "/rsl-slurm/" + id when the script is in no cgroup of the job.
inline constexpr char kJobCgroupPlaceholder[] = "@RSL_JOB_CGROUP@";
//! One process.env entry the script replaces with RSL_SLURM=1 and what Slurm decided for the
//! job (the pass-through variables: SLURM_JOB_ID, CUDA_VISIBLE_DEVICES, ...).
inline constexpr char kSlurmEnvPlaceholder[] = "@RSL_SLURM_ENV@";
//! One linux.devices entry and one linux.resources.devices rule (after the deny-all) the
//! script of a GPU container replaces with the job's GPUs' device nodes and allow rules.
inline constexpr char kGpuDevicesPlaceholder[] = "@RSL_SLURM_GPU_DEVICES@";
inline constexpr char kGpuRulesPlaceholder[] = "@RSL_SLURM_GPU_RULES@";

//! "K=V\0K=V\0..." for the environment file.
std::string EnvFileContents(const LaunchSpec& spec);

//! A serving replica whose port its node chooses (the scheduler picks the node, so nobody
//! else can): its LaunchSpec's env has RSL_PORT set to this. The batch script then picks a
//! port nothing listens on there, passes it to the step as RSL_PORT and writes
//! "port=<n>\nnode=<SLURMD_NODENAME>\n" to PortFile(spec).
inline constexpr char kPortOnNode[] = "on-node";
//! <exit_file>.port: where a replica's job writes the port its node chose.
std::string PortFile(const LaunchSpec& spec);

//! How often the batch script's sampler rewrites UsageFile while the step runs.
inline constexpr int kUsageSampleSeconds = 2;
//! <exit_file>.usage: the step's usage so far, rewritten by the batch script's sampler
//! (key=value lines: wall_ms, cpu_ms, memory_bytes, peak_memory_bytes, peak_cpu_millicores,
//! cpu_from, memory_from).
std::string UsageFile(const LaunchSpec& spec);
//! One sample of UsageFile.
struct UsageSample {
  Usage usage;               //!< wall, CPU time, peak memory, peak CPU rate so far
  int64_t memory_bytes = 0;  //!< memory in use at the sample
  std::string cpu_from;      //!< cgroup-v1 | cgroup-v2 | proc
  std::string memory_from;   //!< cgroup-v1 | cgroup-v2 | proc
};
//! Parses UsageFile's contents; nothing when wall_ms or cpu_ms is missing or not a number.
std::optional<UsageSample> ParseUsageSample(const std::string& text);

//! Replaces every secret value in a stream of log bytes with "***", also when a secret is
//! split across two chunks: bytes that could be the start of a secret are held back until
//! the next chunk or Finish().
class LogMasker {
 public:
  explicit LogMasker(std::vector<std::string> secrets);
  //! Returns the masked bytes that are safe to write now.
  std::string Feed(std::string_view chunk);
  //! Returns whatever was held back (end of the stream).
  std::string Finish();

 private:
  std::string Process(bool final);
  std::vector<std::string> secrets_;
  size_t longest_ = 0;
  std::string pending_;
};

}  // namespace rsl::backend::slurm
