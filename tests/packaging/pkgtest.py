"""Helpers shared by the packaging tests (a uniquely named module: tests/ has several conftest.py)."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def platform_name() -> str:
    """<os>_<arch> as build-binary.sh names the archive."""
    system = {"win32": "windows"}.get(sys.platform, sys.platform)
    machine = platform.machine().lower()
    return f"{system}_{ {'x86_64': 'amd64', 'aarch64': 'arm64'}.get(machine, machine) }"


def clean_env(home: Path, path: str = "/usr/bin:/bin", **extra: str) -> dict[str, str]:
    """An environment without the developer's Python, kubeconfig or plugins."""
    return {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", **extra}
