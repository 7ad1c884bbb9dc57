#!/usr/bin/env bash
# CI preparation for the Kubernetes schema tests (tests/k8s, label `k8s`): kubernetes-models
# (validators generated from the Kubernetes OpenAPI document) and yaml from npm, pinned in
# scripts/npm-tests.txt, into the gitignored tests/node_modules.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/npm-tests.sh  # one npm call for every part's packages
node --input-type=module -e "await import('$PWD/tests/k8s/validate.mjs')" </dev/null >/dev/null
