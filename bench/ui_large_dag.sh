#!/usr/bin/env bash
# The web console with large runs: seconds to interactive for 1,000 and 10,000 steps
# (bench/ui_large_dag.mjs), against the binaries of BUILD_DIR.
#
#   bench/ui_large_dag.sh [BUILD_DIR]     (default build, `make build`; needs rsl-controller,
#                                           seedctl, rsl-shim; scripts/ci.d/ui.sh for
#                                           playwright-core, and chromium)
# Env: STEPS (default "1000,10000").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
for b in rsl-controller seedctl rsl-shim; do
  [ -x "$build/bin/$b" ] || { echo "missing $build/bin/$b: run make build" >&2; exit 1; }
done
[ -d "$root/tests/node_modules/playwright-core" ] || bash "$root/scripts/ci.d/ui.sh"
RSL_BIN_DIR=$build/bin exec node "$root/bench/ui_large_dag.mjs"
