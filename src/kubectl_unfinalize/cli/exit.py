"""Which exit status the process ends with, decided here alone (as httpie's status.py):
for an error, a run's Report, a ScanReport and the signal that stopped a command. The
codes themselves are errors.ExitStatus; a script or CI gate reads them, so they change
only here and on purpose."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from ..errors import ExitStatus, UnfinalizeError
from .flags import UsageError
from .process import err, print_traceback

if TYPE_CHECKING:
    from .. import ScanReport, UndoReport
    from ..model import Report

OK = ExitStatus.OK  # a command that did what it was asked


def of_signal(signum: int | None) -> ExitStatus:
    """128 + the signal, as a shell reports a process the signal killed: SIGTERM (what CI
    sends when it cancels a job) 143; Ctrl-C, or no signal recorded, 130."""
    return ExitStatus.TERMINATED if signum == signal.SIGTERM else ExitStatus.INTERRUPTED


def stopped(signum: int | None) -> ExitStatus:
    """Say which signal stopped the command, on stderr, and end with its status."""
    err("terminated" if signum == signal.SIGTERM else "interrupted")
    return of_signal(signum)


def of_report(report: Report, signum: int | None) -> ExitStatus:
    """A run: 0 when everything selected was freed (or the user said no at the prompt), the
    signal's status when one cut it short, the status of what ended it (bad credentials:
    2), else 1."""
    if report.aborted:
        return ExitStatus.OK
    if report.interrupted:
        return of_signal(signum)
    if report.stopped_by is not None:
        return report.stopped_by.exit_status
    return ExitStatus.OK if report.ok else ExitStatus.FAILED


def of_scan(report: ScanReport) -> ExitStatus:
    """scan as a CI gate: the report's own rule (ScanReport.exit_status)."""
    return report.exit_status


def of_undo(report: UndoReport) -> ExitStatus:
    """undo: 0 when everything was put back (or was there already), 1 when something could not be."""
    return ExitStatus.OK if report.ok else ExitStatus.FAILED


def of_error(exc: BaseException, verbose: int) -> ExitStatus:
    """An error that reached main(): one line on stderr (a traceback too with -v), and its
    status: a usage error 2, the project's errors their own, anything else 1."""
    if isinstance(exc, KeyboardInterrupt):  # a second signal (process.Stopped), or Ctrl-C outside a run
        return stopped(getattr(exc, "signum", None))
    if isinstance(exc, UsageError):
        err(f"error: {exc} (see --help)")
        return ExitStatus.USAGE
    print_traceback(verbose)
    if isinstance(exc, UnfinalizeError):
        err(f"error: {exc}")
        return exc.exit_status
    hint = "" if verbose else " (run with -v for details)"
    err(f"error: unexpected {type(exc).__name__}: {exc}{hint}")
    return ExitStatus.FAILED
