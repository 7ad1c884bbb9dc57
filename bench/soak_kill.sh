#!/usr/bin/env bash
# Crash soak of rsl-controller: KILLS SIGKILLs at random moments while workloads are being
# submitted, then checks that every acknowledged workload (seedctl printed its ID) ended
# SUCCEEDED with exactly its outputs: the two files its two steps wrote, with its own content,
# and the commit manifest; nothing else under its output root. Last line: `lost <k> of <n>`
# (k acknowledged workloads that did not end so, of n acknowledged).
#
#   bench/soak_kill.sh [BUILD_DIR]     (default build: make build; needs rsl-controller, rsl-shim
#                                       and seedctl)
# Env: KILLS (default 1000); TIME_LIMIT seconds for the kills (default 1800: the soak stops
# killing when it runs out, and says how many kills it made); MAX_GAP_MS, the longest wait
# between a controller's start and its kill (default 1500); SUBMITTERS, parallel submission
# loops (default 2); DRAIN_TIMEOUT seconds for the acknowledged workloads to end after the last
# kill (default 600); CONTROLLER_ARGS, more flags for every rsl-controller it starts (e.g.
# --transition-log). Exits 1 when a workload was lost.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bin=$build/bin
KILLS=${KILLS:-1000}
TIME_LIMIT=${TIME_LIMIT:-1800}
MAX_GAP_MS=${MAX_GAP_MS:-1500}
SUBMITTERS=${SUBMITTERS:-2}
DRAIN_TIMEOUT=${DRAIN_TIMEOUT:-600}
for b in rsl-controller rsl-shim seedctl; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b: build it (make build)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/rsl-soak-kill.XXXXXX)
chmod 755 "$work"  # steps run as their namespace's uid and pass through it (docs/security.md)
mkdir -p "$work/specs" "$work/out" "$work/acks"
ctl_pid=""
submitter_pids=()
cleanup() {
  for p in "${submitter_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null
  wait 2>/dev/null
  [ "${KEEP:-0}" = 1 ] && { echo "kept $work" >&2; return; }
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server="http://127.0.0.1:$port"
export SEEDCTL_SERVER=$server
SEEDCTL_TOKEN=$("$bin/seedctl" token create --state-dir "$work/state" --namespace soak \
  --role editor --subject soak | tail -1)
export SEEDCTL_TOKEN
starts=0

# Starts the controller on the soak's port; `wait_ready`: until it listens (30 s at most).
start_controller() {
  starts=$((starts + 1))
  # shellcheck disable=SC2086  # CONTROLLER_ARGS: words, e.g. --transition-log
  "$bin/rsl-controller" --listen "127.0.0.1:$port" --state-dir "$work/state" ${CONTROLLER_ARGS:-} \
    > "$work/controller-$starts.log" 2>&1 &
  ctl_pid=$!
  [ "${1:-}" = wait_ready ] || return 0
  for _ in $(seq 300); do
    grep -q "listening on" "$work/controller-$starts.log" && return 0
    kill -0 "$ctl_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "soak: the controller did not come up (start $starts):" >&2
  tail -20 "$work/controller-$starts.log" >&2
  exit 1
}

# One submission loop: workload soak-<s>-<i> writes "<s>-<i>" into a.txt and b.txt of its
# output root; an acknowledged one is recorded as "<s>-<i> <id>".
submitter() {
  local s=$1 i=0
  while :; do
    i=$((i + 1))
    local key="$s-$i" spec="$work/specs/$s-$i.yaml"
    cat > "$spec" <<YAML
apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: soak-$key, namespace: soak}
spec:
  resources: {cpu: "0.1", memory: 16Mi}
  data:
    output: {uri: "file://$work/out/$key"}
  pipeline:
    - {name: a, command: [sh, -c, 'echo $key > \$RSL_OUTPUT/a.txt']}
    - {name: b, command: [sh, -c, 'echo $key > \$RSL_OUTPUT/b.txt'], dependsOn: [a]}
YAML
    local out
    if out=$(timeout 30 "$bin/seedctl" workload submit -f "$spec" 2>/dev/null); then
      local id
      id=$(printf '%s\n' "$out" | sed -n 's/^ID: \(wl-[0-9a-f-]*\)$/\1/p')
      [ -n "$id" ] && echo "$key $id" >> "$work/acks/$s"
    fi
  done
}

start_controller wait_ready
for s in $(seq "$SUBMITTERS"); do
  submitter "$s" &
  submitter_pids+=($!)
done

echo "soak: $KILLS SIGKILLs of rsl-controller ${CONTROLLER_ARGS:+$CONTROLLER_ARGS }($server) within ${TIME_LIMIT}s, up to" \
  "${MAX_GAP_MS} ms after each start, $SUBMITTERS submitters; $(nproc) cores"
t0=$(date +%s)
kills=0
during_start=0
while [ "$kills" -lt "$KILLS" ] && [ $(($(date +%s) - t0)) -lt "$TIME_LIMIT" ]; do
  # One kill in ten lands while the controller starts (recovering the previous crash).
  if [ $((RANDOM % 10)) -eq 0 ]; then
    during_start=$((during_start + 1))
    sleep "0.0$((RANDOM % 10))"
  else
    for _ in $(seq 300); do
      grep -q "listening on" "$work/controller-$starts.log" && break
      sleep 0.05
    done
    sleep "$(awk -v r="$RANDOM" -v m="$MAX_GAP_MS" 'BEGIN { printf "%.3f", (r % (m + 1)) / 1000 }')"
  fi
  kill -9 "$ctl_pid" 2>/dev/null || true
  wait "$ctl_pid" 2>/dev/null || true
  kills=$((kills + 1))
  [ $((kills % 100)) -eq 0 ] && echo "  $kills kills, $(cat "$work"/acks/* 2>/dev/null | wc -l) acknowledged"
  start_controller
done
elapsed=$(($(date +%s) - t0))
for p in "${submitter_pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${submitter_pids[@]}" 2>/dev/null || true
submitter_pids=()
# The last start must come up and finish everything.
for _ in $(seq 300); do
  grep -q "listening on" "$work/controller-$starts.log" && break
  sleep 0.1
done
grep -q "listening on" "$work/controller-$starts.log" || start_controller wait_ready
cat "$work"/acks/* > "$work/acked.txt" 2>/dev/null || : > "$work/acked.txt"
echo "soak: $kills kills in ${elapsed}s ($during_start while starting), $starts starts;" \
  "$(wc -l < "$work/acked.txt") workloads acknowledged; waiting for them to end"

python3 - "$bin/seedctl" "$work" "$DRAIN_TIMEOUT" <<'PY'
import json, os, subprocess, sys, time
seedctl, work, drain = sys.argv[1], sys.argv[2], float(sys.argv[3])
acked = [line.split() for line in open(os.path.join(work, "acked.txt")) if line.strip()]
terminal = {"SUCCEEDED", "FAILED", "CANCELLED", "REJECTED", "TIMED_OUT"}

def phases():
    r = subprocess.run([seedctl, "workload", "list", "-A", "-o", "json"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        return None
    return {w["metadata"]["id"]: w.get("status", {}).get("phase", "")
            for w in json.loads(r.stdout).get("items", [])}

deadline = time.time() + drain
seen = {}
while True:
    seen = phases() or seen
    open_ = [i for _, i in acked if seen.get(i, "") not in terminal]
    if not open_ or time.time() > deadline:
        break
    time.sleep(1)

def expected_files(key):
    return {"_RSL_COMMIT": None, "a/a.txt": key + "\n", "b/b.txt": key + "\n"}

lost = []
for key, wid in acked:
    phase = seen.get(wid, "(not listed)")
    if phase != "SUCCEEDED":
        lost.append(f"{key} {wid}: {phase}")
        continue
    out = os.path.join(work, "out", key)
    found = {}
    for d, _, files in os.walk(out):
        for f in files:
            p = os.path.join(d, f)
            found[os.path.relpath(p, out)] = open(p, errors="replace").read()
    want = expected_files(key)
    if set(found) != set(want) or any(v is not None and found[k] != v for k, v in want.items()):
        lost.append(f"{key} {wid}: outputs {sorted(found)} differ from {sorted(want)}")
for line in lost[:20]:
    print("  lost:", line)
print(f"lost {len(lost)} of {len(acked)}")
sys.exit(1 if lost else 0)
PY
