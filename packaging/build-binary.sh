#!/usr/bin/env bash
# Reproducible one-file build of the plugin and its release archive.
#
#   packaging/build-binary.sh            # uses .venv/bin/python, or $PYTHON
#
# Produces, in dist/:
#   kubectl-unfinalize[.exe]                      the one-file binary (PyInstaller)
#   kubectl-unfinalize_<os>_<arch>.tar.gz         binary + LICENSE + man page + completion
#   kubectl-unfinalize_<os>_<arch>.tar.gz.sha256
# Same source + same pinned tools (packaging/requirements-build.txt) => same bytes:
# PYTHONHASHSEED=0, SOURCE_DATE_EPOCH = last commit time, sorted archive members with
# fixed owner/mode/mtime and a gzip header without name or time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [[ -z "${PYTHON:-}" ]]; then
  PYTHON=.venv/bin/python
  [[ -x $PYTHON ]] || PYTHON=python3
fi
[[ $PYTHON == */* ]] && PYTHON="$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")"  # keep venv symlinks

export PYTHONHASHSEED=0
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
export PYTHONDONTWRITEBYTECODE=1

os=$("$PYTHON" -c 'import sys; print({"win32": "windows"}.get(sys.platform, sys.platform))')
arch=$("$PYTHON" -c 'import platform; m = platform.machine().lower(); print({"x86_64": "amd64", "aarch64": "arm64"}.get(m, m))')
exe=""
[[ $os == windows ]] && exe=".exe"
name="kubectl-unfinalize_${os}_${arch}"

start=$SECONDS
"$PYTHON" packaging/build-man.py build/man/kubectl-unfinalize.1
rm -rf build/pyinstaller "dist/kubectl-unfinalize${exe}"
"$PYTHON" -m PyInstaller --noconfirm --clean --log-level WARN \
  --workpath build/pyinstaller --distpath dist packaging/kubectl-unfinalize.spec
echo "built dist/kubectl-unfinalize${exe} in $((SECONDS - start))s" >&2

"dist/kubectl-unfinalize${exe}" --version >&2  # smoke test

files=("dist/kubectl-unfinalize${exe}" LICENSE build/man/kubectl-unfinalize.1)
[[ $os == windows ]] || files+=(kubectl_complete-unfinalize)
"$PYTHON" packaging/archive.py "dist/${name}.tar.gz" "${files[@]}"
(cd dist && "$PYTHON" -c 'import hashlib, sys; n = sys.argv[1]; print(hashlib.sha256(open(n, "rb").read()).hexdigest() + "  " + n)' "${name}.tar.gz" > "${name}.tar.gz.sha256")
cat "dist/${name}.tar.gz.sha256"
