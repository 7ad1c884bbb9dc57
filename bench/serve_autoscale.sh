#!/usr/bin/env bash
# Serving autoscaling on this machine (loopback only, under 5 minutes): examples/recommend-serving
# under a private rsl-controller, every prediction burning about 10 ms of CPU (BURN_MS=10), the replicas'
# cpu request 500m (4 of them fit 2 cores), targetUtilization 70, scaleDownDelay 10s. Load is stepped low -> high ->
# low, then held steady and noisy near the target. Prints per phase: requests ok and failed
# (non-2xx, socket errors), the seconds from the load step to the first ScaledUp decision and
# to its replicas answering, the scale events (flapping = more than one per direction per
# load level), then a rolling update: a second version submitted under load (failed requests,
# seconds until it took over and until the old version had drained and ended).
#
#   bench/serve_autoscale.sh                 (needs build/bin: make build; haproxy installed)
#   BIN_DIR=build-asan/bin bench/serve_autoscale.sh
# Last two lines: `scale-up decision seconds <x>` and `failed requests <n>`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN_DIR=${BIN_DIR:-$PWD/build/bin}
[ -x "$BIN_DIR/seedctl" ] || { echo "serve_autoscale: $BIN_DIR/seedctl not found (make build)" >&2; exit 1; }
[ -x "$BIN_DIR/rsl-controller" ] || { echo "serve_autoscale: $BIN_DIR/rsl-controller not found (make build)" >&2; exit 1; }
[ -x /usr/sbin/haproxy ] || { echo "serve_autoscale: haproxy is not installed (scripts/install-deps.sh)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rsl-serve-bench.XXXXXX")
chmod 0755 "$work"  # steps run as other users
trap 'rm -rf "$work"' EXIT
SCALE_DOWN_DELAY=${SCALE_DOWN_DELAY:-10s} timeout 300 /usr/bin/python3 bench/serve/autoscale.py \
  "$BIN_DIR/seedctl" "$work/run" bench "$BIN_DIR/rsl-controller"
