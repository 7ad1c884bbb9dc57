#!/usr/bin/env bash
# How the fixture beside this script was made (BIN: a build's bin directory). Kept for the record and for
# making the next one; the test never runs it.
set -euo pipefail
BIN=${1:?usage: make.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
"$BIN/rsl-controller" --listen 127.0.0.1:18555 --state-dir "$tmp/state" > "$tmp/ctl.log" 2>&1 &
ctl=$!
until "$BIN/seedctl" workload list --server http://127.0.0.1:18555 --token x > /dev/null 2>&1 ||
  grep -q listening "$tmp/ctl.log"; do sleep 0.2; done
token=$("$BIN/seedctl" token create --state-dir "$tmp/state" --namespace risk --role editor | tail -1)
export SEEDCTL_SERVER=http://127.0.0.1:18555 SEEDCTL_TOKEN=$token
"$BIN/seedctl" secret create db-creds --from-literal password=s3cr3t-fixture -n risk
"$BIN/seedctl" workload submit -f "$here/workload.yaml" -n risk
sleep 8
"$BIN/seedctl" workload list -n risk
"$BIN/seedctl" datasource register s3 --name fixture-s3 --state-dir "$tmp/state" \
  --endpoint http://127.0.0.1:9 --access-key AKIAFIXTURE --secret-key fixture-secret-key-value --bucket fx
kill -TERM "$ctl"; wait "$ctl" || true
sqlite3 "$tmp/state/rsl.db" .dump > "$here/rsl.sql"
cp "$tmp/state/secret.key" "$here/secret.key"
echo "$token" > "$here/token"
rm -rf "$tmp"
