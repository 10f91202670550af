"""The pytest plugin's hooks (entry point `unfinalize` in the group pytest11). Inert unless
--unfinalize=MODE (or the ini file's `unfinalize = MODE`) asks for it: no section, no
request, no environment read.

When it acts (settings.py has the modes):
- session start (free, strict): frees what a kept cluster still holds from an earlier run;
- from the last test's teardown to the end of the session (free, strict): teardown.Teardown
  looks and frees on a thread of its own, so a session fixture blocked in
  `kubectl delete -f crds/` finishes. The last test's teardown is where pytest tears the
  session's fixtures down (nextitem None); a session stopped early (-x, Ctrl-C) tears them
  down in pytest_sessionfinish, so the thread also starts when the test loop ends;
- after every fixture's teardown (all modes): one scan that waits out what is pending, a
  last free (free, strict), and the section in the terminal summary. strict then fails the
  session (exit 1) when anything had to be freed or is still held.

pytest-xdist: workers do nothing; the controller acts, its teardown thread starting once
every test has run (the workers are then in their last teardowns) and its last look after
every worker is done. No reachable cluster is one warning line, and changes the exit
status only in strict.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from .. import ScanReport
from .settings import Settings, add_options, read
from .summary import Verdict, judge, lines
from .teardown import Ledger, Teardown, look

__all__ = ["pytest_addoption", "pytest_configure"]
NAME = "unfinalize-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    settings = read(config)
    if settings.mode is None or hasattr(config, "workerinput") or config.option.collectonly:
        return
    config.pluginmanager.register(PluginSession(config, settings), NAME)


class PluginSession:
    """The plugin's state for one session, registered only when it has a mode."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.ledger = Ledger()
        self.teardown = Teardown(settings, self.ledger)
        self.distributed = False  # the xdist controller (its plugin registers after this one's configure)
        self.nodes = 0  # xdist workers that collected
        self.ended: set[tuple[str, str]] = set()  # (worker, test) whose call (or failed setup) was reported
        self.failures = 0
        self.verdict: Verdict | None = None
        self.final: ScanReport | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        self.distributed = self.config.pluginmanager.has_plugin("dsession")
        if self.settings.frees:
            look(self.settings, self.ledger, "start", free=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        if nextitem is None and self.settings.frees:
            self.teardown.start()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        self.nodes += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Under xdist: every test ended (on every worker with --dist each), or --maxfail
        reached: the workers tear their sessions down now."""
        if not (self.distributed and self.settings.frees):
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.ended.add((str(getattr(report, "node", "")), report.nodeid))
        self.failures += report.failed
        runs = self.session.testscollected * (self.nodes if self.config.getoption("dist", None) == "each" else 1)
        maxfail = self.config.option.maxfail
        if len(self.ended) >= runs or (maxfail and self.failures >= maxfail):
            self.teardown.start()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, None, None]:
        """However the loop ends (the last test, -x, Ctrl-C), what comes next is the
        session's teardown of what is still set up."""
        yield
        if self.settings.frees:
            self.teardown.start()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """After pytest's own session finish, which tore down what the last test had not."""
        self.teardown.stop()
        self.final = final = look(self.settings, self.ledger, "end", wait=True, free=self.settings.frees)
        self.verdict = judge(self.settings, self.ledger, final)
        if self.verdict.failed and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.verdict is None:
            return
        strict = " (--unfinalize=strict: the session fails)" if self.verdict.failed else ""
        if not self.ledger.reached:
            why = next(iter(self.ledger.unreachable.values()), None) or "; ".join(self.ledger.failures)
            terminalreporter.write_line(f"unfinalize: WARNING no reachable cluster: {why}{strict}", yellow=True)
            return
        failed = self.verdict.failed
        terminalreporter.write_sep("=", f"unfinalize: {self.settings.mode}", red=failed, green=not failed)
        for line in lines(self.settings, self.ledger, self.final, self.verdict):
            terminalreporter.write_line(line, red=line.startswith("FAILED"))
