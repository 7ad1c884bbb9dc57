#include "backend/slurm_job.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "backend/slurm_parse.h"
#include "base/codes.h"
#include "base/strings.h"
#include "spec/names.h"

namespace rsl::backend::slurm {
namespace {

constexpr int64_t kMsPerMinute = 60 * 1000;
constexpr size_t kMaxJobNameBytes = 120;  // squeue truncates long names in its tables anyway
// Variables Slurm sets in the batch job that the step needs (they override the step's own).
constexpr const char* kSlurmPassThrough[] = {
    "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "SLURM_JOB_ID",
    "SLURM_JOB_GPUS",       "SLURMD_NODENAME",    "SLURM_CPUS_PER_TASK",  "SLURM_MEM_PER_NODE"};

std::string Sanitize(std::string_view s, size_t max_bytes) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_';
    out += ok ? c : '_';
    if (out.size() >= max_bytes) break;
  }
  return out;
}

// Comments are one argv element; keep them free of characters that break `squeue -o`.
std::string CommentValue(std::string_view s) {
  std::string out;
  for (char c : s) out += (c == ' ' || c == '\n' || c == '\t' || c == '|') ? '_' : c;
  return out;
}

// What the step used, measured by the batch script once the step has ended (bash, no tools
// a node may lack):
//  - CPU: user + system time of the step and every descendant it waited for, from bash's
//    `times` (getrusage(RUSAGE_CHILDREN)); the builtin writes to a file because a $(times)
//    subshell would count its own, empty, children.
//  - peak memory: the high-water mark of the job's memory cgroup that Slurm's task/cgroup
//    made (v1 memory.max_usage_in_bytes, v2 memory.peak), page cache included as the cgroup
//    counts it; 0 when the script is not in a cgroup of this job (task/cgroup not
//    configured): the cgroup it shares with slurmd would measure the whole node.
constexpr const char kMeasureUsage[] = R"sh(rsl_cpu_ms=0; rsl_peak=0
rsl_times="${rsl_exit_file:-/tmp/rsl-slurm-$$}.times.$$"
if times > "$rsl_times" 2>/dev/null; then
  { read -r _ _; read -r rsl_u rsl_s; } < "$rsl_times"
  for t in "${rsl_u:-}" "${rsl_s:-}"; do
    if [[ $t =~ ^([0-9]+)m([0-9]+)[.,]([0-9]{3})s$ ]]; then
      rsl_cpu_ms=$(( rsl_cpu_ms + 10#${BASH_REMATCH[1]} * 60000 + 10#${BASH_REMATCH[2]} * 1000 + 10#${BASH_REMATCH[3]} ))
    fi
  done
fi
rm -f "$rsl_times"
while IFS=: read -r _ rsl_ctl rsl_cg; do
  case "$rsl_cg" in */job_${SLURM_JOB_ID:-none}/*) ;; *) continue ;; esac
  rsl_f=""
  if [ "$rsl_ctl" = memory ]; then rsl_f=/sys/fs/cgroup/memory$rsl_cg/memory.max_usage_in_bytes
  elif [ -z "$rsl_ctl" ]; then rsl_f=/sys/fs/cgroup$rsl_cg/memory.peak; fi
  if [ -n "$rsl_f" ] && [ -r "$rsl_f" ]; then read -r rsl_peak < "$rsl_f" || rsl_peak=0; break; fi
done < /proc/self/cgroup 2>/dev/null
[[ $rsl_peak =~ ^[0-9]+$ ]] || rsl_peak=0
)sh";

// Live usage while the step runs: a sampler beside the step (a bash subshell, started before
// the step and killed after it; it also stops once the script is gone) rewrites
// UsageFile(spec) every kUsageSampleSeconds, atomically (tmp + rename), the first time one
// interval after the start (a rate over the step's first milliseconds says nothing),
// for the backend's monitor to read (ReadUsageSample). Where the numbers come from:
//  - CPU: the job's cgroup (v2 cpu.stat usage_usec; v1 cpuacct.usage where the job has a
//    cpuacct cgroup, i.e. jobacct_gather/cgroup), else /proc of the job's processes (the
//    memory cgroup's cgroup.procs, else the script's process tree): utime + stime + the
//    children's they reaped, never decreasing;
//  - memory: the job's cgroup now and its high-water mark (v1 memory.usage_in_bytes and
//    max_usage_in_bytes, v2 memory.current and memory.peak), else the processes' RSS;
//  - peak_cpu_millicores: the highest CPU rate between two samples at least a second apart.
// The sampler leaves itself out of the /proc sums. It never leaves a process behind, and it
// ends as soon as the step has: it naps with `read -t` on a FIFO the script opened for it on
// fd 9 (a background `sleep` killed mid-fork stayed a zombie that kept the job COMPLETING
// until init reaped it, 1-3 s here), and the script writes "stop" there once the step ended,
// which ends the nap at once. The script also sends TERM (its trap is the sampler's first
// command; bash runs a trap only once a foreground child has ended, so no child is
// orphaned), but a TERM alone is not enough: bash 5.2 lost one that came while the
// sampler's subshell was still starting (1 script in ~2,400 of an instant step), the script
// waited for its sampler forever, and Slurm showed the job RUNNING until scancel. Without a
// FIFO (mkfifo failed) the sampler sleeps and only the TERM stops it.
constexpr const char kSampleUsage[] = R"sh(rsl_sample_usage() {
  trap 'exit 0' TERM
  local f="$rsl_exit_file.usage" tck=100 page=4096 v k line msg
  v=$(getconf CLK_TCK 2>/dev/null) && [[ $v =~ ^[1-9][0-9]*$ ]] && tck=$v
  v=$(getconf PAGESIZE 2>/dev/null) && [[ $v =~ ^[1-9][0-9]*$ ]] && page=$v
  local ctl cg procs="" cpuf="" memf="" peakf="" v2=0 cpu_from=proc mem_from=proc
  while IFS=: read -r _ ctl cg; do
    case "$cg" in */job_${SLURM_JOB_ID:-none}/*) ;; *) continue ;; esac
    if [ -z "$ctl" ]; then
      v2=1; cpuf=/sys/fs/cgroup$cg/cpu.stat; procs=/sys/fs/cgroup$cg/cgroup.procs
      memf=/sys/fs/cgroup$cg/memory.current; peakf=/sys/fs/cgroup$cg/memory.peak
    elif [[ ,$ctl, == *,cpuacct,* ]]; then cpuf=/sys/fs/cgroup/cpuacct$cg/cpuacct.usage
    elif [ "$ctl" = memory ]; then
      procs=/sys/fs/cgroup/memory$cg/cgroup.procs
      memf=/sys/fs/cgroup/memory$cg/memory.usage_in_bytes
      peakf=/sys/fs/cgroup/memory$cg/memory.max_usage_in_bytes
    fi
  done < /proc/self/cgroup
  [ -n "$cpuf" ] && [ -r "$cpuf" ] && cpu_from=cgroup-v$(( v2 ? 2 : 1 ))
  [ -n "$memf" ] && [ -r "$memf" ] && mem_from=cgroup-v$(( v2 ? 2 : 1 ))
  local now wall cpu mem peak=0 pk=0 hi_cpu=0 last_cpu=0 last_wall=0 ticks rss r pid
  local -a pids fs
  while :; do
    if [ -n "$rsl_nap" ]; then
      read -r -t "$rsl_sample_s" -u 9 msg && [ "$msg" = stop ] && break
    else
      sleep "$rsl_sample_s"
    fi
    kill -0 $$ 2>/dev/null || break
    now=${EPOCHREALTIME//[.,]/}; wall=$(( now / 1000 - rsl_start ))
    cpu=-1; mem=-1
    if [ "$cpu_from" != proc ]; then
      if (( v2 )); then
        while read -r k v; do [ "$k" = usage_usec ] && cpu=$(( v / 1000 )); done < "$cpuf"
      elif read -r v < "$cpuf" && [[ $v =~ ^[0-9]+$ ]]; then cpu=$(( v / 1000000 )); fi
    fi
    if [ "$mem_from" != proc ] && read -r v < "$memf" && [[ $v =~ ^[0-9]+$ ]]; then mem=$v; fi
    if [ -n "$peakf" ] && read -r v < "$peakf" && [[ $v =~ ^[0-9]+$ ]] && (( v > peak )); then
      peak=$v
    fi
    if (( cpu < 0 || mem < 0 )); then
      pids=()
      if [ -n "$procs" ] && [ -r "$procs" ]; then
        mapfile -t pids < "$procs"
      else
        local -A kids=()
        for k in /proc/[0-9]*/stat; do
          read -r line < "$k" || continue
          fs=(${line##*) }); pid=${k#/proc/}; kids[${fs[1]}]+=" ${pid%/stat}"
        done
        local queue=" $$"
        while [ -n "${queue// /}" ]; do
          pid=${queue##* }; queue=${queue% *}
          [ "$pid" = "$BASHPID" ] && continue
          pids+=("$pid"); queue+="${kids[$pid]:-}"
        done
        unset kids
      fi
      ticks=0; rss=0
      for pid in "${pids[@]}"; do
        [ "$pid" = "$BASHPID" ] && continue
        read -r line < "/proc/$pid/stat" || continue
        fs=(${line##*) })
        ticks=$(( ticks + fs[11] + fs[12] + fs[13] + fs[14] )); rss=$(( rss + fs[21] ))
      done
      (( cpu < 0 )) && cpu=$(( ticks * 1000 / tck ))
      (( mem < 0 )) && mem=$(( rss * page ))
    fi
    (( cpu < hi_cpu )) && cpu=$hi_cpu
    hi_cpu=$cpu
    (( mem > peak )) && peak=$mem
    if (( wall - last_wall >= 1000 )); then
      r=$(( (cpu - last_cpu) * 1000 / (wall - last_wall) )); (( r > pk )) && pk=$r
      last_cpu=$cpu; last_wall=$wall
    fi
    printf 'wall_ms=%d\ncpu_ms=%d\nmemory_bytes=%d\npeak_memory_bytes=%d\npeak_cpu_millicores=%d\ncpu_from=%s\nmemory_from=%s\n' \
      "$wall" "$cpu" "$mem" "$peak" "$pk" "$cpu_from" "$mem_from" > "$f.tmp" && mv -f "$f.tmp" "$f"
  done
}
)sh";

// A serving replica's port, chosen on the node it landed on (bash and grep): a port no socket
// of the node listens on (/proc/net/tcp and tcp6, state 0A; read by grep in one go: bash's
// `read` takes such a file in small pieces, and each piece makes the kernel walk the socket
// table again, which took minutes on a node with tens of thousands of sockets in TIME_WAIT), at
// random below the kernel's ephemeral range (so no outgoing connection takes it meanwhile), handed
// to the step as RSL_PORT (the later of two assignments wins in env -i) and written to the port
// file for the controller. Two replicas that pick the same port at the same instant: one fails to
// bind, exits, and its restart picks again.
std::string PickPort(const std::string& port_file) {
  std::string s;
  s += "rsl_port_file=" + ShellQuote(port_file) + "\n";
  s += R"sh(rsl_used=" "
rsl_listen=$(grep -h ' 0A ' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
while read -r _ rsl_local _ rsl_st _; do
  [[ $rsl_st == 0A && $rsl_local == *:* ]] && rsl_used+="$((16#${rsl_local##*:})) "
done <<< "$rsl_listen"
rsl_hi=32768
read -r rsl_lo _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && rsl_hi=$rsl_lo
rsl_lo=$(( rsl_hi - 12000 ))
(( rsl_lo >= 1024 )) || { rsl_lo=40000; rsl_hi=60000; }
rsl_port=0
for (( rsl_i = 0; rsl_i < 200; rsl_i++ )); do
  rsl_p=$(( rsl_lo + (RANDOM * 32768 + RANDOM) % (rsl_hi - rsl_lo) ))
  case "$rsl_used" in *" $rsl_p "*) continue ;; esac
  rsl_port=$rsl_p; break
done
[ "$rsl_port" -gt 0 ] || { echo "rsl: no free port on ${SLURMD_NODENAME:-this node}" >&2; exit 75; }
rsl_env+=("RSL_PORT=$rsl_port")
printf 'port=%d\nnode=%s\n' "$rsl_port" "${SLURMD_NODENAME:-}" > "$rsl_port_file.tmp.$$" &&
  mv -f "$rsl_port_file.tmp.$$" "$rsl_port_file"
)sh";
  return s;
}

}  // namespace

Status WritePrivateFile(const std::string& path, const std::string& contents, mode_t mode) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return OsError(codes::kIoError, "cannot create", tmp, errno);
  ::fchmod(fd, mode);
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return OsError(codes::kIoError, "cannot write", tmp, e);
    }
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return OsError(codes::kIoError, "cannot rename onto", path, errno);
  }
  return Status::Ok();
}

std::string PortFile(const LaunchSpec& spec) { return spec.exit_file + ".port"; }

std::string UsageFile(const LaunchSpec& spec) { return spec.exit_file + ".usage"; }

std::optional<UsageSample> ParseUsageSample(const std::string& text) {
  std::map<std::string, std::string> kv;
  for (const auto& line : Split(text, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  auto num = [&kv](const char* key, int64_t* out) {
    auto it = kv.find(key);
    if (it == kv.end() || it->second.empty()) return false;
    for (char c : it->second) {
      if (c < '0' || c > '9') return false;
    }
    *out = std::atoll(it->second.c_str());
    return true;
  };
  UsageSample u;
  if (!num("wall_ms", &u.usage.wall_ms) || !num("cpu_ms", &u.usage.cpu_ms)) return std::nullopt;
  num("memory_bytes", &u.memory_bytes);
  num("peak_memory_bytes", &u.usage.peak_memory_bytes);
  num("peak_cpu_millicores", &u.usage.peak_cpu_millicores);
  u.cpu_from = kv["cpu_from"];
  u.memory_from = kv["memory_from"];
  return u;
}

AttemptFiles AttemptPaths(const std::string& base, const std::string& attempt_id) {
  AttemptFiles f;
  f.dir = base + "/" + Sanitize(attempt_id, 240);
  f.script = f.dir + "/job.sh";
  f.env = f.dir + "/env";
  f.job_id = f.dir + "/job_id";
  f.raw_log = f.dir + "/output.raw";
  f.container_config = f.dir + "/container.json";
  return f;
}

std::string JobName(const LaunchSpec& spec) {
  return Sanitize("rsl-" + spec.workload_name + "-" + spec.step, kMaxJobNameBytes);
}

int64_t TimeLimitMinutes(int64_t timeout_ms) {
  return std::max<int64_t>(1, (timeout_ms + kMsPerMinute - 1) / kMsPerMinute);
}

std::string JobComment(const LaunchSpec& spec) {
  std::string c = "rsl attempt=" + CommentValue(spec.attempt_id);
  if (!spec.namespace_.empty()) c += " namespace=" + CommentValue(spec.namespace_);
  for (const auto& [k, v] : spec.labels) {
    if (k == "namespace" && !spec.namespace_.empty()) continue;  // said once, above
    c += " " + CommentValue(k) + "=" + CommentValue(v);
  }
  return c;
}

std::vector<std::string> SbatchArgs(const LaunchSpec& spec, const std::string& partition,
                                    const std::string& output,
                                    const std::vector<std::string>& exclude) {
  std::vector<std::string> a = {"sbatch", "--parsable", "--no-requeue"};
  a.push_back("--job-name=" + JobName(spec));
  if (!spec.workdir.empty()) a.push_back("--chdir=" + spec.workdir);
  a.push_back("--output=" + output);
  a.push_back("--error=" + output);
  a.push_back("--open-mode=append");
  int64_t cpus = std::max<int64_t>(1, (spec.cpu_millis + 999) / 1000);
  a.push_back("--cpus-per-task=" + std::to_string(cpus));
  if (spec.memory_bytes > 0) {
    a.push_back("--mem=" + std::to_string((spec.memory_bytes + kMiB - 1) / kMiB) + "M");
  }
  if (spec.gpus > 0) a.push_back("--gres=gpu:" + std::to_string(spec.gpus));
  if (!spec.capabilities.empty()) a.push_back("--constraint=" + Join(spec.capabilities, "&"));
  if (spec.timeout_ms) a.push_back("--time=" + std::to_string(TimeLimitMinutes(*spec.timeout_ms)));
  if (!partition.empty()) a.push_back("--partition=" + partition);
  if (!exclude.empty()) a.push_back("--exclude=" + Join(exclude, ","));
  a.push_back("--comment=" + JobComment(spec));
  if (!spec.namespace_.empty()) a.push_back("--wckey=" + CommentValue(spec.namespace_));
  // The batch script sets the step's complete environment itself (env -i); nothing of the
  // controller's own environment travels with the job.
  a.push_back("--export=NONE");
  return a;
}

std::string EnvFileContents(const LaunchSpec& spec) {
  std::string out;
  for (const auto& [k, v] : spec.env) {
    out += k;
    out += '=';
    out += v;
    out += '\0';
  }
  return out;
}

namespace {

// A GPU container's devices (ContainerJob::gpus): for each GPU Slurm bound to the job
// (SLURM_JOB_GPUS), the device node nvidia<i> in $rsl_gdir at /dev/nvidia<i> with its major,
// minor, mode and owner (stat), and an allow rule; then the control nodes that exist. JSON
// for the config's two placeholders; the environment the step sees (renumbered 0..n-1, the
// node's indices in NVIDIA_VISIBLE_DEVICES and RSL_GPU_HOST_INDICES). A bound GPU without its
// node fails the job before runc (exit 126, GPU_DEVICE_NOT_FOUND in the step's log).
constexpr const char kGpuDevices[] = R"sh(rsl_gdev=""; rsl_grule='{"allow":false,"access":"rwm"}'
rsl_ghost=""; rsl_gcuda=""; rsl_gn=0
rsl_gadd() {
  [ -c "$1" ] || return 1
  local st ma mi mo u g
  st=$(stat -L -c '%t %T %a %u %g' "$1" 2>/dev/null) || return 1
  read -r ma mi mo u g <<< "$st"
  [[ "$ma $mi $mo $u $g" =~ ^[0-9a-f]+\ [0-9a-f]+\ [0-7]+\ [0-9]+\ [0-9]+$ ]] || return 1
  ma=$((16#$ma)); mi=$((16#$mi))
  rsl_gdev+="${rsl_gdev:+,}{\"path\":\"$2\",\"type\":\"c\",\"major\":$ma,\"minor\":$mi,\"fileMode\":$((8#$mo)),\"uid\":$u,\"gid\":$g}"
  rsl_grule+=",{\"allow\":true,\"type\":\"c\",\"major\":$ma,\"minor\":$mi,\"access\":\"rwm\"}"
}
IFS=, read -ra rsl_gidx <<< "${SLURM_JOB_GPUS:-}"
for rsl_i in "${rsl_gidx[@]}"; do
  [[ $rsl_i =~ ^[0-9]+$ ]] || continue
  if ! rsl_gadd "$rsl_gdir/nvidia$rsl_i" "/dev/nvidia$rsl_i"; then
    echo "rsl: GPU_DEVICE_NOT_FOUND: the job's GPU $rsl_i (SLURM_JOB_GPUS=$SLURM_JOB_GPUS) has no device node $rsl_gdir/nvidia$rsl_i on ${SLURMD_NODENAME:-this node} (check the NVIDIA driver there: nvidia-smi; RSL_GPU_DEVICE_DIR on the controller names another device directory)" >&3
    exit 126
  fi
  rsl_ghost+="${rsl_ghost:+,}$rsl_i"; rsl_gcuda+="${rsl_gcuda:+,}$rsl_gn"; rsl_gn=$((rsl_gn + 1))
done
for rsl_c in nvidiactl nvidia-uvm nvidia-uvm-tools nvidia-modeset; do
  rsl_gadd "$rsl_gdir/$rsl_c" "/dev/$rsl_c" || true
done
rsl_senv+=",\"CUDA_VISIBLE_DEVICES=$rsl_gcuda\",\"NVIDIA_VISIBLE_DEVICES=$rsl_ghost\",\"RSL_GPU_HOST_INDICES=$rsl_ghost\""
)sh";

// The container's part of the batch script (see ContainerJob): fill in the config, hold the
// bundle in use, and a function that runs runc with a plain environment. Values that go into
// the JSON config by sed are checked to hold no character JSON or sed would need escaped.
std::string ContainerPrologue(const ContainerJob& c, bool port_on_node) {
  std::string s;
  s += "rsl_cid=" + ShellQuote(c.id) + "\n";
  s += "rsl_bundle=" + ShellQuote(c.bundle_dir) + "\n";
  s += "rsl_runc() { /usr/bin/env -i "
       "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin " +
       ShellQuote(c.runc) + " --root " + ShellQuote(c.runc_root) + " \"$@\"; }\n";
  s += R"sh(rsl_cg=""
while IFS=: read -r _ rsl_ctl rsl_p; do
  case "$rsl_p" in */job_${SLURM_JOB_ID:-none}/*) ;; *) continue ;; esac
  if [ "$rsl_ctl" = memory ] || [ -z "$rsl_ctl" ]; then rsl_cg=$rsl_p; break; fi
done < /proc/self/cgroup 2>/dev/null
[[ $rsl_cg =~ ^[A-Za-z0-9_./:-]+$ ]] || rsl_cg=/rsl-slurm/$rsl_cid
rsl_senv='"RSL_SLURM=1"'
)sh";
  // A GPU container's CUDA_VISIBLE_DEVICES is its own (0..n-1), not Slurm's.
  s += "for v in " +
       Join(std::vector<std::string>(std::begin(kSlurmPassThrough), std::end(kSlurmPassThrough)),
            " ") +
       "; do " + (c.gpus ? "[ \"$v\" = CUDA_VISIBLE_DEVICES ] && continue; " : "") +
       "[ -n \"${!v+x}\" ] && [[ ${!v} =~ ^[A-Za-z0-9,._:/-]*$ ]] && "
       "rsl_senv+=\",\\\"$v=${!v}\\\"\"; done\n";
  std::string sed_more;  // the GPUs and the port
  if (c.gpus) {
    s += "rsl_gdir=" + ShellQuote(c.gpu_device_dir) + "\n";
    s += kGpuDevices;
    sed_more = " -e \"s|\\\"" + std::string(kGpuDevicesPlaceholder) +
               "\\\"|$rsl_gdev|\" -e \"s|\\\"" + kGpuRulesPlaceholder + "\\\"|$rsl_grule|\"";
  }
  // A serving replica's port, chosen above on this node (PickPort): in the config's env too.
  if (port_on_node) {
    sed_more +=
        " -e \"s|\\\"RSL_PORT=" + std::string(kPortOnNode) + "\\\"|\\\"RSL_PORT=$rsl_port\\\"|\"";
  }
  s += "rsl_fail() { echo \"rsl: cannot write the container config in $rsl_bundle on "
       "${SLURMD_NODENAME:-this node}\" >&3; exit 126; }\n";
  s += "mkdir -p \"$rsl_bundle\" || rsl_fail\n";
  s += "(umask 077; sed -e \"s|\\\"" + std::string(kSlurmEnvPlaceholder) +
       "\\\"|$rsl_senv|\" -e \"s|" + kJobCgroupPlaceholder + "|$rsl_cg|\"" + sed_more + " " +
       ShellQuote(c.config_template) + " > \"$rsl_bundle/config.json\") || rsl_fail\n";
  // The bundle stays in use (never evicted) while the step runs, also without a controller.
  s += "exec 8<" + ShellQuote(c.in_use) + " && flock -s 8\n";
  return s;
}

}  // namespace

std::string BatchScript(const LaunchSpec& spec, const AttemptFiles& files,
                        const std::optional<StepIdentity>& who, const ContainerJob* container) {
  std::string argv;
  for (const auto& a : (container ? container->args : spec.argv)) argv += " " + ShellQuote(a);
  std::string s;
  s += "#!/bin/bash\n";
  s += "# RSL attempt " + CommentValue(spec.attempt_id) + " (written by the Slurm backend)\n";
  s += "set -u\n";
  s += "rsl_env_file=" + ShellQuote(files.env) + "\n";
  s += "rsl_exit_file=" + ShellQuote(spec.exit_file) + "\n";
  s += "rsl_env=()\n";
  s += "while IFS= read -r -d '' kv; do rsl_env+=(\"$kv\"); done < \"$rsl_env_file\"\n";
  // What Slurm decided for this job travels into the step's otherwise complete environment:
  // the GPUs it bound (gres/gpu), the job id and the node.
  s += "for v in " +
       Join(std::vector<std::string>(std::begin(kSlurmPassThrough), std::end(kSlurmPassThrough)),
            " ") +
       "; do [ -n \"${!v+x}\" ] && rsl_env+=(\"$v=${!v}\"); done\n";
  if (!spec.workdir.empty()) {
    s += "cd " + ShellQuote(spec.workdir) + " || exit 126\n";
  }
  auto port = spec.env.find("RSL_PORT");
  bool port_on_node = port != spec.env.end() && port->second == kPortOnNode;
  if (port_on_node) s += PickPort(PortFile(spec));
  s += "rsl_start=$(date +%s%3N)\n";
  // Not exec: the script outlives the step to write its exit record. scancel signals every
  // process of the job, so the step gets SIGTERM directly.
  std::string drop;
  if (who && !container) {  // a container's user is in its config (runc runs as root)
    drop = "/usr/bin/setpriv --reuid=" + std::to_string(who->uid) +
           " --regid=" + std::to_string(who->gid) +
           " --clear-groups --inh-caps=-all --bounding-set=-all -- ";
  }
  // The step's stderr goes where Slurm sends it (fd 3); the script's own stderr is dropped
  // so bash's "line N: PID Killed ..." report of a signalled step never reaches the log.
  s += "exec 3>&2 2>/dev/null\n";
  s += "rsl_sample_s=" + std::to_string(kUsageSampleSeconds) + "\n";
  s += kSampleUsage;
  s += "rsl_sampler=; rsl_nap=\n";
  s += "if [ -n \"$rsl_exit_file\" ]; then\n";
  s += "  rm -f \"$rsl_exit_file.usage.nap\"\n";
  s += "  mkfifo -m 600 \"$rsl_exit_file.usage.nap\" && exec 9<>\"$rsl_exit_file.usage.nap\" && "
       "rsl_nap=1\n";
  s += "  rm -f \"$rsl_exit_file.usage.nap\"\n";
  s += "  rsl_sample_usage </dev/null >/dev/null 2>&1 3>&- &\n";
  s += "  rsl_sampler=$!\n";
  s += "fi\n";
  if (container) {
    s += ContainerPrologue(*container, port_on_node);
    // scancel's TERM reaches runc, which forwards it into the container; the script waits
    // for runc to end (a trapped signal runs its trap after the foreground command), deletes
    // the container and then dies of the TERM as a host step's script does.
    s += "rsl_term=\ntrap 'rsl_term=1' TERM\n";
    s += "rsl_runc" + argv + " 2>&3 3>&- 9>&-\n";
    s += "rsl_rc=$?\n";
    s += "rsl_runc delete --force \"$rsl_cid\" >/dev/null 2>&1\n";
    // runc made the job's cgroup path in the hierarchies Slurm does not use (cpu, pids,
    // blkio, ...) and removes only its leaf: the empty rest goes too (one that still holds a
    // process, as the script's own does, is not empty and stays for Slurm).
    s += "for rsl_h in /sys/fs/cgroup/*/; do rsl_d=$rsl_h${rsl_cg#/}\n"
         "  while [[ $rsl_d == */job_${SLURM_JOB_ID:-none}* ]]; do\n"
         "    if [ -d \"$rsl_d\" ]; then rmdir \"$rsl_d\" 2>/dev/null || break; fi\n"
         "    rsl_d=${rsl_d%/*}\n"
         "  done\n"
         "done\n";
    s += "rm -f \"$rsl_bundle/config.json\"\n";
    s += "if [ -n \"$rsl_term\" ]; then trap - TERM; kill -TERM $$; fi\n";
  } else {
    s += drop + "/usr/bin/env -i \"${rsl_env[@]}\"" + argv + " 2>&3 3>&- 9>&-\n";
    s += "rsl_rc=$?\n";
  }
  // The sampler's FIFO (fd 9) is not the step's: closed for it above, and here after the
  // sampler has gone.
  s += "if [ -n \"$rsl_sampler\" ]; then\n";
  s += "  [ -n \"$rsl_nap\" ] && echo stop >&9\n";
  s += "  kill \"$rsl_sampler\" 2>/dev/null; wait \"$rsl_sampler\"\n";
  s += "fi\n";
  s += "exec 9>&-\n";
  s += "rsl_wall=$(( $(date +%s%3N) - rsl_start ))\n";
  s += kMeasureUsage;
  s += "rsl_sig=0; rsl_code=$rsl_rc\n";
  s += "if [ $rsl_rc -gt 128 ]; then rsl_sig=$((rsl_rc - 128)); rsl_code=-1; fi\n";
  // Only the live job writes the exit record: once the backend gave this job up (node lost)
  // or launched the attempt again, the job id file no longer names it. A missing file is a
  // job faster than sbatch's return.
  s += "rsl_job=$(cat " + ShellQuote(files.job_id) + " 2>/dev/null || true)\n";
  s += "if [ -n \"$rsl_exit_file\" ] && { [ -z \"$rsl_job\" ] || "
       "[ \"$rsl_job\" = \"${SLURM_JOB_ID:-}\" ]; }; then\n";
  // The same key=value record as the local backend's rsl-shim (local.h: ReadExitFile).
  s += "  printf 'exit_code=%d\\nsignal=%d\\noom=0\\nstop=\\nwall_ms=%d\\ncpu_ms=%d\\n"
       "peak_memory_bytes=%d\\nlimits=slurm\\nmessage=\\n' "
       "\"$rsl_code\" \"$rsl_sig\" \"$rsl_wall\" \"$rsl_cpu_ms\" \"$rsl_peak\" "
       "> \"$rsl_exit_file.tmp.$$\" &&\n";
  s += "    mv -f \"$rsl_exit_file.tmp.$$\" \"$rsl_exit_file\"\n";
  s += "fi\n";
  s += "exit $rsl_rc\n";
  return s;
}

LogMasker::LogMasker(std::vector<std::string> secrets) {
  for (auto& s : secrets) {
    if (spec::MaskedInLogs(s)) secrets_.push_back(std::move(s));  // too short: left alone
  }
  // Longest first, so a secret that contains another is masked whole.
  std::sort(secrets_.begin(), secrets_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& s : secrets_) longest_ = std::max(longest_, s.size());
}

std::string LogMasker::Feed(std::string_view chunk) {
  pending_.append(chunk);
  return Process(false);
}

std::string LogMasker::Finish() { return Process(true); }

std::string LogMasker::Process(bool final) {
  if (secrets_.empty()) return std::exchange(pending_, "");
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    size_t left = pending_.size() - i;
    // A longer secret could start here but the chunk ends first: wait for more bytes.
    bool maybe = false;
    for (const auto& s : secrets_) {
      if (!final && left < s.size() && pending_.compare(i, left, s, 0, left) == 0) maybe = true;
    }
    if (maybe) break;
    bool matched = false;
    for (const auto& s : secrets_) {  // longest first
      if (left >= s.size() && pending_.compare(i, s.size(), s) == 0) {
        out += "***";
        i += s.size();
        matched = true;
        break;
      }
    }
    if (matched) continue;
    out += pending_[i++];
  }
  pending_.erase(0, i);
  return out;
}

}  // namespace rsl::backend::slurm
