"""`kubectl unfinalize --version`: this version, Python's, the kubernetes client's and the
API servers it is tested against, without importing importlib.metadata when it can."""

from __future__ import annotations

import os
import sys

from .._version import KUBERNETES_RANGE, __version__
from .exit import OK


def print_versions() -> int:
    print(versions())
    return OK


def versions() -> str:
    import platform

    client = _dist_info_version("kubernetes")
    if client is None:
        try:
            from importlib.metadata import version

            client = version("kubernetes")
        except Exception:  # noqa: BLE001 - the frozen binary may lack metadata
            client = "unknown"
    servers = "-".join(KUBERNETES_RANGE)
    return (
        f"kubectl-unfinalize {__version__} (python {platform.python_version()}, kubernetes client {client},"
        f" API servers {servers})"
    )


def _dist_info_version(project: str) -> str | None:
    """The version in the name of `project`'s NAME-VERSION.dist-info directory on sys.path.
    importlib.metadata finds the same, but importing it (email, zipfile, csv) was most of
    the time --version took."""
    prefix = f"{project}-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(".dist-info"):
                return name[len(prefix) : -len(".dist-info")]
    return None
