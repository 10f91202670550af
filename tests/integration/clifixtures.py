"""The tool as a user runs it: ``cli(*args)``, the checkout's script or the built binary
through kubectl (UNFINALIZE_BINARY), in the cluster's environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli_env(kube_env, tmp_path_factory) -> dict[str, str]:
    """kube_env, plus the built binary on PATH when UNFINALIZE_BINARY names one."""
    binary = os.environ.get("UNFINALIZE_BINARY")
    if not binary:
        return kube_env
    plugin_dir = tmp_path_factory.mktemp("plugin-path")
    shutil.copy2(binary, plugin_dir / "kubectl-unfinalize")
    return dict(kube_env, PATH=f"{plugin_dir}{os.pathsep}{kube_env['PATH']}")


@pytest.fixture(scope="session")
def unfinalize_cmd(bin_dir) -> list[str]:
    """UNFINALIZE_BINARY set: `kubectl unfinalize` (kubectl finds the binary on PATH).
    Otherwise the checkout's script, run by this Python."""
    if os.environ.get("UNFINALIZE_BINARY"):
        return [os.path.join(bin_dir, "kubectl"), "unfinalize"]
    return [sys.executable, str(ROOT / "kubectl-unfinalize")]


@pytest.fixture(scope="session")
def cli(unfinalize_cmd, cli_env):
    """cli(*args, env=None, input=None, timeout=180) -> CompletedProcess with text output."""

    def run(*args, env=None, input=None, timeout=180):
        return subprocess.run(
            [*unfinalize_cmd, *map(str, args)],
            env=dict(cli_env, **(env or {})),
            input=input,
            text=True,
            capture_output=True,
            timeout=timeout,
        )

    return run
