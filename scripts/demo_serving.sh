#!/usr/bin/env bash
# `make demo-serving`: examples/recommend-serving end to end on this machine. `seedctl run`
# trains a small numpy model, then serves it (POST /predict, the seed's signature) behind an
# HAProxy endpoint; the demo sends one prediction, then load, shows the service scale up
# (ScaledUp), drops the load and shows it scale back down after scaleDownDelay (ScaledDown),
# then stops it (Ctrl-C to seedctl run: drain, stop, frontend removed).
#
# Knobs: SKIP_BUILD=1 (do not run `make build`), BIN_DIR=build/bin, DEMO_DIR=.rsl-demo-serving,
# SCALE_DOWN_DELAY=20s.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
BIN_DIR=${BIN_DIR:-$here/build/bin}
DEMO_DIR=${DEMO_DIR:-$here/.rsl-demo-serving}
if [ "${SKIP_BUILD:-0}" != 1 ]; then make build; fi
[ -x "$BIN_DIR/seedctl" ] || { echo "demo-serving: $BIN_DIR/seedctl not found (make build)" >&2; exit 1; }
[ -x /usr/sbin/haproxy ] || { echo "demo-serving: haproxy is not installed (make deps)" >&2; exit 1; }
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"
chmod 0755 "$DEMO_DIR"  # steps run as other users
SCALE_DOWN_DELAY=${SCALE_DOWN_DELAY:-20s} /usr/bin/python3 bench/serve/autoscale.py \
  "$BIN_DIR/seedctl" "$DEMO_DIR" demo
