#!/usr/bin/env bash
# The problem and the fix in one run, against a throwaway local control plane:
# an operator's CRDs whose objects carry finalizers, and no operator any more.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
if [[ -z "${KUBECONFIG:-}" || "${1:-}" != "--inside" ]]; then
  # Nothing here waits on a controller (the CRDs' cleanup runs in kube-apiserver): no
  # kube-controller-manager, and only the three binaries the demo uses are built.
  PYTHONPATH="$ROOT/tests" exec "$PYTHON" -m controlplane run --no-controller-manager -- bash "$0" --inside
fi
BIN="$("$ROOT/tests/controlplane/build.sh" etcd kube-apiserver kubectl 2>/dev/null)"
# kubectl finds plugins on PATH: the checkout's kubectl-unfinalize runs with the venv's python.
export PATH="$BIN:$ROOT:$(dirname "$PYTHON"):$PATH"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
GROUP=kubernetes.dask.org N=${DEMO_OBJECTS:-300}
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*" >&2; "$@"; }

mkdir "$WORK/crds"
for kind in DaskCluster DaskWorkerGroup; do
  plural="$(tr '[:upper:]' '[:lower:]' <<<"$kind")s"
  cat >"$WORK/crds/$plural.yaml" <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $plural.$GROUP}
spec:
  group: $GROUP
  scope: Namespaced
  names: {plural: $plural, singular: $(tr '[:upper:]' '[:lower:]' <<<"$kind"), kind: $kind}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
YAML
done
say "An operator's CRDs, and $N objects per kind across 3 namespaces, each with the operator's finalizer"
run kubectl apply -f "$WORK/crds"
kubectl wait --for condition=Established -f "$WORK/crds" >/dev/null
"$PYTHON" - "$WORK/objects.yaml" "$N" "$GROUP" <<'PY'
import sys, yaml
path, n, group = sys.argv[1], int(sys.argv[2]), sys.argv[3]
items = [{"apiVersion": f"{group}/v1", "kind": kind, "metadata": {"name": f"{kind.lower()}-{i}",
          "namespace": f"team-{i % 3}", "finalizers": ["kopf.zalando.org/KopfFinalizerMarker"]}}
         for kind in ("DaskCluster", "DaskWorkerGroup") for i in range(n)]
yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, open(path, "w"))
PY
for ns in team-0 team-1 team-2; do kubectl create namespace "$ns" >/dev/null; done
kubectl apply -f "$WORK/objects.yaml" >/dev/null
run kubectl get daskclusters -A --no-headers | wc -l

say "The operator has stopped. The usual teardown hangs (cut short here at 15s):"
start=$SECONDS
run kubectl delete -f "$WORK/crds" --timeout=15s || echo "kubectl delete gave up after $((SECONDS - start))s"
run kubectl get crd

say "The fix:"
start=$SECONDS
run kubectl unfinalize -f "$WORK/crds" --delete --timeout 2m -o name | tail -n 3
echo "(output cut to 3 lines) done in $((SECONDS - start))s"
run kubectl get crd
run kubectl get namespaces team-0 team-1 team-2
