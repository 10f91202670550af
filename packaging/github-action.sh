#!/usr/bin/env bash
# The GitHub Action's one step (action.yml at the repository root): install the one-file
# binary of a release for this runner and run it.
#
#   UNFINALIZE_VERSION   a release tag (v0.2.0), or "latest"; empty: the tag the action was
#                        used at (uses: kubectl-unfinalize/kubectl-unfinalize@v0.2.0), else latest
#   UNFINALIZE_ARGS      the arguments, shell-quoted (default in action.yml: scan --wait --timeout 2m);
#                        empty: install only
#   UNFINALIZE_RELEASES  where the releases are: <releases>/download/<tag>/<archive> and
#                        <releases>/latest/download/<archive> (a GitHub releases URL; file:// for a copy)
#
# The archive is checked against the release's <archive>.sha256 before anything is unpacked
# or run: a mismatch ends the step with exit 2 and nothing installed. The install directory
# goes on GITHUB_PATH, so later steps (a teardown with `if: always()`) run `kubectl unfinalize`
# without installing again, and the binary's path is the step's `path` output. The step's
# exit code is the tool's: 0 nothing held (or all freed), 1 stuck or failed, 3 still pending.
set -euo pipefail

fail() {
  echo "::error title=kubectl-unfinalize::$1" >&2
  exit 2
}

platform() {
  local os arch
  case "${RUNNER_OS:-$(uname -s)}" in
    Linux | linux) os=linux ;;
    macOS | Darwin) os=darwin ;;
    Windows | MINGW* | MSYS* | CYGWIN*) os=windows ;;
    *) fail "no release binary for the OS ${RUNNER_OS:-$(uname -s)}" ;;
  esac
  case "${RUNNER_ARCH:-$(uname -m)}" in
    X64 | x86_64 | amd64) arch=amd64 ;;
    ARM64 | aarch64 | arm64) arch=arm64 ;;
    *) fail "no release binary for the architecture ${RUNNER_ARCH:-$(uname -m)}" ;;
  esac
  echo "${os}_${arch}"
}

sha256() {
  if command -v sha256sum > /dev/null; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

version=${UNFINALIZE_VERSION:-}
if [[ -z $version ]]; then
  version=latest
  [[ ${GITHUB_ACTION_REF:-} == v[0-9]* ]] && version=$GITHUB_ACTION_REF
fi
releases=${UNFINALIZE_RELEASES:-https://github.com/kubectl-unfinalize/kubectl-unfinalize/releases}
name=$(platform)
archive="kubectl-unfinalize_${name}.tar.gz"
exe=kubectl-unfinalize
[[ $name == windows_* ]] && exe=kubectl-unfinalize.exe
if [[ $version == latest ]]; then
  url="${releases%/}/latest/download/$archive"
else
  url="${releases%/}/download/$version/$archive"
fi

work=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/kubectl-unfinalize.XXXXXX")
curl -fsSL --retry 3 -o "$work/$archive" "$url" || fail "cannot download $url"
curl -fsSL --retry 3 -o "$work/$archive.sha256" "$url.sha256" || fail "cannot download $url.sha256"
expected=$(cut -d' ' -f1 < "$work/$archive.sha256")
actual=$(sha256 "$work/$archive")
[[ $actual == "$expected" ]] || fail "$archive does not match its .sha256 ($actual, expected $expected): not installed"

install="$work/bin"
mkdir -p "$install"
tar -xzf "$work/$archive" -C "$install" "$exe"
rm -f "$work/$archive"
echo "installed kubectl-unfinalize $version ($name): $("$install/$exe" --version)"
[[ -n ${GITHUB_PATH:-} ]] && echo "$install" >> "$GITHUB_PATH"
[[ -n ${GITHUB_OUTPUT:-} ]] && echo "path=$install/$exe" >> "$GITHUB_OUTPUT"

args=()
if [[ -n ${UNFINALIZE_ARGS//[[:space:]]/} ]]; then
  # xargs splits as a shell would (quotes, backslashes) without running anything
  while IFS= read -r -d '' arg; do args+=("$arg"); done < <(printf '%s' "$UNFINALIZE_ARGS" | xargs printf '%s\0')
fi
[[ ${#args[@]} -eq 0 ]] && exit 0
echo "+ kubectl unfinalize ${args[*]}"
exec "$install/$exe" "${args[@]}"
