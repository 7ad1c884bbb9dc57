#!/usr/bin/env bash
# Installs every Debian package RSL needs to build, test, benchmark and run its demo.
# Idempotent: packages already present are skipped quickly. Run as root (or with sudo).
set -euo pipefail

PKGS=(
  # toolchain
  build-essential cmake ninja-build clang clang-format clang-tidy lld libclang-rt-14-dev
  pkg-config git ca-certificates curl xz-utils procps psmisc
  # libraries
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev libssl-dev
  libgoogle-perftools-dev libexpat1-dev libsimdjson-dev libxxhash-dev libsnappy-dev libzstd-dev zlib1g-dev liblz4-dev libbrotli-dev libavro-dev
  # independent writers/peers for tests and benchmarks, and the demo's Python
  python3 python3-numpy python3-avro
)
# Each part of the project that needs more (Slurm, the S3 server, load tools...) lists its
# packages in scripts/deps/<part>.txt, one per line, '#' comments allowed.
here=$(cd "$(dirname "$0")" && pwd)
for f in "$here"/deps/*.txt; do
  [ -f "$f" ] || continue
  while read -r line; do
    line=${line%%#*}
    for p in $line; do PKGS+=("$p"); done
  done < "$f"
done

missing=()
for p in "${PKGS[@]}"; do
  [ -z "$p" ] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm (for DuckDB, the independent Parquet writer/peer) come with the machine
# image on our hosts; fall back to Debian's packages where they are absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
