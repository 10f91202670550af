"""Command line: main(argv) -> exit status, the one place errors become exit codes.

Imports nothing heavy at load time, so --help and --version stay fast.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._version import KUBERNETES_RANGE, __version__
from ..errors import ExitStatus, InputError, UnfinalizeError
from .flags import UsageError, build_parser, is_scan, parse
from .process import Stopped, err, print_traceback, signals_stop

FLUSH_EVERY = 0.2  # seconds between flushes of stdout when it is not a terminal

if TYPE_CHECKING:
    from ..model import Outcome, Report, Targets
    from .output import ProgressDisplay

__all__ = ["build_parser", "main"]


def _versions() -> str:
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


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["__complete"]:  # hidden: shell completion (kubectl_complete-unfinalize)
        from .completion import main as complete

        return complete(args_list[1:])
    verbose = 0
    try:
        args = parse(args_list)
        verbose = args.verbose
        if args.version:
            print(_versions())
            return ExitStatus.OK
        if is_scan(args):
            from .scan_command import run as scan

            return scan(args)
        return _run(args)
    except KeyboardInterrupt as exc:
        terminated = getattr(exc, "signum", None) == signal.SIGTERM
        err("terminated" if terminated else "interrupted")
        return ExitStatus.TERMINATED if terminated else ExitStatus.INTERRUPTED
    except UsageError as exc:
        err(f"error: {exc} (see --help)")
        return ExitStatus.USAGE
    except UnfinalizeError as exc:
        print_traceback(verbose)
        err(f"error: {exc}")
        return exc.exit_status
    except Exception as exc:  # noqa: BLE001 - the one place errors become exit codes
        print_traceback(verbose)
        hint = "" if verbose else " (run with -v for details)"
        err(f"error: unexpected {type(exc).__name__}: {exc}{hint}")
        return ExitStatus.FAILED


class _Printer:
    """Outcomes on stdout as they happen, from worker threads: a line each, or items of
    the -o json/yaml document. A closed stdout (`| head`) stops the printing, not the
    work: the run finishes freeing what it started, quietly."""

    def __init__(self, output: str, color: bool, progress: ProgressDisplay | None) -> None:
        from .output import DocumentStream, outcome_line

        self._line = outcome_line  # imported here once: an import in outcome() ran per object
        self.output = output
        self.color = color
        self.progress = progress
        self.closed = False
        self._tty = sys.stdout.isatty()
        self._flushed = 0.0
        self._lock = threading.RLock()  # an item is written while the document's turn is held
        self.document = DocumentStream(output, self.write) if output in ("json", "yaml") else None

    def outcome(self, outcome: Outcome) -> None:
        if self.closed:
            return
        if self.document is not None:
            with self._lock:  # one item at a time, in the order they are written
                self.document.item(outcome)
            return
        line = self._line(outcome, self.output, self.color)
        if line is not None:
            self.write(line + "\n")

    def flush(self) -> None:
        self.write("", flush=True)

    def write(self, text: str, flush: bool = False) -> None:
        if self.closed:
            return
        with self._lock:
            if self.progress:
                self.progress.clear()
            try:
                sys.stdout.write(text)
                now = time.monotonic()
                if flush or self._tty or now - self._flushed > FLUSH_EVERY:  # a pipe or file gets whole buffers
                    sys.stdout.flush()
                    self._flushed = now
            except BrokenPipeError:
                self.closed = True
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
                os.close(devnull)


def _run(args: argparse.Namespace) -> int:
    from ..api import run
    from .connection_flags import to_connection_options
    from .flags import to_options, to_selection
    from .output import ProgressDisplay

    try:  # the rules the Python API shares live in the option classes: a usage error here
        selection, options = to_selection(args), to_options(args)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    connection = to_connection_options(args, log=err)
    color = sys.stdout.isatty() and not args.no_color and not os.environ.get("NO_COLOR")
    progress = None if args.quiet else ProgressDisplay()
    printer = _Printer(args.output, color, progress)

    def confirm(targets: Targets) -> bool:
        from .output import plan_lines

        for line in plan_lines(targets, args.delete):
            err(line)
        if not sys.stdin.isatty():
            raise UsageError("-i needs a terminal to ask on")
        sys.stderr.write("Continue? [y/N] ")
        sys.stderr.flush()
        return sys.stdin.readline().strip().lower() in ("y", "yes")

    # Everything imported so far lives until exit: the collector need not scan it again,
    # and a list page of thousands of small dicts need not start a collection each time.
    gc.freeze()
    gc.set_threshold(20_000, 50, 50)
    gc.enable()  # the entry scripts disable it while importing
    interrupt = threading.Event()
    with signals_stop(interrupt) as stop:
        try:
            report = run(
                selection,
                options,
                connection,
                on_outcome=printer.outcome,
                on_progress=progress.update if progress else None,
                confirm=confirm if args.interactive else None,
                retain=False,
                interrupt=interrupt,
                on_warning=lambda text: err(f"warning: {text}"),
            )
        except UnfinalizeError:
            if interrupt.is_set():  # what failed was cut short by Ctrl-C or SIGTERM
                raise Stopped(stop.signum) from None
            raise
    if progress:
        progress.clear()
    if printer.document is not None and not report.aborted:
        printer.document.finish(report)
    printer.flush()  # every line before the summary on stderr
    status = _summarize(report, args.quiet)
    return ExitStatus.TERMINATED if status is ExitStatus.INTERRUPTED and stop.signum == signal.SIGTERM else status


def _summarize(report: Report, quiet: bool) -> int:
    from .output import summary_line

    if report.aborted:
        err("aborted: nothing was changed")
        return ExitStatus.OK
    if not quiet:
        for skipped in report.skipped:  # a missing object's name, or why a type was not read
            err(f"skipped: {skipped}" if " " in skipped else f"{skipped} not found (skipped)")
        if not sum(report.counts.values()) and not report.scanned and not report.skipped:
            err("nothing to do: no matching custom resources, CRDs or namespaces")
    if report.error:
        err(f"error: {report.error}")
    if not quiet:
        err(summary_line(report))
    if report.interrupted:
        return ExitStatus.INTERRUPTED
    if report.stopped_by is not None:
        return report.stopped_by.exit_status
    return ExitStatus.OK if report.ok else ExitStatus.FAILED
