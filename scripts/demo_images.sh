#!/usr/bin/env bash
# The demo's step images (issue 24, "The demo"): one OCI image built from Debian packages with
# mmdebstrap, tagged as each image the fraud example names and pushed to a docker-registry
# (Debian's CNCF distribution registry) that this script starts on a free loopback port.
#
#   scripts/demo_images.sh build        build the image (or find it in the cache); print its layout
#   scripts/demo_images.sh up DIR       build, start the registry (config DIR/registry/config.yml,
#                                       storage DIR/registry/data), push the four tags; writes
#                                       DIR/registry/env (REGISTRY=127.0.0.1:PORT, REGISTRY_PID=N,
#                                       DEMO_IMAGE_ID=...) and leaves the registry running
#   scripts/demo_images.sh down DIR     stop the registry `up` started
#
# The image: `mmdebstrap --variant=essential` of Debian bookworm with python3 and python3-numpy
# (what the example's steps import: numpy and the standard library; docs, man pages and
# locales left out), one layer; a second layer holds the example's programs in /app, the marker
# /etc/rsl-demo-image and /usr/local/bin/python, which starts /usr/bin/python3 in /app (the
# image's WORKDIR: RSL starts a container step in the attempt's working directory /rsl/work, so
# `command: ["python", "ingest.py"]` needs it, exactly as the host environment's
# examples/fraud-detect/image/python3 does) after printing one line naming the image and the
# container to stderr (the step's log), which scripts/demo.sh checks.
#
# Cache: the Debian layer is kept under DEMO_IMAGE_CACHE (default .rsl-demo-images/, not under
# the demo directory, which every demo wipes) by a hash of the suite, the variant, the package
# list and the dpkg options; the finished image by that hash and the hash of the /app files.
# A second demo reuses both (no download, no rebuild); `rm -rf .rsl-demo-images` rebuilds.
#
# Needs: root (mmdebstrap's root mode creates device nodes and owns files as root; runc runs the
# containers as root), mmdebstrap, umoci, skopeo, docker-registry, python3, and HTTP access to a
# Debian mirror (DEBIAN_MIRROR, default http://deb.debian.org/debian) for the first build.
# Elsewhere (no root): mmdebstrap --mode=unshare works for a user with subuids (add
# DEMO_MMDEBSTRAP_MODE=unshare), but the local backend's containers still need root for runc.
#
# Knobs (environment):
#   DEMO_IMAGE_CACHE=.rsl-demo-images    where built images are kept
#   DEBIAN_MIRROR=http://deb.debian.org/debian
#   DEBIAN_SUITE=bookworm                the pins in the example (numpy==1.24.2) are bookworm's
#   DEMO_IMAGE_PACKAGES="python3 python3-numpy"
#   DEMO_MMDEBSTRAP_MODE=auto            mmdebstrap --mode
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
EXAMPLE=$here/examples/fraud-detect
CACHE=${DEMO_IMAGE_CACHE:-$here/.rsl-demo-images}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${DEBIAN_SUITE:-bookworm}
PACKAGES=${DEMO_IMAGE_PACKAGES:-python3 python3-numpy}
MODE=${DEMO_MMDEBSTRAP_MODE:-auto}
VARIANT=essential
DPKG_OPTS=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
           --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*')
# The image names the fraud example's steps use (examples/fraud-detect/fraud-detect-workload.yaml).
IMAGES=(volc/ingest:v1.0 volc/preprocess-fraud:v1.1 volc/train-fraud-pytorch:v2.1 volc/validate-fraud:v1.0)
TAG=demo   # the tag inside the OCI layout

die() { printf 'demo_images: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'demo_images: %s\n' "$*" >&2; }
sha() { sha256sum | cut -c1-16; }

need_tools() {
  local missing=()
  for t in "$@"; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] || die "missing: ${missing[*]} (Debian: apt-get install -y ${missing[*]/docker-registry/docker-registry})"
}

# The Debian layer: an OCI layout holding one layer, mmdebstrap's root file system.
base_key() {
  printf '%s\n' "$SUITE" "$VARIANT" "$PACKAGES" "${DPKG_OPTS[@]}" | sha
}

build_base() {
  local key=$1 dir=$CACHE/base-$1
  if [ -f "$dir/done" ]; then
    say "Debian layer $key: cached ($dir)"
    return
  fi
  need_tools mmdebstrap umoci
  [ "$(id -u)" = 0 ] || [ "$MODE" != auto ] ||
    die "mmdebstrap needs root here (or DEMO_MMDEBSTRAP_MODE=unshare with subuids)"
  local tmp=$CACHE/.base-$key.$$
  rm -rf "$tmp" && mkdir -p "$tmp"
  local include
  include=$(printf '%s' "$PACKAGES" | tr -s ' ' ',')
  say "building the Debian layer $key: mmdebstrap --variant=$VARIANT $SUITE + $PACKAGES (from $MIRROR)"
  local t0=$SECONDS
  mmdebstrap --mode="$MODE" --variant="$VARIANT" --include="$include" "${DPKG_OPTS[@]}" \
    "$SUITE" "$tmp/rootfs.tar" "$MIRROR" >"$tmp/mmdebstrap.log" 2>&1 ||
    { tail -n 30 "$tmp/mmdebstrap.log" >&2; die "mmdebstrap failed (log: $tmp/mmdebstrap.log)"; }
  umoci init --layout "$tmp/oci" >/dev/null
  umoci new --image "$tmp/oci:$TAG" >/dev/null
  umoci raw add-layer --image "$tmp/oci:$TAG" "$tmp/rootfs.tar" >/dev/null
  # Keep the package list beside the layer, for the reader (the image has its dpkg status too).
  tar -xOf "$tmp/rootfs.tar" ./var/lib/dpkg/status |
    awk '/^Package:/{p=$2} /^Version:/{print p, $2}' >"$tmp/packages.txt"
  rm -f "$tmp/rootfs.tar"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  touch "$dir/done"
  say "Debian layer $key built in $((SECONDS - t0)) s ($(du -sh "$dir/oci" | cut -f1) compressed)"
}

# The finished image: the Debian layer + the example's programs, the marker and the wrapper.
app_key() {
  { printf '%s\n' "$1"; cat "$EXAMPLE"/*.py "$0"; } | sha
}

build_image() {
  local base; base=$(base_key)
  build_base "$base"
  local key; key=$(app_key "$base")
  local dir=$CACHE/image-$key
  if [ -f "$dir/done" ]; then
    say "image $key: cached ($dir)"
    echo "$dir"
    return
  fi
  need_tools umoci
  local tmp=$CACHE/.image-$key.$$
  rm -rf "$tmp" && mkdir -p "$tmp/app/app" "$tmp/app/etc" "$tmp/app/usr/local/bin"
  cp -a "$CACHE/base-$base/oci" "$tmp/oci"
  cp "$EXAMPLE"/*.py "$tmp/app/app/"
  printf 'rsl-demo-image %s (Debian %s, %s)\n' "$key" "$SUITE" "$PACKAGES" >"$tmp/app/etc/rsl-demo-image"
  cat >"$tmp/app/usr/local/bin/python" <<'EOF'
#!/bin/sh
# The demo image's `python`: names the image and the container in the step's log, then runs
# /usr/bin/python3 in /app, where the example's programs are (the image's WORKDIR).
printf '%s; container %s\n' "$(cat /etc/rsl-demo-image)" "${RSL_CONTAINER:-none}" >&2
cd /app || exit 1
exec /usr/bin/python3 "$@"
EOF
  chmod 755 "$tmp/app/usr/local/bin/python" && chmod 644 "$tmp/app/app/"*.py
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp/app" \
    -cf "$tmp/app.tar" app etc usr
  umoci raw add-layer --image "$tmp/oci:$TAG" "$tmp/app.tar" >/dev/null
  umoci config --image "$tmp/oci:$TAG" --os linux --architecture amd64 --config.user 0:0 \
    --config.workingdir /app \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.cmd python --author "rsl scripts/demo_images.sh" >/dev/null
  umoci gc --layout "$tmp/oci"
  rm -rf "$tmp/app" "$tmp/app.tar"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  printf '%s\n' "$key" >"$dir/id"
  touch "$dir/done"
  say "image $key built ($dir)"
  echo "$dir"
}

registry_up() {
  local out=$1 image=$2
  need_tools docker-registry skopeo python3
  local reg=$out/registry
  mkdir -p "$reg/data"
  cat >"$reg/config.yml" <<EOF
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $reg/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:0
EOF
  docker-registry serve "$reg/config.yml" >"$reg/registry.log" 2>&1 &
  local pid=$!
  local port=""
  for _ in $(seq 1 200); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$reg/registry.log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$reg/registry.log" >&2; die "docker-registry exited"; }
    sleep 0.05
  done
  [ -n "$port" ] || { kill "$pid"; die "docker-registry did not say its port (log: $reg/registry.log)"; }
  {
    echo "REGISTRY=127.0.0.1:$port"
    echo "REGISTRY_PID=$pid"
    echo "DEMO_IMAGE_ID=$(cat "$image/id")"
  } >"$reg/env"
  say "docker-registry on 127.0.0.1:$port (pid $pid, config $reg/config.yml)"
  local name
  for name in "${IMAGES[@]}"; do
    skopeo copy --quiet --dest-tls-verify=false "oci:$image/oci:$TAG" \
      "docker://127.0.0.1:$port/$name" >"$reg/skopeo.log" 2>&1 ||
      { cat "$reg/skopeo.log" >&2; kill "$pid"; die "skopeo copy to 127.0.0.1:$port/$name failed"; }
    local digest
    digest=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://127.0.0.1:$port/$name")
    say "pushed 127.0.0.1:$port/$name ($digest)"
  done
}

registry_down() {
  local env=$1/registry/env
  [ -f "$env" ] || return 0
  local pid
  pid=$(sed -n 's/^REGISTRY_PID=//p' "$env")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}

mkdir -p "$CACHE"
case "${1:-}" in
  build)
    t0=$SECONDS
    build_image
    say "build: $((SECONDS - t0)) s"
    ;;
  up)
    [ -n "${2:-}" ] || die "usage: $0 up DIR"
    t0=$SECONDS
    image=$(build_image)
    registry_up "$2" "$image"
    say "up: $((SECONDS - t0)) s"
    ;;
  down)
    [ -n "${2:-}" ] || die "usage: $0 down DIR"
    registry_down "$2"
    ;;
  *)
    echo "usage: $0 build | up DIR | down DIR" >&2
    exit 2
    ;;
esac
