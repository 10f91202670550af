"""What every test session shares, whichever folder it runs: nothing a test starts outlives
it, SIGTERM ends a session as Ctrl-C does, records go to a folder of the session's own.

The cluster fixtures are not here: they are ``clusterfixtures.py`` and ``crdfixtures.py``,
which tests/integration/conftest.py names, so a unit test cannot start a control plane by
asking for one by mistake.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import reaping

INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"
_ENDED_KEY = pytest.StashKey[list]()


def pytest_configure(config):
    # Whatever a test starts ends with this process (tests/reaping.py), and SIGTERM (CI
    # cancelling a job, `timeout` ending a phase) tears the session down as Ctrl-C does.
    reaping.become_subreaper()
    _sigterm_as_interrupt()
    # Every run the tests start writes a record: into a folder of this session's, never the
    # user's own state (each fixture's environment, and tests that build one from os.environ).
    state = tempfile.mkdtemp(prefix="unfinalize-test-state-")
    os.environ["XDG_STATE_HOME"] = state
    config.add_cleanup(lambda: shutil.rmtree(state, ignore_errors=True))
    config.addinivalue_line("markers", "integration: needs a Kubernetes API server (started automatically)")
    config.addinivalue_line(
        "markers",
        "core: the integration tests run against every supported release too (make test-version), not only the"
        " pinned one: crd/ns/-f --delete, TYPE NAME, scan, completion",
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if INTEGRATION_DIR in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """After every fixture is torn down: end what is still running, to name it in the summary."""
    session.config.stash[_ENDED_KEY] = reaping.end_descendants()


def pytest_unconfigure(config):
    """The last word, also when the session was interrupted before it could finish."""
    for line in reaping.end_descendants():
        sys.stderr.write(f"ended a process the tests left running: {line}\n")


def pytest_terminal_summary(terminalreporter, config):
    for line in config.stash.get(_ENDED_KEY, ()):
        terminalreporter.write_line(f"ended a process the tests left running: {line}")


def _sigterm_as_interrupt() -> None:
    """Let SIGTERM interrupt pytest like Ctrl-C, so session teardown stops what the tests started."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
