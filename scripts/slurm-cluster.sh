#!/usr/bin/env bash
# A throw-away Slurm 22.05 cluster on this one host, for the Slurm backend's tests and demos.
# Three slurmd (n1 n2 n3) with different Features and GRES counts (fake GPU char devices),
# one slurmctld, a private munged; everything lives under $RSL_SLURM_DIR.
#
# Usage (as root):  slurm-cluster.sh install | start | stop | status | env | start-node N |
#                   stop-ctld | start-ctld   (a slurmctld outage; the restart keeps its state)
#   eval "$(slurm-cluster.sh env)"   -> exports SLURM_CONF for sbatch/squeue/...
#
#   n1: 2 CPUs, 4000 MiB, gpu:4, Features=tensor_core,fp16_support
#   n2: 2 CPUs, 4000 MiB, gpu:2, Features=fp16_support
#   n3: 4 CPUs, 8000 MiB, no GPU, Features=cpu_only
#   --mem is enforced (task/cgroup, ConstrainRAMSpace; cgroup v1 or v2, whichever the host has).
#
# Pitfalls this script handles (learned on Debian 12 / Slurm 22.05):
#  - gres/gpu silently drops GPUs without File=; char devices (clones of /dev/null) are clean.
#  - `scontrol shutdown` leaves running jobs behind: scancel first, then shut down, then
#    stop the daemons by pid; job steps orphaned by a killed slurmd are found via environ.
#  - the munge socket directory must be o+x but not o+w.
#  - proctrack/pgid, not linuxproc: linuxproc finds a job's processes by walking /proc, and a
#    job cancelled while its batch script is starting leaves the step it was forking running
#    forever (seen: `sleep 300` with ppid 1 after scancel 11 ms after launch); the process
#    group catches it.
set -euo pipefail

BASE=${RSL_SLURM_DIR:-${TMPDIR:-/tmp}/rsl-slurm}
NODES="n1 n2 n3"                               # must match the NodeName lines below
CTLD_PORT=${RSL_SLURM_CTLD_PORT:-6817}
SLURMD_PORT_BASE=${RSL_SLURM_SLURMD_PORT_BASE:-17000}  # n1 -> base+1, ...
READY_TIMEOUT_S=${RSL_SLURM_READY_TIMEOUT:-60}
# 10 s: a killed slurmd is marked DOWN in ~26-29 s (the node-loss test's budget is 40 s).
SLURMD_TIMEOUT_S=10
export SLURM_CONF=$BASE/etc/slurm.conf
MUNGE_SOCK=$BASE/munge/munge.socket

log() { echo "[slurm-cluster] $*" >&2; }

# Runs a daemon without the caller's file descriptors beyond 0-2: munged keeps what it
# inherits, so a cluster started under `flock /tmp/rsl-cluster.lock ...` held that lock for
# as long as munged ran, and every later `flock` on it waited forever.
no_fds() {
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    exec "$@"
  )
}

do_install() {
  export DEBIAN_FRONTEND=noninteractive
  # Without systemd (or with policy-rc.d) the packages do not auto-start their daemons.
  if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
     ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
  fi
  log "installed: $(sbatch --version)"
}

write_config() {
  mkdir -p "$BASE"/{etc,state,log,run,fakedev}
  for n in $NODES; do mkdir -p "$BASE/spool/$n"; done
  for i in 0 1 2 3; do
    [ -c "$BASE/fakedev/gpu$i" ] || mknod "$BASE/fakedev/gpu$i" c 1 3 2>/dev/null ||
      touch "$BASE/fakedev/gpu$i"
  done
  local p1=$((SLURMD_PORT_BASE + 1)) p2=$((SLURMD_PORT_BASE + 2)) p3=$((SLURMD_PORT_BASE + 3))
  cat > "$BASE/etc/slurm.conf" <<CONF
ClusterName=rsl
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK,cred_expire=10
SlurmctldPort=$CTLD_PORT
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool/%n
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd-%n.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/pgid
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$BASE/log/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,bf_interval=5,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=$SLURMD_TIMEOUT_S
InactiveLimit=0
KillWait=5
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p1 CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000 Features=tensor_core,fp16_support Gres=gpu:4 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p2 CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000 Features=fp16_support Gres=gpu:2 State=UNKNOWN
NodeName=n3 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p3 CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 Features=cpu_only State=UNKNOWN
PartitionName=debug Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP
CONF
  write_cgroup_conf
  cat > "$BASE/etc/gres.conf" <<CONF
AutoDetect=off
NodeName=n1 Name=gpu File=$BASE/fakedev/gpu[0-3]
NodeName=n2 Name=gpu File=$BASE/fakedev/gpu[0-1]
CONF
}

# task/cgroup enforces --mem (ConstrainRAMSpace; a step over it ends OUT_OF_MEMORY) with
# the cgroup version the host mounts: v2 when /sys/fs/cgroup is cgroup2 (no systemd here to
# delegate a scope, hence IgnoreSystemd), else v1's memory controller. Swap is constrained
# too where the controller accounts it, so an over-limit step cannot hide in swap.
write_cgroup_conf() {
  local plugin=cgroup/v1 extra="" swap=no
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    plugin=cgroup/v2; extra="IgnoreSystemd=yes"
    ls /sys/fs/cgroup/*/memory.swap.max >/dev/null 2>&1 && swap=yes
  else
    [ -e /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes ] && swap=yes
  fi
  cat > "$BASE/etc/cgroup.conf" <<CONF
CgroupPlugin=$plugin
CgroupAutomount=no
CgroupMountpoint=/sys/fs/cgroup
$extra
ConstrainRAMSpace=yes
ConstrainSwapSpace=$swap
AllowedSwapSpace=0
ConstrainCores=no
ConstrainDevices=no
CONF
}

start_munge() {
  mkdir -p "$BASE/munge"; chmod 755 "$BASE/munge"
  [ -s "$BASE/munge/munge.key" ] || mungekey -c -k "$BASE/munge/munge.key"
  chmod 600 "$BASE/munge/munge.key"
  no_fds munged -S "$MUNGE_SOCK" --key-file="$BASE/munge/munge.key" \
         --log-file="$BASE/munge/munged.log" --pid-file="$BASE/munge/munged.pid" \
         --seed-file="$BASE/munge/munged.seed" --num-threads=4 </dev/null >/dev/null 2>&1
  munge -S "$MUNGE_SOCK" -n | unmunge -S "$MUNGE_SOCK" >/dev/null
}

wait_ready() {
  local want deadline n_idle
  want=$(echo $NODES | wc -w); deadline=$((SECONDS + READY_TIMEOUT_S))
  while :; do
    n_idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2=="idle"' | wc -l || true)
    [ "$n_idle" -ge "$want" ] && return 0
    if [ $SECONDS -ge $deadline ]; then
      log "not ready after ${READY_TIMEOUT_S}s"; sinfo -N -o '%N %T %E' >&2 || true
      tail -n 20 "$BASE"/log/*.log >&2 || true; return 1
    fi
    sleep 0.2
  done
}

running() { [ -f "$BASE/run/slurmctld.pid" ] && kill -0 "$(cat "$BASE/run/slurmctld.pid")" 2>/dev/null; }

do_start() {
  local t0=$SECONDS
  command -v slurmctld >/dev/null || { log "Slurm is not installed: run '$0 install' (as root)"; exit 1; }
  if running; then log "already running; stopping it first"; do_stop; fi
  write_config
  start_munge
  rm -rf "$BASE/state"/* "$BASE/log/jobcomp.txt"   # fresh cluster each time (job ids restart at 1)
  slurmctld -c </dev/null >/dev/null 2>&1        # daemonizes; -c = ignore saved state
  for n in $NODES; do no_fds slurmd -N "$n" </dev/null >/dev/null 2>&1; done
  wait_ready
  log "cluster up in $((SECONDS - t0))s; export SLURM_CONF=$SLURM_CONF"
  sinfo -N -o '%N %T %c %m %f %G' >&2
}

# start_node NAME: restarts one slurmd (after a test killed it).
do_start_node() {
  # No inherited stdio: a caller reading our output to EOF must not wait for the daemon.
  no_fds slurmd -N "$1" </dev/null >/dev/null 2>&1
}

# stop-ctld / start-ctld: a slurmctld outage (tests); the restart keeps its saved state, so
# the jobs it knew live on.
do_stop_ctld() {
  local pid; pid=$(cat "$BASE/run/slurmctld.pid" 2>/dev/null) || return 0
  # SIGTERM: slurmctld saves its state first (a SIGKILL loses jobs submitted since its last
  # periodic save, and the restarted one then kills them as unknown).
  kill -TERM "$pid" 2>/dev/null || true
  _wait_pids 10 "$pid" || kill -KILL "$pid" 2>/dev/null || true
  rm -f "$BASE/run/slurmctld.pid"
}

do_start_ctld() {
  running && return 0
  no_fds slurmctld </dev/null >/dev/null 2>&1
  for _ in $(seq 1 100); do scontrol ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  log "slurmctld did not answer after 10 s"; return 1
}

_wait_pids() {  # wait up to $1 seconds for the given pids to exit
  local t=$(( $1 * 10 )); shift
  while [ $t -gt 0 ]; do
    local alive=0; for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && return 0; sleep 0.1; t=$((t-1))
  done; return 1
}

_kill_tree() {  # SIGKILL a process and all its descendants (children first)
  local c; for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do _kill_tree "$c"; done
  kill -KILL "$1" 2>/dev/null || true
}

do_stop() {
  local pids="" f
  for f in "$BASE"/run/slurmctld.pid "$BASE"/run/slurmd-*.pid; do
    [ -f "$f" ] && pids="$pids $(cat "$f")"
  done
  if scontrol ping >/dev/null 2>&1; then
    # cancel jobs first: 'scontrol shutdown' does NOT kill running job steps
    squeue -h -o %A | xargs -r scancel 2>/dev/null || true
    for _ in $(seq 1 50); do [ -z "$(squeue -h -t R,CG -o %A 2>/dev/null)" ] && break; sleep 0.2; done
    scontrol shutdown 2>/dev/null || true
  fi
  if [ -n "$pids" ] && ! _wait_pids 15 $pids; then
    kill -TERM $pids 2>/dev/null || true; _wait_pids 5 $pids || kill -KILL $pids 2>/dev/null || true
  fi
  rm -f "$BASE"/run/*.pid
  # safety net: job steps orphaned by a killed slurmd ignore SIGTERM; find ours via environ
  for f in /proc/[0-9]*/cmdline; do
    local p=${f#/proc/}; p=${p%/cmdline}
    if { tr '\0' ' ' < "$f" | grep -q '^slurmstepd:' &&
         tr '\0' '\n' < "/proc/$p/environ" | grep -qx "SLURM_CONF=$SLURM_CONF"; } 2>/dev/null; then
      log "killing orphaned slurmstepd $p and its job processes"; _kill_tree "$p"
    fi
  done
  if [ -f "$BASE/munge/munged.pid" ]; then
    local mp; mp=$(cat "$BASE/munge/munged.pid"); kill "$mp" 2>/dev/null || true
    _wait_pids 5 "$mp" || true; rm -f "$BASE/munge/munged.pid"
  fi
  log "stopped"
}

case "${1:-}" in
  install) do_install ;;
  start)   do_start ;;
  start-node) do_start_node "${2:?node name}" ;;
  stop-ctld)  do_stop_ctld ;;
  start-ctld) do_start_ctld ;;
  stop)    do_stop ;;
  status)  scontrol ping; sinfo -N -o '%N %T %c %m %f %G %E'; squeue -t all ;;
  env)     echo "export SLURM_CONF=$SLURM_CONF" ;;
  *) echo "usage: $0 install|start|stop|status|env|start-node NODE|stop-ctld|start-ctld" >&2; exit 2 ;;
esac
