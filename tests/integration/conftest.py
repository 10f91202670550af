"""Fixtures for the product's integration tests: run the tool as a user would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def unfinalize_cmd(bin_dir, tmp_path_factory) -> list[str]:
    """How to invoke the tool. UNFINALIZE_BINARY=path runs that built binary as
    `kubectl unfinalize` (kubectl finds it on PATH); otherwise the checkout's script."""
    binary = os.environ.get("UNFINALIZE_BINARY")
    if not binary:
        return [sys.executable, str(ROOT / "kubectl-unfinalize")]
    plugin_dir = tmp_path_factory.mktemp("plugin-path")
    shutil.copy2(binary, plugin_dir / "kubectl-unfinalize")
    return [os.path.join(bin_dir, "kubectl"), "unfinalize", f"--plugin-path={plugin_dir}"]


@pytest.fixture(scope="session")
def cli(unfinalize_cmd, kube_env):
    """cli(*args, env=None, input=None, timeout=180) -> CompletedProcess with text output."""

    def run(*args, env=None, input=None, timeout=180):
        cmd = list(unfinalize_cmd)
        full_env = dict(kube_env, **(env or {}))
        if "--plugin-path" in cmd[-1]:  # kubectl has no such flag: PATH is how it finds plugins
            full_env["PATH"] = cmd[-1].split("=", 1)[1] + os.pathsep + full_env["PATH"]
            cmd = cmd[:-1]
        return subprocess.run(
            [*cmd, *map(str, args)], env=full_env, input=input, text=True, capture_output=True, timeout=timeout
        )

    return run


sys.path.insert(0, str(ROOT / "src"))  # the Python API, importable from a checkout
