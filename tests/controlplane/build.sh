#!/usr/bin/env bash
# Build the control plane (etcd, kube-apiserver, kube-controller-manager, kubectl) and
# the krew/actionlint tools from the Go module proxy into a cache outside the repo.
# Only missing binaries are built. Prints the bin directory on stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
K8S_VERSION="v1.36.3"
CACHE_ROOT="${UNFINALIZE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-unfinalize}"
BIN="${CACHE_ROOT}/k8s-${K8S_VERSION}/bin"
mkdir -p "$BIN"

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

build() {  # build MODULE_DIR NAME PACKAGE [LDFLAGS]
  local dir="$1" name="$2" pkg="$3" flags="${4:-"-s -w"}"
  if [[ -x "$BIN/$name" ]]; then return; fi
  local start=$SECONDS
  echo "building $name ($pkg)" >&2
  (cd "$HERE/$dir" && go build -ldflags "$flags" -o "$BIN/$name.tmp" "$pkg")
  mv "$BIN/$name.tmp" "$BIN/$name"
  echo "built $name in $((SECONDS - start))s" >&2
}

build k8s etcd go.etcd.io/etcd/server/v3
build k8s kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ldflags"
build k8s kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$ldflags"
build k8s kubectl k8s.io/kubernetes/cmd/kubectl "$ldflags"
if [[ "${UNFINALIZE_SKIP_TOOLS:-}" != 1 ]]; then
  build tools krew sigs.k8s.io/krew/cmd/krew
  build tools validate-krew-manifest sigs.k8s.io/krew/cmd/validate-krew-manifest
  build tools actionlint github.com/rhysd/actionlint/cmd/actionlint
fi
echo "$BIN"
