#!/usr/bin/env bash
# Log serving by rsl-controller against python3's http.server handing out the same bytes:
# GET /api/v1/workloads/ID/logs of (a) a 5,000-step run (every step's log with `==> step <==`
# headers) and (b) one step with a 100 MiB log. Time to first byte and total (curl), and the
# controller's peak RSS during each request (VmHWM from /proc, reset before it through
# clear_refs). The 5,000 step logs read by `tail -n +1` (headers too) as a second peer for (a).
# Last line: `ratio rsl/http.server <x>`, the worse total of (a) and (b).
#
#   bench/logs_serve.sh [BUILD_DIR]      (default build, `make build`; needs rsl-controller,
#                                          seedctl, rsl-shim)
# Env: STEPS (default 5000), BIG_MIB (100).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bin=$build/bin
STEPS=${STEPS:-5000}
BIG_MIB=${BIG_MIB:-100}
for b in rsl-controller seedctl rsl-shim; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b: run make build" >&2; exit 1; }
done
command -v curl >/dev/null || { echo "needs curl" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rsl-logs-bench.XXXXXX")
chmod 755 "$work"  # steps run as their namespace's uid and pass through it (docs/security.md)
ctl_pid=""
py_pid=""
cleanup() {
  [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null
  [ -n "$py_pid" ] && kill "$py_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

token=$("$bin/seedctl" token create --state-dir "$work/state" --namespace '*' --role admin --subject bench | tail -1)
"$bin/rsl-controller" --listen 127.0.0.1:0 --state-dir "$work/state" > "$work/controller.log" 2>&1 &
ctl_pid=$!
for _ in $(seq 100); do grep -qs "listening on" "$work/controller.log" && break; sleep 0.1; done
server=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/controller.log" | head -1)
[ -n "$server" ] || { cat "$work/controller.log" >&2; exit 1; }
export SEEDCTL_SERVER=$server SEEDCTL_TOKEN=$token

{
  printf 'apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: many, namespace: bench}\n'
  printf 'spec:\n  pipeline:\n'
  for i in $(seq 0 $((STEPS - 1))); do printf "    - {name: s%d, command: ['echo', 'step %d done']}\n" "$i" "$i"; done
} > "$work/many.yaml"
cat > "$work/big.yaml" <<YAML
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: big, namespace: bench}
spec:
  pipeline:
    - name: big
      command: ["sh", "-c", "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c $((BIG_MIB << 20))"]
YAML

submit() { "$bin/seedctl" workload submit -f "$1" | grep -o 'wl-[0-9]\{8\}-[0-9a-f]\{8\}' | head -1; }
wait_done() {
  for _ in $(seq 1200); do
    phase=$("$bin/seedctl" workload status --id "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["phase"])')
    case $phase in SUCCEEDED) return 0 ;; FAILED|CANCELLED|REJECTED|TIMED_OUT) echo "run $1: $phase" >&2; exit 1 ;; esac
    sleep 0.5
  done
  echo "run $1 did not finish" >&2; exit 1
}

hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# curl's time to first byte, total, and bytes, for URL into FILE, with extra curl args.
fetch() { curl -sS -o "$2" -w '%{time_starttransfer} %{time_total} %{size_download}\n' "${@:3}" "$1"; }

mkdir -p "$work/peer"
echo "rsl-controller at $server, $(nproc) cores; a $STEPS-step run and a ${BIG_MIB} MiB log"
printf '%-28s %10s %10s %12s %14s %14s\n' case ttfb_s total_s bytes rss_before_MB peak_rss_MB
worst=0
# The big log first, on a controller that has run nothing else, then the 5,000 steps.
for case in big many; do
  id=$(submit "$work/$case.yaml")
  wait_done "$id"
  eval "$case=$id"
  echo 5 > "/proc/$ctl_pid/clear_refs" 2>/dev/null || true  # VmHWM := VmRSS
  before=$(rss "$ctl_pid")
  read -r ttfb total bytes < <(fetch "$server/api/v1/workloads/$id/logs" "$work/peer/$case.log" \
                                 -H "Authorization: Bearer $token")
  peak=$(hwm "$ctl_pid")
  printf '%-28s %10.3f %10.3f %12d %14.1f %14.1f\n' "rsl $case" "$ttfb" "$total" "$bytes" \
    "$(echo "$before / 1024" | bc -l)" "$(echo "$peak / 1024" | bc -l)"
  eval "rsl_${case}_total=$total"
done
# The same 5,000 files read by `tail -n +1` (which prints `==> file <==` headers too).
run_dir=$(dirname "$(find "$work" -name 's0.1.log' | head -1)")
t0=$(date +%s.%N)
(cd "$run_dir" && tail -n +1 $(seq -f 's%.0f.1.log' 0 $((STEPS - 1))) > "$work/tail.out")
t1=$(date +%s.%N)
tail_s=$(echo "$t1 - $t0" | bc -l)
printf '%-28s %10s %10.3f %12d\n' "tail -n +1 many (files)" - "$tail_s" "$(stat -c %s "$work/tail.out")"
printf '  many: rsl/tail total %.2f\n' "$(echo "$rsl_many_total / $tail_s" | bc -l)"
log=$(find "$work" -name 'big.1.log' | head -1)
if cmp -s "$log" "$work/peer/big.log"; then echo "the ${BIG_MIB} MiB log came back byte for byte"; else echo "MISMATCH: served log differs from $log" >&2; exit 1; fi

(cd "$work/peer" && exec python3 -m http.server 0 --bind 127.0.0.1 > "$work/peer.log" 2>&1) &
py_pid=$!
for _ in $(seq 100); do grep -qs "Serving HTTP" "$work/peer.log" && break; sleep 0.1; done
py_port=$(grep -o 'port [0-9]*' "$work/peer.log" | head -1 | awk '{print $2}')
[ -n "$py_port" ] || { cat "$work/peer.log" >&2; exit 1; }
for case in many big; do
  echo 5 > "/proc/$py_pid/clear_refs" 2>/dev/null || true
  before=$(rss "$py_pid")
  read -r ttfb total bytes < <(fetch "http://127.0.0.1:$py_port/$case.log" "$work/$case.copy")
  peak=$(hwm "$py_pid")
  printf '%-28s %10.3f %10.3f %12d %14.1f %14.1f\n' "python3 http.server $case" "$ttfb" "$total" \
    "$bytes" "$(echo "$before / 1024" | bc -l)" "$(echo "$peak / 1024" | bc -l)"
  rsl_total_var="rsl_${case}_total"
  r=$(echo "${!rsl_total_var} / $total" | bc -l)
  printf '  %s: rsl/http.server total %.2f\n' "$case" "$r"
  worst=$(echo "if ($r > $worst) $r else $worst" | bc -l)
done
printf 'ratio rsl/http.server %.2f\n' "$worst"
