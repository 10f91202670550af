"""Shell completion through the executables kubectl runs: the root script through a
symlink, and the built kubectl relaying kubectl_complete-unfinalize's answer."""

from __future__ import annotations

import os
import subprocess
import sys

from pkgtest import ROOT, clean_env


def test_completion_script_through_a_symlink(tmp_path):
    """The root script finds ./kubectl-unfinalize next to its real path and runs __complete."""
    link = tmp_path / "kubectl_complete-unfinalize"
    link.symlink_to(ROOT / "kubectl_complete-unfinalize")
    path = os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"])  # python3 = this venv
    result = subprocess.run(
        [str(link), "crd", "x", "--dry-run="], capture_output=True, text=True, env=clean_env(tmp_path, path)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "--dry-run=none\n--dry-run=client\n--dry-run=server\n:4\n"


def test_kubectl_runs_the_completion_executable(tools, tmp_path):
    """The built kubectl finds kubectl_complete-unfinalize on PATH and relays its answer."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for name in ("kubectl-unfinalize", "kubectl_complete-unfinalize"):
        (plugins / name).symlink_to(ROOT / name)
    path = os.pathsep.join([str(plugins), str(tools), os.path.dirname(sys.executable), "/usr/bin", "/bin"])
    result = subprocess.run(
        [str(tools / "kubectl"), "__complete", "unfinalize", "crd", "x", "--output="],
        capture_output=True,
        text=True,
        env=clean_env(tmp_path, path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "--output=text",
        "--output=name",
        "--output=wide",
        "--output=json",
        "--output=yaml",
        ":4",
    ]
