#!/usr/bin/env bash
# One workload of BIG steps (default 100000) run in process by rsl-engine-bench (every
# transition durable), then what `status`, `describe` and `list` cost on it: the store reads
# of the whole run (all its steps and events, what the API read before it paged), the paged
# reads it does now, and the answers through the controller's HTTP API on a loopback port
# with the client's JSON parse: the default page (500 steps, the last 500 events) beside the
# whole document (?limit=0&eventLimit=0). DAG=independent|tree|chain (default independent).
# BUILD=dir picks the build (default build, `make build`'s RelWithDebInfo tree).
# Last line: `http status <ms> describe <ms> list <ms>` (the default pages).
set -euo pipefail
cd "$(dirname "$0")/.."
BIG=${BIG:-100000}
DAG=${DAG:-independent}
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" --target rsl-engine-bench >/dev/null
out=$("$BUILD/bin/rsl-engine-bench" "$BIG" "$DAG" full)
echo "$out" | sed "s/^/$DAG $BIG steps, /"
echo "$out" | sed -nE 's/^http: status ([0-9.]+) ms, describe ([0-9.]+) ms, list ([0-9.]+) ms.*/http status \1 describe \2 list \3/p'
