#!/usr/bin/env bash
# `make demo`: seed 000 §4's daily fraud-detection workload, end to end, on this machine.
#
# Installs what is missing (scripts/install-deps.sh), builds (`make build`), starts
# rsl-controller in the background with a fresh state directory on a free loopback port,
# creates a token, registers the datasources and the environments, generates the day's
# transactions, submits examples/fraud-detect/fraud-detect-workload.yaml with
# `seedctl workload submit`, watches it to the end (progress bars on a terminal), then prints
# `status`, `lineage` and the model's fingerprint, and stops the controller. By default the
# steps run in real container images (below: DEMO_HOST_ENV). Exits non-zero
# if any of it fails (the workload not SUCCEEDED included).
#
# Knobs (environment):
#   ROWS=1000000     transactions to generate (the pinned buildFingerprint is for 1,000,000;
#                    other sizes drop it from the submitted copy, and say so)
#   NO_PATTERN=1     generate without the planted fraud pattern: the AUC gate skips validate
#   DEMO_DIR=.rsl-demo   where the state directory, data and outputs go (wiped first)
#   SKIP_DEPS=1      do not run scripts/install-deps.sh
#   SKIP_BUILD=1     do not run `make build`
#   BIN_DIR=build/bin    where seedctl and rsl-controller are
#   KEEP=1           leave the controller running at the end (prints how to stop it)
#   DEMO_HOST_ENV=   which environments the steps run in:
#                    unset (default): the real container images where this machine can run
#                      them (root, runc, mmdebstrap, umoci, skopeo, docker-registry): built from
#                      Debian packages by scripts/demo_images.sh (cached in DEMO_IMAGE_CACHE,
#                      default .rsl-demo-images/), pushed to a docker-registry the demo starts
#                      on loopback (config and storage in DEMO_DIR/registry), every step run
#                      with runc; otherwise the host environments (and it says why);
#                    0: the container images, or fail saying what is missing;
#                    1: the host environments (`seedctl env register NAME --python ...`:
#                      Debian's python3 on this machine, no container).
#                    The demo prints which path it took.
#   FILE_URIS=0      (default) submit the example as written (hdfs://ns1, ceph://models): the
#                    `local` datasources map those authorities onto directories, for the
#                    admission's data checks, the steps' RSL_INPUT and the output commit.
#                    FILE_URIS=1 submits a copy whose URIs are file:// paths to the same
#                    directories.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
ROWS=${ROWS:-1000000}
FILE_URIS=${FILE_URIS:-0}
DEFAULT_ROWS=1000000
DEMO_DIR=${DEMO_DIR:-$here/.rsl-demo}
BIN_DIR=${BIN_DIR:-$here/build/bin}
EXAMPLE=$here/examples/fraud-detect
PY=/usr/bin/python3          # Debian's interpreter: it has python3-numpy
# How long the controller may take to answer after start, and the whole workload (the
# workload's own timeout is 20m; the demo at its default size takes well under a minute).
READY_TIMEOUT_S=30

t_start=$(date +%s)
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() { printf 'demo: error: %s\n' "$*" >&2; exit 1; }

# Which path: container images (runc) or host environments.
image_tools=(runc mmdebstrap umoci skopeo docker-registry)
images_missing() {
  local m=()
  [ "$(id -u)" = 0 ] || m+=("root (mmdebstrap and runc run as root here)")
  for t in "${image_tools[@]}"; do command -v "$t" >/dev/null 2>&1 || m+=("$t"); done
  printf '%s\n' "${m[@]}"
}

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  say "install what is missing (scripts/install-deps.sh)"
  bash scripts/install-deps.sh
fi
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  say "build (make build)"
  make build
fi
SEEDCTL=$BIN_DIR/seedctl
CONTROLLER=$BIN_DIR/rsl-controller
[ -x "$SEEDCTL" ] || die "$SEEDCTL not found (build first: make build)"
[ -x "$CONTROLLER" ] || die "$CONTROLLER not found (build first: make build)"

# The path: container images or host environments (DEMO_HOST_ENV, above).
missing=$(images_missing)
[ -f "$BIN_DIR/rsl-cinit" ] || missing+=$'\n'"$BIN_DIR/rsl-cinit (PID 1 of every container; built with rsl-shim)"
missing=$(printf '%s\n' "$missing" | sed '/^$/d' | paste -sd, - | sed 's/,/, /g')
case "${DEMO_HOST_ENV:-}" in
  1) USE_IMAGES=0; path_why="DEMO_HOST_ENV=1" ;;
  0) [ -z "$missing" ] || die "DEMO_HOST_ENV=0 (container images) needs: $missing"
     USE_IMAGES=1; path_why="DEMO_HOST_ENV=0" ;;
  "") if [ -z "$missing" ]; then USE_IMAGES=1; path_why="runc and the image tools are here"
      else USE_IMAGES=0; path_why="missing: $missing"; fi ;;
  *) die "DEMO_HOST_ENV must be 0, 1 or unset, not '$DEMO_HOST_ENV'" ;;
esac
if [ "$USE_IMAGES" = 1 ]; then
  say "path: container images (every step in its image, with runc; $path_why)"
else
  say "path: host environments (Debian's python3 on this machine, no container; $path_why)"
fi

# A fresh demo directory: state, the "HDFS" and "Ceph" directories the local datasources map.
# (A registry a KEEP=1 demo left running there is stopped first: its storage is about to go.)
bash scripts/demo_images.sh down "$DEMO_DIR"
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"
STATE=$DEMO_DIR/state
HDFS_ROOT=$DEMO_DIR/hdfs-ns1
CEPH_ROOT=$DEMO_DIR/ceph-models
mkdir -p "$STATE" "$HDFS_ROOT" "$CEPH_ROOT"
chmod 700 "$STATE"
# The datasource, env and model commands work directly on the state directory (the same
# database the controller uses): they find it through RSL_STATE_DIR.
export RSL_STATE_DIR=$STATE

port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SERVER=http://127.0.0.1:$port

say "start rsl-controller on 127.0.0.1:$port (state: $STATE)"
"$CONTROLLER" --listen "127.0.0.1:$port" --state-dir "$STATE" \
  --node-file "$EXAMPLE/nodes.yaml" >"$DEMO_DIR/controller.log" 2>&1 &
controller_pid=$!
stop_controller() {
  if [ -n "${controller_pid:-}" ] && kill -0 "$controller_pid" 2>/dev/null; then
    kill -TERM "$controller_pid" 2>/dev/null || true
    wait "$controller_pid" 2>/dev/null || true
  fi
  # The registry scripts/demo_images.sh started (nothing when it did not).
  bash "$here/scripts/demo_images.sh" down "$DEMO_DIR" || true
}
if [ "${KEEP:-0}" != 1 ]; then
  trap stop_controller EXIT
fi

say "create a token (seedctl token create)"
token_out=$("$SEEDCTL" token create --state-dir "$STATE" --namespace default --role admin)
export SEEDCTL_TOKEN=$(printf '%s\n' "$token_out" | tail -n 1)
export SEEDCTL_SERVER=$SERVER
[ -n "$SEEDCTL_TOKEN" ] || die "token create printed no token"
echo "token: (in SEEDCTL_TOKEN; not printed)"

deadline=$(( $(date +%s) + READY_TIMEOUT_S ))
until "$SEEDCTL" workload list >/dev/null 2>&1; do
  kill -0 "$controller_pid" 2>/dev/null || { cat "$DEMO_DIR/controller.log" >&2; die "rsl-controller exited"; }
  [ "$(date +%s)" -lt "$deadline" ] || { cat "$DEMO_DIR/controller.log" >&2; die "rsl-controller not ready after ${READY_TIMEOUT_S}s"; }
  sleep 0.2
done
# Shown for the reader; not a gate (the gate is the workload's outcome below).
"$SEEDCTL" cluster status || echo "demo: warning: seedctl cluster status failed" >&2

say "register the datasources: hdfs://ns1 and ceph://models as local directories"
"$SEEDCTL" datasource register local --name hdfs-ns1 --authority hdfs://ns1 --path "$HDFS_ROOT"
"$SEEDCTL" datasource register local --name ceph-models --authority ceph://models --path "$CEPH_ROOT"
"$SEEDCTL" datasource list

IMAGES=(volc/ingest:v1.0 volc/preprocess-fraud:v1.1 volc/train-fraud-pytorch:v2.1 volc/validate-fraud:v1.0)
if [ "$USE_IMAGES" = 1 ]; then
  say "build the step images from Debian packages and push them (scripts/demo_images.sh up)"
  t_img=$(date +%s)
  bash scripts/demo_images.sh up "$DEMO_DIR"
  # shellcheck disable=SC1091
  . "$DEMO_DIR/registry/env"
  echo "images: $(( $(date +%s) - t_img )) s; registry $REGISTRY (pid $REGISTRY_PID), image $DEMO_IMAGE_ID"
else
  say "register the environments the steps name (Debian's python3 with numpy)"
  # image/python3 is Debian's /usr/bin/python3 started in the example's folder (the "image's
  # WORKDIR", where ingest.py and the other programs are).
  for image in "${IMAGES[@]}"; do
    "$SEEDCTL" env register "$image" --python "$EXAMPLE/image/python3"
  done
  "$SEEDCTL" env list
fi

say "generate the day's transactions ($ROWS rows)"
gen_flags=(--out "$HDFS_ROOT" --rows "$ROWS")
[ "${NO_PATTERN:-0}" = 1 ] && gen_flags+=(--no-pattern)
$PY "$EXAMPLE/gen_transactions.py" "${gen_flags[@]}"

workload=$EXAMPLE/fraud-detect-workload.yaml
if [ "$ROWS" != "$DEFAULT_ROWS" ] || [ "${NO_PATTERN:-0}" = 1 ] || [ "$FILE_URIS" = 1 ] ||
   [ "$USE_IMAGES" = 1 ]; then
  workload=$DEMO_DIR/fraud-detect-workload.yaml
  cp "$EXAMPLE/fraud-detect-workload.yaml" "$workload"
fi
if [ "$ROWS" != "$DEFAULT_ROWS" ] || [ "${NO_PATTERN:-0}" = 1 ]; then
  # The pinned fingerprint is the model of the default data; another day gives another model.
  sed -i '/^ *buildFingerprint:/d' "$workload"
  echo "note: data differs from the default, so the submitted copy has no buildFingerprint"
fi
if [ "$USE_IMAGES" = 1 ]; then
  # The example names volc/...: Docker would look for those on Docker Hub. The demo's copy
  # names the same repositories and tags on the loopback registry (plain HTTP: allowed for
  # loopback registries, as Docker does). The model's pins (numpy==1.24.2) are what the image's
  # python3-numpy says (bookworm), so admission checks them against the image's layers as is.
  sed -i -e "s|image: \"volc/|image: \"$REGISTRY/volc/|" "$workload"
  echo "note: the submitted copy names the images on the demo's registry: $REGISTRY/volc/..."
fi
if [ "$FILE_URIS" = 1 ]; then
  sed -i -e "s|hdfs://ns1/|file://$HDFS_ROOT/|" -e "s|ceph://models/|file://$CEPH_ROOT/|" "$workload"
  echo "note: the submitted copy reads file://$HDFS_ROOT/... and writes file://$CEPH_ROOT/..."
fi

say "seedctl workload submit -f $(basename "$workload")"
t_submit=$(date +%s.%N)
submit_out=$("$SEEDCTL" workload submit -f "$workload")
printf '%s\n' "$submit_out"
id=$(printf '%s\n' "$submit_out" | sed -n 's/^ *ID: *\(wl-[0-9a-z-]*\).*/\1/p' | head -n 1)
[ -n "$id" ] || die "no workload id in the submit output"

say "seedctl workload status --id $id --watch"
"$SEEDCTL" workload status --id "$id" --watch || true
t_done=$(date +%s.%N)

say "seedctl workload status --id $id"
status_out=$("$SEEDCTL" workload status --id "$id")
printf '%s\n' "$status_out"

say "seedctl workload lineage --id $id"
"$SEEDCTL" workload lineage --id "$id"

say "the model's fingerprint (seedctl model describe fraud-detect-daily:2.1.7)"
"$SEEDCTL" model describe fraud-detect-daily:2.1.7

phase=$("$SEEDCTL" workload status --id "$id" -o json | $PY -c \
  'import json,sys; d=json.load(sys.stdin); print(d.get("status", {}).get("phase", d.get("phase", "")))')
elapsed=$($PY -c "print('%.1f' % ($t_done - $t_submit))")
echo
echo "workload $id: $phase (submit to finished: ${elapsed} s; demo total: $(( $(date +%s) - t_start )) s)"
if [ "${KEEP:-0}" = 1 ]; then
  echo "controller still running: pid $controller_pid, SEEDCTL_SERVER=$SERVER; stop it with: kill $controller_pid"
  [ "$USE_IMAGES" = 1 ] &&
    echo "registry still running: $REGISTRY; stop it with: bash scripts/demo_images.sh down $DEMO_DIR"
fi
[ "$phase" = SUCCEEDED ] || die "workload $id ended $phase"

if [ "$USE_IMAGES" = 1 ]; then
  say "check: every step that ran, ran in its container image"
  # 1. The Started event of each step that ran names its runc container and the image's digest
  #    on the demo registry, which must be the digest the registry serves for the step's tag.
  # 2. The step's log has the line the image's `python` prints from the image's own
  #    /etc/rsl-demo-image (this host has no such file) and the container's name.
  [ ! -e /etc/rsl-demo-image ] || die "this host has /etc/rsl-demo-image: the check cannot tell host from image"
  digests=$DEMO_DIR/registry/digests
  : >"$digests"
  for image in "${IMAGES[@]}"; do
    printf '%s %s\n' "$REGISTRY/$image" \
      "$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$REGISTRY/$image")" >>"$digests"
  done
  "$SEEDCTL" workload events --id "$id" -o json >"$DEMO_DIR/events.json"
  "$SEEDCTL" workload status --id "$id" -o json >"$DEMO_DIR/status.json"
  for step in ingest preprocess train validate; do
    "$SEEDCTL" workload logs --id "$id" --step "$step" >"$DEMO_DIR/log-$step.txt" 2>&1 || true
  done
  $PY "$here/scripts/demo_check_images.py" "$DEMO_DIR" "$workload" "$DEMO_IMAGE_ID" ||
    die "a step did not run in its container image (above)"
  echo "every step ran in its container image (path: container images)"
else
  echo "every step ran on the host (path: host environments)"
fi
