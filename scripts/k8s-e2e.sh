#!/usr/bin/env bash
# The fraud example on a real Kubernetes cluster with --backend k8s (docs/backends/k8s.md,
# "End to end on a real cluster"). Runs only where a cluster is reachable; otherwise it says
# why it skips and exits 0. CI does not run it (no cluster there).
#
#   KUBECONFIG        the cluster (default ~/.kube/config)
#   RSL_K8S_STAGING   where pods write outputs: s3://bucket/prefix (AWS_ENDPOINT_URL,
#                     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY reach it from the controller
#                     and, through an envFrom secret, from the pods) or file:///dir shared by
#                     every node and this machine
#   RSL_K8S_CONTEXT   kubeconfig context (default: current)
#   RSL_K8S_NAMESPACE Kubernetes namespace for RSL namespace "default" (default: default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
skip() { echo "k8s-e2e: SKIPPED: $*"; exit 0; }

kubeconfig=${KUBECONFIG:-$HOME/.kube/config}
kubeconfig=${kubeconfig%%:*}
[ -f "$kubeconfig" ] || skip "no kubeconfig (KUBECONFIG unset and no ~/.kube/config)"
command -v kubectl >/dev/null || skip "kubectl is not installed (used to check the cluster answers)"
ctx_args=()
[ -n "${RSL_K8S_CONTEXT:-}" ] && ctx_args=(--context "$RSL_K8S_CONTEXT")
kubectl --kubeconfig "$kubeconfig" "${ctx_args[@]}" --request-timeout=5s get nodes >/dev/null 2>&1 ||
  skip "the cluster in $kubeconfig does not answer (kubectl get nodes failed)"
[ -n "${RSL_K8S_STAGING:-}" ] || skip "RSL_K8S_STAGING is not set (s3://bucket/prefix or file:///shared/dir)"
[ -x "$BUILD/bin/seedctl" ] || { echo "k8s-e2e: $BUILD/bin/seedctl missing: make build" >&2; exit 1; }

state=$(mktemp -d /tmp/rsl-k8s-e2e.XXXXXX)
echo "k8s-e2e: cluster $(kubectl --kubeconfig "$kubeconfig" "${ctx_args[@]}" config current-context), staging $RSL_K8S_STAGING, state $state"
args=(run -f examples/fraud-detect/fraud-detect-workload.yaml --backend k8s
      --kubeconfig "$kubeconfig" --k8s-staging "$RSL_K8S_STAGING" --state-dir "$state")
[ -n "${RSL_K8S_CONTEXT:-}" ] && args+=(--context "$RSL_K8S_CONTEXT")
[ -n "${RSL_K8S_NAMESPACE:-}" ] && args+=(--k8s-namespace "default=$RSL_K8S_NAMESPACE")
"$BUILD/bin/seedctl" "${args[@]}"
echo "k8s-e2e: the run SUCCEEDED; its pods and secrets went with the run's owner ConfigMap:"
kubectl --kubeconfig "$kubeconfig" "${ctx_args[@]}" get pods,secrets,configmaps -A -l app.kubernetes.io/managed-by=rsl || true
