#!/usr/bin/env bash
# CI: the Debian packages (docs/install.md), built, linted, installed and used as an operator
# would, on this fresh machine, as root:
#   make package; lintian (fails on errors); an "older" copy of the packages (same files, a
#   lower version) installed with apt; the controller started as its unit's ExecStart line,
#   as the unit's user; a token, the demo's datasources and environments, the fraud example
#   run to SUCCEEDED with /usr/bin/seedctl; the real packages installed over the old ones
#   (an upgrade): the state directory kept and opened by the new controller; man pages and
#   the bash completion; purge: no file left outside /var/lib/rsl, the rsl user gone.
# No systemd in CI: `systemd-analyze verify` runs where it is installed.
# Knobs: RSL_PKG_PORT (default 18481), RSL_PKG_ROWS (transactions, default 100000),
#        SKIP_BUILD=1 (use the .debs already in build-pkg/packages).
# Time (2 cores, cold, no ccache): 447 s on an otherwise idle machine (a clean-clone CI run);
# about 13 min with other builds running. Nearly all of it is `make package`'s compile.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
PORT=${RSL_PKG_PORT:-18481}
ROWS=${RSL_PKG_ROWS:-100000}
SERVER=http://127.0.0.1:$PORT
PKGS=(rsl-controller seedctl rsl-runtime)
UNIT=/lib/systemd/system/rsl-controller.service
STATE=/var/lib/rsl
WORKLOAD_TIMEOUT_S=900
READY_TIMEOUT_S=60

step() { printf '\n== package: %s (%d s)\n' "$*" $(( $(date +%s) - start )); }
die() { printf 'package: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root: it installs and purges packages"
for p in "${PKGS[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed; then
    die "$p is already installed here; purge it first (apt-get purge ${PKGS[*]})"
  fi
done
[ ! -e "$STATE" ] || die "$STATE exists: this check needs a machine without RSL's state"

work=$(mktemp -d /tmp/rsl-package.XXXXXX)
chmod 755 "$work"
controller_pid=""

# SIGTERM to the controller alone, as the unit's KillMode=process: rsl-shim stays, for the
# next controller to adopt.
stop_controller() {
  if [ -n "$controller_pid" ] && kill -0 "$controller_pid" 2>/dev/null; then
    # The controller is runuser's child (runuser would SIGKILL it 2 s after a SIGTERM).
    local child
    child=$(ps -o pid= --ppid "$controller_pid" | tr -d ' ')
    kill -TERM "${child:-$controller_pid}" 2>/dev/null || true
    wait "$controller_pid" 2>/dev/null || true
  fi
  controller_pid=""
}
# Every process of the package's own user is one this script started.
stop_rsl_processes() {
  local pids
  pids=$(ps -u rsl -o pid= 2>/dev/null || true)
  if [ -n "$pids" ]; then
    echo "stopping the rsl user's processes: $(echo $pids)"
    kill -TERM $pids 2>/dev/null || true
    sleep 1
    kill -KILL $pids 2>/dev/null || true
  fi
}
cleanup() {
  local rc=$?
  stop_controller
  stop_rsl_processes
  if [ $rc -ne 0 ]; then
    [ -f "$work/controller.log" ] && { echo "--- controller.log (last 40 lines)"; tail -n 40 "$work/controller.log"; }
    # Leave the machine as found: the packages and the state this script made go.
    for p in "${PKGS[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed &&
        apt-get purge -y -qq "$p" >/dev/null 2>&1 || true
    done
    [ -n "${made_state:-}" ] && rm -rf "$STATE"
  fi
  rm -rf "$work"
  echo "package: $([ $rc -eq 0 ] && echo ok || echo FAILED) in $(( $(date +%s) - start )) s"
}
trap cleanup EXIT

# Everything under /etc, /usr and /var but dpkg's and apt's own records, caches and logs.
snapshot() {
  find /etc /usr /var -xdev \( -path "$STATE" -o -path /var/lib/dpkg -o -path /var/lib/apt \
    -o -path /var/cache -o -path /var/log -o -path /var/tmp -o -path /var/spool \) -prune \
    -o -print | sort
}

apt_install() {
  # apt resolves the dependencies (shared libraries, adduser) from the archive.
  [ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep _Packages)" ] || apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" ||
    die "apt-get install $* failed"
}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  step "build the packages (make package)"
  t=$(date +%s)
  make --no-print-directory package
  echo "make package: $(( $(date +%s) - t )) s"
fi
debs=(build-pkg/packages/*.deb)
[ ${#debs[@]} -eq 3 ] || die "expected 3 .deb files in build-pkg/packages, found: ${debs[*]}"
for d in "${debs[@]}"; do dpkg-deb --info "$d" | sed -n 's/^ \(Package\|Version\|Depends\|Recommends\): /  \1: /p'; done

step "lintian (errors fail)"
lintian --fail-on error --tag-display-limit 0 "${debs[@]}" || die "lintian reports errors (above)"

step "an older version of the same packages (dpkg-deb repack) for the upgrade check"
version=$(dpkg-deb -f "${debs[0]}" Version)
old_version=${version%-*}-0
mkdir -p "$work/old"
for d in "${debs[@]}"; do
  dpkg-deb -R "$d" "$work/old/tree"
  sed -i "s/$version/$old_version/g" "$work/old/tree/DEBIAN/control"
  dpkg-deb -Zgzip -z1 -b "$work/old/tree" "$work/old/" >/dev/null  # fast: only installed
  rm -rf "$work/old/tree"
done
ls "$work/old"

step "install $old_version with apt"
snapshot >"$work/before.txt"
made_state=1
apt_install "$work"/old/*.deb
for p in "${PKGS[@]}"; do dpkg -L "$p" >>"$work/owned.txt"; done
[ -x /usr/bin/seedctl ] && [ -x /usr/bin/rsl-controller ] || die "/usr/bin/seedctl or rsl-controller missing"
# seedctl allocates through tcmalloc (CMakeLists.txt, RSL_MALLOC), pulled in by its Depends.
libs=$(ldd /usr/bin/seedctl) || die "ldd /usr/bin/seedctl failed"
grep -q 'libtcmalloc_minimal\.so' <<<"$libs" || die "/usr/bin/seedctl is not linked with tcmalloc"
getent passwd rsl >/dev/null || die "postinst made no rsl user"
[ "$(stat -c '%U %a' "$STATE")" = "rsl 700" ] || die "$STATE is not rsl's, mode 700: $(stat -c '%U %a' "$STATE")"

if command -v systemd-analyze >/dev/null; then
  step "systemd-analyze verify $UNIT"
  systemd-analyze verify "$UNIT" || die "systemd-analyze verify $UNIT failed"
else
  step "systemd-analyze: not installed here, unit not verified"
fi

# The controller as the unit starts it: its ExecStart line, as its User, from /. Two flags are
# added (a flag overrides its key of the config file): the port, and the devices the fraud
# example's nodes declare (as scripts/demo.sh does; its steps ask for a GPU).
example=$work/fraud-detect
cp -r examples/fraud-detect "$example"
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
unit_user=$(sed -n 's/^User=//p' "$UNIT")
[ -n "$exec_start" ] && [ -n "$unit_user" ] || die "no ExecStart= or User= in $UNIT"
start_controller() {
  local extra=(--listen "127.0.0.1:$PORT" --node-file "$example/nodes.yaml")
  step "start: runuser -u $unit_user -- $exec_start ${extra[*]}"
  # shellcheck disable=SC2086  # the unit's line, split as systemd splits it (no quotes in it)
  (cd / && exec runuser -u "$unit_user" -- $exec_start "${extra[@]}") \
    >>"$work/controller.log" 2>&1 &
  controller_pid=$!
  local deadline=$(( $(date +%s) + READY_TIMEOUT_S ))
  until seedctl workload list >/dev/null 2>&1; do
    kill -0 "$controller_pid" 2>/dev/null || die "rsl-controller exited (controller.log below)"
    [ "$(date +%s)" -lt "$deadline" ] || die "rsl-controller not answering after ${READY_TIMEOUT_S}s"
    sleep 0.5
  done
  echo "rsl-controller answers on $SERVER (pid $controller_pid)"
}
as_rsl() { runuser -u "$unit_user" -- env RSL_STATE_DIR="$STATE" "$@"; }

step "create a token (seedctl token create, as $unit_user, on $STATE)"
token_out=$(as_rsl seedctl token create --state-dir "$STATE" --namespace default --role admin \
  --subject package-ci) || die "seedctl token create failed"
SEEDCTL_TOKEN=$(printf '%s\n' "$token_out" | tail -n 1)
[ -n "$SEEDCTL_TOKEN" ] || die "token create printed no token"
export SEEDCTL_TOKEN SEEDCTL_SERVER=$SERVER
start_controller

step "the fraud example: datasources, environments, data (as scripts/demo.sh on the host path)"
hdfs=$work/hdfs-ns1
ceph=$work/ceph-models
mkdir -p "$hdfs" "$ceph"
chown "$unit_user:" "$hdfs" "$ceph"
as_rsl seedctl datasource register local --name hdfs-ns1 --authority hdfs://ns1 --path "$hdfs"
as_rsl seedctl datasource register local --name ceph-models --authority ceph://models --path "$ceph"
for image in volc/ingest:v1.0 volc/preprocess-fraud:v1.1 volc/train-fraud-pytorch:v2.1 \
             volc/validate-fraud:v1.0; do
  as_rsl seedctl env register "$image" --python "$example/image/python3"
done
as_rsl python3 "$example/gen_transactions.py" --out "$hdfs" --rows "$ROWS" >/dev/null
# The pinned fingerprint is the model of the default 1,000,000 rows (scripts/demo.sh).
sed -i '/^ *buildFingerprint:/d' "$example/fraud-detect-workload.yaml"

step "seedctl workload submit (/usr/bin/seedctl)"
submit_out=$(seedctl workload submit -f "$example/fraud-detect-workload.yaml") || die "submit failed"
printf '%s\n' "$submit_out"
id=$(printf '%s\n' "$submit_out" | sed -n 's/^ *ID: *\(wl-[0-9a-z-]*\).*/\1/p' | head -n 1)
[ -n "$id" ] || die "no workload id in the submit output"
phase_of() {
  seedctl workload status --id "$id" -o json | python3 -c \
    'import json,sys; d=json.load(sys.stdin); print(d.get("status", {}).get("phase", d.get("phase", "")))'
}
timeout "$WORKLOAD_TIMEOUT_S" seedctl workload status --id "$id" --watch >/dev/null || true
phase=$(phase_of)
seedctl workload status --id "$id"
[ "$phase" = SUCCEEDED ] || die "workload $id ended $phase"
echo "workload $id: SUCCEEDED"

step "upgrade: install $version over $old_version (apt), rsl-shim still running"
stop_controller
ps -u rsl -o pid=,args= | sed 's/^/  still running: /'
echo "state before: $(du -sh "$STATE" | cut -f1) in $STATE"
apt_install ./build-pkg/packages/*.deb
for p in "${PKGS[@]}"; do
  [ "$(dpkg-query -W -f='${Version}' "$p")" = "$version" ] || die "$p is not at $version after the upgrade"
done
[ -d "$STATE" ] && [ "$(stat -c %U "$STATE")" = rsl ] || die "$STATE lost or not rsl's after the upgrade"
start_controller
phase=$(phase_of)
[ "$phase" = SUCCEEDED ] || die "after the upgrade, workload $id reads '$phase', not SUCCEEDED"
echo "after the upgrade the controller still knows workload $id: $phase"

step "man pages (man -P cat)"
man -P cat seedctl >"$work/man.txt" 2>"$work/man.err" || { cat "$work/man.err"; die "man seedctl failed"; }
grep -q "seedctl" "$work/man.txt" || die "man seedctl printed no seedctl"
man -P cat seedctl-workload-submit >/dev/null 2>&1 || die "man seedctl-workload-submit failed"
man -P cat rsl-controller >/dev/null 2>&1 || die "man rsl-controller failed"
echo "man seedctl: $(wc -l <"$work/man.txt") lines; seedctl-workload-submit, rsl-controller render"

step "completions"
complete_line=$(bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader seedctl
                         complete -p seedctl' 2>&1) || die "bash did not load the seedctl completion: $complete_line"
echo "bash: $complete_line"
if command -v zsh >/dev/null; then
  zsh -fc 'fpath=(/usr/share/zsh/vendor-completions $fpath); autoload -U compinit; compinit -u
           (( $+_comps[seedctl] ))' || die "zsh's compinit did not find _seedctl"
  echo "zsh: _seedctl found by compinit"
fi

step "purge (the postrm stops what the rsl user still runs)"
stop_controller
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${PKGS[@]}" >/dev/null || die "apt-get purge failed"
[ -z "$(ps -u rsl -o pid= 2>/dev/null)" ] || die "processes of rsl left after the purge"
left=$(snapshot | comm -13 "$work/before.txt" -)
[ -z "$left" ] || die "files left after the purge (outside $STATE):"$'\n'"$left"
while read -r f; do
  case "$f" in /usr|/usr/*/|/.) continue ;; esac
  [ -d "$f" ] && continue  # shared directories (/usr/bin, /etc) stay
  [ ! -e "$f" ] && [ ! -L "$f" ] || die "$f (a file of the packages) is still there"
done <"$work/owned.txt"
! getent passwd rsl >/dev/null || die "the rsl user is still there"
! getent group rsl >/dev/null || die "the rsl group is still there"
[ -d "$STATE" ] && [ "$(stat -c '%U %a' "$STATE")" = "root 700" ] ||
  die "$STATE should be kept, root's, mode 700 after a purge"
echo "nothing left outside $STATE; user and group rsl gone; $STATE kept (root:root 0700)"
rm -rf "$STATE"
made_state=""
