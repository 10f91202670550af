"""The suite cannot hang: a test past its budget fails naming itself with every thread's
stack, and nothing a session started outlives it, whether a test timed out or the session
was sent SIGINT or SIGTERM (also under pytest-xdist).

Each case runs a scratch suite in a pytest process of its own, with this suite's conftest
and cluster fixtures as plugins and this project's ini file, so it meets the same budget and the same reaping.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from controlplane.process import pid_alive

ROOT = Path(__file__).resolve().parents[2]
GRACE = 30.0  # the acceptance: a hung test fails within its budget plus this

# Starts what a test may leave behind: a child, an orphaned grandchild (its parent shell
# exits at once), and a helper thread, then sleeps forever.
LEAVES_BEHIND = """
import os, pathlib, subprocess, sys, threading, time

OUT = pathlib.Path(os.environ["SCRATCH_OUT"])


def leave_processes_behind(name):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
    orphan = OUT / f"{name}.orphan"
    subprocess.run(["sh", "-c", f"sleep 1000 >/dev/null 2>&1 & echo $! > {orphan}"], check=True)
    with open(OUT / "pids", "a") as f:
        f.write(f"{child.pid}\\n{orphan.read_text().strip()}\\n")
    threading.Thread(target=time.sleep, args=(1000,), name="scratch-helper", daemon=True).start()
    (OUT / f"{name}.sleeping").touch()
    time.sleep(100000)
"""

UNIT_SUITE = (
    LEAVES_BEHIND
    + """

def test_sleeps_forever():
    leave_processes_behind("unit")
"""
)

CLUSTER_SUITE = (
    LEAVES_BEHIND
    + """
import pytest


@pytest.mark.timeout(240)  # starts the control plane: longer than the scratch run's budget
def test_starts_the_control_plane(control_plane):
    with open(OUT / "pids", "a") as f:
        f.write("".join(f"{pid}\\n" for pid in control_plane.processes.values()))


def test_sleeps_forever_on_the_cluster(kubeconfig):
    leave_processes_behind("cluster")
"""
)


def _sigint_as_from_a_terminal() -> None:  # in the child, before exec
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Scratch:
    """A scratch suite and the pytest process that runs it."""

    def __init__(self, tmp_path: Path, source: str, *args: str):
        self.out = tmp_path / "out"
        self.out.mkdir(parents=True)
        suite = tmp_path / "test_scratch.py"
        suite.write_text(textwrap.dedent(source))
        env = dict(os.environ, SCRATCH_OUT=str(self.out), PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT / 'src'}")
        env.pop("PYTEST_XDIST_WORKER", None)
        env.pop("PYTEST_ADDOPTS", None)
        command = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "clusterfixtures", "-p", "no:cacheprovider"]
        command += ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), "-q", *args, str(suite)]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # A suite run in the background of a non-interactive shell (`make test &`, some CI
            # runners) inherits SIGINT ignored, and Python then keeps it ignored: as from a terminal.
            preexec_fn=_sigint_as_from_a_terminal,
        )

    def wait_sleeping(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not (self.out / f"{name}.sleeping").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"the scratch test never got to sleep:\n{self.proc.communicate()[0]}")
            time.sleep(0.1)

    def finish(self, timeout: float) -> tuple[int, str, float]:
        try:
            output = self.proc.communicate(timeout=timeout)[0]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"the scratch session did not end within {timeout:.0f}s:\n{self.proc.communicate()[0]}")
        return self.proc.returncode, output, time.monotonic() - self.started

    def still_running(self) -> list[int]:
        pids = [int(line) for line in (self.out / "pids").read_text().split()]
        assert pids, "the scratch test recorded no process"
        return [pid for pid in pids if pid_alive(pid)]


def test_a_test_past_its_budget_fails_naming_itself_and_leaves_nothing_running(tmp_path):
    scratch = Scratch(tmp_path, UNIT_SUITE, "--timeout", "3")
    code, output, seconds = scratch.finish(timeout=3 + GRACE + 30)
    assert code == 1, output
    assert seconds < 3 + GRACE, output
    assert "test_scratch.py::test_sleeps_forever" in output and "Timeout" in output, output
    assert "Stack of scratch-helper" in output, output  # every thread's stack, not the main one's alone
    assert scratch.still_running() == [], output
    assert "ended a process the tests left running" in output, output  # and the leak is named


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("workers", [None, "2"], ids=["one-process", "xdist"])
def test_a_session_sent_a_signal_mid_run_leaves_nothing_running(tmp_path, sig, workers):
    scratch = Scratch(tmp_path, UNIT_SUITE, *(("-n", workers) if workers else ()))
    scratch.wait_sleeping("unit", timeout=60)
    scratch.proc.send_signal(sig)
    code, output, _ = scratch.finish(timeout=GRACE + 30)
    assert code != 0, output
    assert scratch.still_running() == [], output


@pytest.mark.timeout(420)  # two control planes started by scratch sessions, one after the other
def test_the_control_plane_and_what_a_cluster_test_started_end_with_the_session(tmp_path):
    budget = 5
    scratch = Scratch(tmp_path / "timeout", CLUSTER_SUITE, "--timeout", str(budget))
    code, output, _ = scratch.finish(timeout=240 + budget + GRACE)
    assert code == 1, output
    assert "1 failed, 1 passed" in output and "test_sleeps_forever_on_the_cluster" in output, output
    assert scratch.still_running() == [], output

    scratch = Scratch(tmp_path / "sigterm", CLUSTER_SUITE)
    scratch.wait_sleeping("cluster", timeout=240)
    scratch.proc.send_signal(signal.SIGTERM)
    code, output, _ = scratch.finish(timeout=GRACE + 30)
    assert code != 0, output
    assert scratch.still_running() == [], output
