#!/usr/bin/env bash
# Build bench/lister into the control plane's cache bin directory, only when the binary is
# missing or its sources changed (their hash is kept in a stamp next to it).
# Prints the binary's path on stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
K8S_VERSION="v1.36.3"
CACHE_ROOT="${UNFINALIZE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-unfinalize}"
BIN="${CACHE_ROOT}/k8s-${K8S_VERSION}/bin"
OUT="$BIN/unfinalize-lister"
mkdir -p "$BIN"

hash=$(cd "$HERE" && cat go.mod go.sum ./*.go build.sh | sha256sum | cut -c1-16)
fresh() { [[ -x $OUT && "$(cat "$OUT.stamp" 2>/dev/null)" == "$hash" ]]; }
if fresh; then echo "$OUT"; exit 0; fi

exec 9>"$BIN/.lister.lock"
flock 9  # one build at a time; another may have finished it meanwhile
if fresh; then echo "$OUT"; exit 0; fi
start=$SECONDS
echo "building unfinalize-lister (client-go, bench/lister)" >&2
(cd "$HERE" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT.tmp" .)
mv "$OUT.tmp" "$OUT"
echo "$hash" >"$OUT.stamp"
echo "built unfinalize-lister in $((SECONDS - start))s" >&2
echo "$OUT"
