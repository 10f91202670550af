"""Where the control plane's executables come from, so every entry point finds the same ones.

The release is $UNFINALIZE_K8S_VERSION's (build.sh says which it can build), else the
pinned one. $KUBEBUILDER_ASSETS wins when it holds etcd and kube-apiserver (developers who already
have envtest assets skip a long Go build); whatever it lacks comes from the cache that
build.sh fills, and build.sh runs only when something is missing there too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import deque
from pathlib import Path

PINNED_VERSION = "v1.36.3"  # must match build.sh's PINNED: the release the full suite runs against
# UNFINALIZE_K8S_VERSION=v1.MINOR.PATCH: another release, built by build.sh into its own directory.
K8S_VERSION = os.environ.get("UNFINALIZE_K8S_VERSION") or PINNED_VERSION
HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached."""


def cache_bin_dir() -> Path:
    """The directory build.sh fills; the same rule as build.sh, so both agree without talking."""
    root = os.environ.get("UNFINALIZE_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "kubectl-unfinalize")
    return Path(root) / f"k8s-{K8S_VERSION}" / "bin"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _search_dirs() -> list[Path]:
    dirs = []
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and all(_executable(Path(assets, n)) for n in ("etcd", "kube-apiserver")):
        dirs.append(Path(assets))
    dirs.append(cache_bin_dir())
    return dirs


def _lookup(names) -> dict[str, Path]:
    found = {}
    for name in names:
        for d in _search_dirs():
            if _executable(d / name):
                found[name] = d / name
                break
    return found


def missing_binaries(names=BINARIES) -> list[str]:
    """Names with no executable yet, so a caller can decide whether a slow build is coming."""
    found = _lookup(names)
    return [n for n in names if n not in found]


def find_binaries(names=BINARIES, *, build: bool = True) -> dict[str, Path]:
    """Map each name to an executable, building missing ones with build.sh."""
    found = _lookup(names)
    missing = [n for n in names if n not in found]
    if missing and build:
        build_binaries(names=missing)
        found = _lookup(names)
        missing = [n for n in names if n not in found]
    if missing:
        raise ControlPlaneError(
            f"missing binaries {', '.join(missing)}: not in $KUBEBUILDER_ASSETS "
            f"nor in {cache_bin_dir()} (run {BUILD_SCRIPT})"
        )
    return found


def build_binaries(out=None, names=BINARIES) -> None:
    """Run build.sh for `names` (the control plane's by default), streaming its output to `out` (stderr).

    A file lock serializes builds: parallel test sessions would otherwise race on the
    same cache and each spend minutes compiling.
    """
    out = out or sys.stderr
    cache = cache_bin_dir()
    cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, UNFINALIZE_SKIP_TOOLS="1")
    tail: deque[str] = deque(maxlen=40)
    import fcntl  # here, not at the top: the unit tests import this module on Windows too

    with open(cache / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        print(
            f"building {', '.join(names)} into {cache} from the Go module proxy: the first build takes"
            " 3-5 minutes on 2 cores (kube-apiserver most of it), then it is cached",
            file=out,
            flush=True,
        )
        try:
            proc = subprocess.Popen(
                ["bash", str(BUILD_SCRIPT), *names],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        except OSError as e:
            raise ControlPlaneError(f"cannot run {BUILD_SCRIPT}: {e}") from e
        for line in proc.stderr:
            tail.append(line)
            print(line, end="", file=out, flush=True)
        if proc.wait() != 0:
            raise ControlPlaneError(f"{BUILD_SCRIPT} failed with exit code {proc.returncode}:\n" + "".join(tail))
