#!/usr/bin/env bash
# The workloads list at scale: fills a store with N finished workloads (rsl-fill-store, straight
# into the store), starts rsl-controller on it and times GET /api/v1/workloads pages of 50
# (the console's page): the first page, a page 50,000 deep (keyset: the same cost), one
# namespace, a phase filter and a label filter; each the median of 5 curl calls. Last line:
# `first page <s> s, deep page <s> s at <N> workloads`.
#
#   bench/list_page.sh [BUILD_DIR]      (default build; needs rsl-controller, seedctl, rsl-fill-store)
# Env: COUNT (default 100000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bin=$build/bin
COUNT=${COUNT:-100000}
for b in rsl-controller seedctl rsl-fill-store; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b: build it (cmake --build $build --target $b)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/rsl-list-page.XXXXXX)
chmod 755 "$work"  # the controller refuses a runs directory its steps cannot pass through
ctl_pid=""
cleanup() { [ -n "$ctl_pid" ] && kill "$ctl_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

start=$(date +%s.%N)
"$bin/rsl-fill-store" --state-dir "$work/state" --count "$COUNT"
echo "fill: $(echo "$(date +%s.%N) - $start" | bc) s"
token=$("$bin/seedctl" token create --state-dir "$work/state" --namespace '*' --role admin --subject bench | tail -1)
"$bin/rsl-controller" --listen 127.0.0.1:0 --state-dir "$work/state" > "$work/controller.log" 2>&1 &
ctl_pid=$!
for _ in $(seq 1800); do grep -q "listening on" "$work/controller.log" && break; sleep 0.1; done
server=$(grep -o "http://127.0.0.1:[0-9]*" "$work/controller.log" | awk "NR == 1" || true)
[ -n "$server" ] || { cat "$work/controller.log" >&2; exit 1; }

# Prints the median seconds of 5 GETs of $1 with the answer's item count and total; the
# median also goes to $work/last.
time_get() {
  local times=() n
  for _ in 1 2 3 4 5; do
    times+=("$(curl -s -o "$work/page.json" -w '%{time_total}' -H "Authorization: Bearer $token" "$server$1")")
  done
  n=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d.get("items", [])), d.get("metadata", {}).get("total", "-"))' "$work/page.json")
  printf '%s\n' "${times[@]}" | sort -n | awk 'NR == 3' > "$work/last"
  printf '%-90s %8.4f s  (items, total: %s)\n' "$1" "$(cat "$work/last")" "$n"
}
# The item COUNT/2 deep (ids count down from the newest): its token is its (created, id).
deep=$(( COUNT / 2 ))
deep_token="$(( 1767225600000 + deep ))_wl-20260101-$(printf '%08x' "$deep")"
time_get "/api/v1/workloads?allNamespaces=true&limit=50"; first=$(cat "$work/last")
time_get "/api/v1/workloads?allNamespaces=true&limit=50&continue=$deep_token"; deeps=$(cat "$work/last")
time_get "/api/v1/workloads?namespace=ns1&limit=50&continue=$deep_token"
time_get "/api/v1/workloads?allNamespaces=true&phase=FAILED&limit=50"
time_get "/api/v1/workloads?allNamespaces=true&label=team=t3&limit=50"
time_get "/api/v1/workloads?namespace=ns2&name=w42&limit=50"
# Status and describe of old workloads (read from the store), then the controller's memory.
for i in 1 2 3 $(( COUNT / 4 )) $deep $(( COUNT - 1 )); do
  id="wl-20260101-$(printf '%08x' "$i")"
  time_get "/api/v1/workloads/$id" > /dev/null
  time_get "/api/v1/workloads/$id/describe" > /dev/null
done
time_get "/api/v1/workloads/$id"
time_get "/api/v1/workloads/$id/describe"
curl -s -o /dev/null -H "Authorization: Bearer $token" "$server/metrics"
rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$ctl_pid/status")
hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$ctl_pid/status")
awk -v r="$rss_kb" -v h="$hwm_kb" -v n="$COUNT" \
  'BEGIN { printf "controller rss_mb %.1f hwm_mb %.1f on a store of %d finished workloads\n", r / 1024, h / 1024, n }'
echo "first page $first s, deep page $deeps s at $COUNT workloads"
