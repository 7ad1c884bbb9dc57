#!/usr/bin/env bash
# The seed's SLA analogue (seed 000 §4.3: submit to model ready <= 15 minutes; the seed reports
# 10.3 min mean, 13.7 min P95 on a 20-node cluster): submit-to-model-ready of the fraud
# workload at its default size, 1,000,000 transactions, on this machine, through
# rsl-controller exactly as `make demo` runs it (scripts/demo.sh). "Model ready" = the run is
# SUCCEEDED and its outputs (the model) are committed.
#
#   bench/sla.sh            RUNS=3 runs (each a fresh controller and state directory)
#   RUNS=5 ROWS=1000000 bench/sla.sh
# Needs build/bin (make build). Last line: `sla submit-to-model-ready p50 <s> s p95 <s> s`.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
ROWS=${ROWS:-1000000}
SEED_SLA_S=900
times=()
for i in $(seq 1 "$RUNS"); do
  log=$(mktemp)
  if ! SKIP_DEPS=1 SKIP_BUILD=1 ROWS=$ROWS DEMO_DIR="${DEMO_DIR:-$PWD/.rsl-demo}-sla" \
       bash scripts/demo.sh >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "sla: run $i failed (log above)" >&2
    rm -f "$log"
    exit 1
  fi
  t=$(sed -n 's/.*submit to finished: \([0-9.]*\) s.*/\1/p' "$log" | tail -n 1)
  rm -f "$log"
  [ -n "$t" ] || { echo "sla: run $i printed no time" >&2; exit 1; }
  echo "run $i: submit to model ready ${t} s ($ROWS transactions)"
  times+=("$t")
done
rm -rf "${DEMO_DIR:-$PWD/.rsl-demo}-sla"
/usr/bin/python3 - "$SEED_SLA_S" "${times[@]}" <<'PY'
import sys
sla = float(sys.argv[1])
t = sorted(float(x) for x in sys.argv[2:])
def pct(p):
    k = max(0, min(len(t) - 1, int(round(p / 100.0 * (len(t) - 1)))))
    return t[k]
print("mean %.1f s over %d runs; seed's SLA %d s (ratio %.3f)" % (sum(t) / len(t), len(t), sla, pct(95) / sla))
print("sla submit-to-model-ready p50 %.1f s p95 %.1f s" % (pct(50), pct(95)))
PY
