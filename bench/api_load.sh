#!/usr/bin/env bash
# Bounded load test of rsl-controller on loopback: submissions/s of a 3-step workload of
# `true` steps sustained to completion, and status GETs/s with p50/p99 (own client; wrk as
# a second opinion on GETs when installed), then the controller's memory (VmRSS, VmHWM) with
# every workload finished. Last line: `workloads/min <x>`.
#
#   bench/api_load.sh [BUILD_DIR]      (default build; needs rsl-controller, seedctl, api_load)
# Env: SUBMISSIONS (default 5000), CONCURRENCY (4), GET_SECONDS (5), SETTLE (31, seconds; 0:
# no wait) and DROP_CACHES (1) as in dag_vs_ninja.sh; IDLE_RSS (1: the RSS again 11 s later);
# CONTROLLER_ARGS: more rsl-controller flags (e.g. --transition-log).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bin=$build/bin
SUBMISSIONS=${SUBMISSIONS:-5000}
CONCURRENCY=${CONCURRENCY:-4}
GET_SECONDS=${GET_SECONDS:-5}
for b in rsl-controller seedctl api_load; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b: build it (cmake --build $build --target $b)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/rsl-api-load.XXXXXX)
chmod 755 "$work"  # steps run as their namespace's uid and pass through it (docs/security.md)
ctl_pid=""
cleanup() { [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# Each workload makes about a dozen inodes (its run, attempt and output directories), and on
# ext4 without a journal (this machine's root) a new inode skips every inode of its group
# deleted in the last 30 s: right after a previous run of this script (its cleanup removes
# 5,000 runs) the same binary measured 7,700-8,600/min where it measured 12,000-12,600 once
# the file system had settled. So, as dag_vs_ninja.sh does: sync, wait, drop the clean caches.
source "$root/bench/settle.sh"
settle_fs
token=$("$bin/seedctl" token create --state-dir "$work/state" --namespace '*' --role admin --subject bench | tail -1)
# shellcheck disable=SC2086  # CONTROLLER_ARGS: more flags, e.g. --transition-log
"$bin/rsl-controller" --listen 127.0.0.1:0 --state-dir "$work/state" ${CONTROLLER_ARGS:-} > "$work/controller.log" 2>&1 &
ctl_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/controller.log" && break; sleep 0.1; done
# `awk NR==1` reads its whole input: `head -1` would close the pipe early, and with pipefail
# the writer's SIGPIPE would end the script before its last line.
server=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/controller.log" | awk 'NR == 1')
[ -n "$server" ] || { cat "$work/controller.log" >&2; exit 1; }

cat > "$work/three-true.yaml" <<'YAML'
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: load-true, namespace: bench}
spec:
  pipeline:
    - {name: a, command: ["true"]}
    - {name: b, command: ["true"], dependsOn: [a]}
    - {name: c, command: ["true"], dependsOn: [b]}
YAML

echo "rsl-controller at $server, $(nproc) cores; $SUBMISSIONS submissions, $CONCURRENCY client threads"
# The controller's CPU time (user + system, clock ticks): per workload it is steadier than the
# rate when the machine is shared (GET_SECONDS=0 leaves the GETs out of it).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$ctl_pid/stat"; }
ticks0=$(cpu_ticks)
"$bin/api_load" --server "$server" --token "$token" --workload "$work/three-true.yaml" \
  --submissions "$SUBMISSIONS" --concurrency "$CONCURRENCY" --gets-seconds "$GET_SECONDS" \
  | tee "$work/out.txt" | grep -v '^workloads/min'
ticks1=$(cpu_ticks)
awk -v t="$((ticks1 - ticks0))" -v hz="$(getconf CLK_TCK)" -v n="$SUBMISSIONS" -v g="$GET_SECONDS" \
  'BEGIN { printf "controller cpu_s %.2f: %.3f ms per workload%s\n", t / hz, 1000 * t / hz / n, (g > 0 ? " (its GETs included)" : "") }'
# The engine's store transactions per workload (its loop's turns, and the group-committed
# submissions), from /metrics.
if command -v curl >/dev/null 2>&1; then
  curl -s -H "Authorization: Bearer $token" "$server/metrics" |
    awk -v n="$SUBMISSIONS" '$1 == "rsl_engine_turn_commits_total" { t = $2 }
      $1 == "rsl_engine_submit_commits_total" { s = $2 }
      END { if (t != "") printf "engine store commits: %d turns (%.2f per workload), %d for submissions\n", t, t / n, s }'
fi
# wrk needs a duration of at least a second (`-d0s` prints nothing to grep, and with pipefail
# the empty grep would end the script here): GET_SECONDS=0 measures the backlog alone.
if [ "$GET_SECONDS" -gt 0 ] && command -v wrk >/dev/null 2>&1; then
  id=$("$bin/seedctl" workload list -A -o json --server "$server" --token "$token" \
       | grep -o 'wl-[0-9]\{8\}-[0-9a-f]\{8\}' | awk 'NR == 1')
  echo "wrk (second opinion on GET /api/v1/workloads/$id):"
  wrk -t2 -c"$CONCURRENCY" -d"${GET_SECONDS}s" --latency -H "Authorization: Bearer $token" \
    "$server/api/v1/workloads/$id" | { grep -E 'Requests/sec|50%|99%' || true; } | sed 's/^/  /'
fi
# The controller's memory with every workload finished: now (VmRSS) and its peak (VmHWM).
vm_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$ctl_pid/status"; }
awk -v r="$(vm_kb VmRSS)" -v h="$(vm_kb VmHWM)" -v n="$SUBMISSIONS" \
  'BEGIN { printf "controller rss_mb %.1f hwm_mb %.1f after %d finished workloads\n", r / 1024, h / 1024, n }'
# And once the controller's every-10-s return of free memory to the system has run (its
# allocator's free pages: tcmalloc's or glibc's, ReturnFreeMemory in base/malloc.h). IDLE_RSS=0 skips.
if [ "${IDLE_RSS:-1}" != 0 ]; then
  sleep 11
  awk -v r="$(vm_kb VmRSS)" \
    'BEGIN { printf "controller rss_mb %.1f 11 s later (free memory returned)\n", r / 1024 }'
fi
per_min=$(grep '^workloads/min' "$work/out.txt" | awk '{print $2}')
awk -v x="$per_min" 'BEGIN { printf "ratio to Argo'"'"'s 2,100 workflows/min (5 shards, 50 nodes): %.2f\n", x / 2100 }'
echo "workloads/min $per_min"
