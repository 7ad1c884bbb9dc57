#!/bin/bash
# A real S3 server for the data tests (CTest label `s3`): a throwaway single-node Ceph 16.2
# (1 mon + 1 osd on memstore + radosgw, no mgr) on 127.0.0.1, from Debian packages
# (scripts/deps/data.txt). Start takes ~6 s. Learned from shared/tools/ceph-single-node.sh:
# stop order rgw -> osd -> mon (radosgw hangs ~120 s if the OSD goes first), one pool replica,
# memstore so no disk image is needed.
# usage: scripts/s3-server.sh install|start|stop|status|env
#   env prints S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY for the tests.
set -euo pipefail
BASE=${RSL_S3_DIR:-${TMPDIR:-/tmp}/rsl-s3-server}
STORE=${CEPH_CI_STORE:-memstore}     # memstore | bluestore
AUTH=${CEPH_CI_AUTH:-cephx}          # cephx | none
MON_PORT=${CEPH_CI_MON_PORT:-6789}   # msgr v1 port
MON_PORT2=${CEPH_CI_MON_PORT2:-3300} # msgr v2 port
RGW_PORT=${RSL_S3_PORT:-7480}
AK=${S3_ACCESS_KEY:-0555b35654ad1656d804}
SK=${S3_SECRET_KEY:-h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==}
CONF=$BASE/ceph.conf
export CEPH_CONF=$CONF

log(){ echo "[$(date +%T)] $*" >&2; }

do_install(){
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends ceph-mon ceph-osd radosgw ceph-common curl uuid-runtime
}

write_conf(){
  local fsid=$1
  cat > $CONF <<EOC
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$MON_PORT2,v1:127.0.0.1:$MON_PORT]
mon initial members = a
public network = 127.0.0.0/8
cluster network = 127.0.0.0/8
ms bind ipv6 = false
auth cluster required = $AUTH
auth service required = $AUTH
auth client required = $AUTH
auth allow insecure global id reclaim = false
run dir = $BASE/run
admin socket = $BASE/run/\$cluster-\$name.asok
log file = $BASE/log/\$cluster-\$name.log
pid file = $BASE/run/\$cluster-\$name.pid
keyring = $BASE/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
paxos propose interval = 0.1
mon data avail warn = 1
mon data avail crit = 0
[mon]
mon data = $BASE/mon.\$id
[osd]
osd data = $BASE/osd.\$id
osd objectstore = $STORE
memstore device bytes = 4294967296
bluestore block path = $BASE/osd.\$id.block
bluestore block size = 10737418240
bluestore block create = true
osd memory target = 939524096
bluestore cache autotune = false
bluestore cache size = 134217728
# CI machines are loaded (parallel compiles and tests): an op thread starved for 150 s makes
# the OSD abort itself (seen here). Give it far longer before suicide.
osd op thread timeout = 120
osd op thread suicide timeout = 1800
osd op num shards = 1
osd op num threads per shard = 2
[client.rgw.a]
$( [ "$AUTH" = none ] && echo "# radosgw forces ms_mon_client_mode=secure, impossible with auth=none
ms mon client mode = crc" )
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw data = $BASE/rgw.a
rgw thread pool size = 64
rgw dns name = localhost
rgw enable usage log = false
EOC
}

wait_for(){ # timeout daemon-name cmd...   (fails early if the daemon died)
  local t=$1 d=$2; shift 2; local i=0 pf=$BASE/run/ceph-$d.pid
  until "$@" >/dev/null 2>&1; do
    i=$((i+1)); [ $i -ge $((t*2)) ] && { log "timeout: $*"; return 1; }
    if [ $i -gt 4 ] && [ -s $pf ] && ! kill -0 "$(cat $pf)" 2>/dev/null; then log "$d died"; return 1; fi
    sleep 0.5
  done
}

on_fail(){
  log "start FAILED"; tail -n 20 $BASE/log/*.log >&2 || true
  [ -n "${KEEP_ON_FAIL:-}" ] || do_stop; exit 1
}

do_start(){
  [ -e $BASE ] && { log "$BASE exists (a previous run?): stopping it first"; do_stop; }
  local port; for port in $MON_PORT $MON_PORT2 $RGW_PORT; do   # a busy port would give a false "ready"
    if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then log "port $port already in use"; exit 1; fi
  done
  trap on_fail ERR
  mkdir -p $BASE/run $BASE/log $BASE/mon.a $BASE/osd.0 $BASE/rgw.a
  local fsid; fsid=$(uuidgen)
  write_conf $fsid
  if [ "$AUTH" = cephx ]; then   # one keyring for everything; mon --mkfs imports all of it
    local k=$BASE/keyring
    ceph-authtool -C $k -g -n mon. --cap mon 'allow *' >/dev/null
    ceph-authtool $k -g -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
    ceph-authtool $k -g -n osd.0 --cap mon 'allow profile osd' --cap mgr 'allow profile osd' --cap osd 'allow *' >/dev/null
    ceph-authtool $k -g -n client.rgw.a --cap mon 'allow rw' --cap osd 'allow rwx' --cap mgr 'allow rw' >/dev/null
  else touch $BASE/keyring; fi
  # --- mon
  monmaptool --create --fsid $fsid --addv a "[v2:127.0.0.1:$MON_PORT2,v1:127.0.0.1:$MON_PORT]" $BASE/monmap >/dev/null
  ceph-mon --mkfs -i a --monmap $BASE/monmap --keyring $BASE/keyring
  ceph-mon -i a
  wait_for 30 mon.a ceph --connect-timeout 5 -s
  log "mon up"
  # --- osd
  local uuid; uuid=$(uuidgen)
  local id; id=$(ceph osd new $uuid)
  ceph-osd -i $id --mkfs --osd-uuid $uuid
  ceph-osd -i $id
  wait_for 60 osd.$id sh -c "ceph osd dump | grep -q '^osd.$id up'"
  log "osd up"
  # --- rgw (creates its pools on first start)
  radosgw -n client.rgw.a
  wait_for 120 client.rgw.a sh -c "curl -sf http://127.0.0.1:$RGW_PORT/ | grep -q ListAllMyBucketsResult"
  log "rgw up"
  radosgw-admin user create --uid=test --display-name=test --access-key="$AK" --secret-key="$SK" >/dev/null
  printf '[default]\naccess_key = %s\nsecret_key = %s\nhost_base = 127.0.0.1:%s\nhost_bucket = 127.0.0.1:%s\nuse_https = False\nbucket_location = us-east-1\n' \
    "$AK" "$SK" $RGW_PORT $RGW_PORT > $BASE/s3cfg
  log "S3 ready: http://127.0.0.1:$RGW_PORT (s3cmd -c $BASE/s3cfg)"
}

term_wait(){ # SIGTERM the given daemons, wait up to 6 s, then SIGKILL
  local pids="" p n i alive
  for n in "$@"; do
    p=$BASE/run/ceph-$n.pid
    [ -s "$p" ] && { kill -TERM "$(cat $p)" 2>/dev/null || true; pids="$pids $(cat $p)"; }
  done
  for i in $(seq 24); do
    alive=""; for p in $pids; do kill -0 $p 2>/dev/null && alive="$alive $p"; done
    [ -z "$alive" ] && return 0; sleep 0.25
  done
  for p in $pids; do kill -KILL $p 2>/dev/null || true; done
}

do_stop(){
  [ -d $BASE ] || return 0
  # strictly in this order: radosgw hangs ~120 s in shutdown if the OSD is already gone,
  # and an OSD whose mon is gone waits osd_mon_shutdown_timeout (5 s)
  term_wait client.rgw.a; term_wait osd.0; term_wait mon.a
  rm -rf $BASE
}

case ${1:-} in
  install) do_install;; start) do_start;; stop) do_stop;;
  status) ceph -s;;
  env) echo "S3_ENDPOINT=http://127.0.0.1:$RGW_PORT S3_ACCESS_KEY=$AK S3_SECRET_KEY=$SK";;
  *) echo "usage: $0 install|start|stop|status|env"; exit 2;;
esac
