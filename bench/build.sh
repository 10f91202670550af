#!/usr/bin/env bash
# bench/build.sh NAME: build the client-go program bench/NAME (ceiling, lister) into the
# control plane's cache bin directory as unfinalize-NAME, only when the binary is missing
# or its sources changed (their hash is kept in a stamp next to it).
# Prints the binary's path on stdout.
set -euo pipefail

NAME="${1:?usage: bench/build.sh NAME (a directory of bench/)}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/$NAME"
[[ -f $SRC/go.mod ]] || { echo "bench/build.sh: no Go program in bench/$NAME" >&2; exit 2; }
K8S_VERSION="v1.36.3"
CACHE_ROOT="${UNFINALIZE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-unfinalize}"
BIN="${CACHE_ROOT}/k8s-${K8S_VERSION}/bin"
OUT="$BIN/unfinalize-$NAME"
mkdir -p "$BIN"

hash=$(cd "$SRC" && cat go.mod go.sum ./*.go "$HERE/build.sh" | sha256sum | cut -c1-16)
fresh() { [[ -x $OUT && "$(cat "$OUT.stamp" 2>/dev/null)" == "$hash" ]]; }
if fresh; then echo "$OUT"; exit 0; fi

exec 9>"$BIN/.$NAME.lock"
flock 9  # one build at a time; another may have finished it meanwhile
if fresh; then echo "$OUT"; exit 0; fi
start=$SECONDS
echo "building unfinalize-$NAME (client-go, bench/$NAME)" >&2
(cd "$SRC" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT.tmp" .)
mv "$OUT.tmp" "$OUT"
echo "$hash" >"$OUT.stamp"
echo "built unfinalize-$NAME in $((SECONDS - start))s" >&2
echo "$OUT"
