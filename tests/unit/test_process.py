"""The entry scripts end the process without tearing the interpreter down (cli.process.exit_now):
what was written is still delivered whole, and the exit status is main()'s."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubectl_unfinalize.cli.flags import build_parser

ROOT = Path(__file__).resolve().parents[2]


def test_a_piped_help_arrives_whole_and_a_usage_error_keeps_its_status():
    entry = [sys.executable, str(ROOT / "kubectl-unfinalize")]
    shown = subprocess.run([*entry, "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    expected = build_parser().format_help()
    assert len(expected) > 1000 and shown.stdout.strip().endswith(expected.strip()[-200:])
    wrong = subprocess.run([*entry, "crd"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: "), wrong.stderr


def test_the_package_entry_point_exits_through_exit_now():
    env = {"PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "kubectl_unfinalize", "--version"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("kubectl-unfinalize "), done.stderr


def test_the_installed_script_exits_through_exit_now_as_the_others_do():
    """pip's console script imports the function pyproject names and calls it: console(),
    which ends with exit_now (no interpreter teardown: an atexit hook never runs)."""
    scripts = (ROOT / "pyproject.toml").read_text().split("[project.scripts]", 1)[1]
    assert 'kubectl-unfinalize = "kubectl_unfinalize.cli.main:console"' in scripts
    env = {"PYTHONPATH": str(ROOT / "src")}
    for word, status in (("--version", 0), ("crd", 2)):
        code = (
            f"import atexit, sys; atexit.register(print, 'torn down'); sys.argv = ['kubectl-unfinalize', {word!r}]; "
            "from kubectl_unfinalize.cli.main import console; sys.exit(console())"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == status, done.stderr
        assert "torn down" not in done.stdout and done.stdout.startswith("kubectl-unfinalize " if status == 0 else "")
