"""`kubectl unfinalize crd|ns|TYPE|-f ...`: run the RunCommand through the Python API,
print each outcome as it happens, ask first with -i, and say what was done on stderr."""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

from ..errors import UnfinalizeError
from ..options import context_flag
from .exit import of_report, stopped
from .flags import UsageError
from .process import Stopped, command_line, err, signals_stop, warn

if TYPE_CHECKING:
    from ..model import Outcome, Report, Targets
    from ..options import ConnectionOptions
    from .commands import RunCommand
    from .output import ProgressDisplay

FLUSH_EVERY = 0.2  # seconds between flushes of stdout when it is not a terminal


class _Printer:
    """Outcomes on stdout as they happen, from worker threads: a line each, or items of
    the -o json/yaml document. A closed stdout (`| head`) stops the printing, not the
    work: the run finishes freeing what it started, quietly."""

    def __init__(self, output: str, color: bool, progress: ProgressDisplay | None, prefix: str = "") -> None:
        from .output import DocumentStream, outcome_line

        self._line = outcome_line  # imported here once: an import in outcome() ran per object
        self.prefix = prefix  # several contexts: the context each line is of
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
            self.write(self.prefix + line + "\n")

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


def run(command: RunCommand) -> int:
    if command.contexts or command.all_contexts:
        return run_contexts(command)
    from ..api import run as run_api
    from .output import ProgressDisplay

    output = command.output
    color = sys.stdout.isatty() and not output.no_color and not os.environ.get("NO_COLOR")
    progress = None if output.quiet else ProgressDisplay()
    printer = _Printer(output.format, color, progress)
    delete = command.options.delete

    # Everything imported so far lives until exit: the collector need not scan it again,
    # and a list page of thousands of small dicts need not start a collection each time.
    gc.freeze()
    gc.set_threshold(20_000, 50, 50)
    gc.enable()  # the entry points disable it while importing
    interrupt = threading.Event()
    with signals_stop(interrupt) as stop:
        try:
            report = run_api(
                command.selection,
                command.options,
                command.connection,
                on_outcome=printer.outcome,
                on_progress=progress.update if progress else None,
                confirm=(lambda targets: confirm(targets, delete)) if command.interactive else None,
                retain=False,
                interrupt=interrupt,
                on_warning=warn,
                record=command.record,
                command=command_line(),
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
    _summarize(report, output.quiet)
    return of_report(report, stop.signum)


def run_contexts(command: RunCommand) -> int:
    """Several contexts (--context repeated, --all-contexts): the same run in each, on its
    own connection, with its own record; each line names its context; the exit status is
    the worst of theirs (a context that cannot be reached fails the run, by name)."""
    from ..api import run as run_api
    from ..each_context import chosen, run_each
    from ..errors import ExitStatus, worst_status

    names = chosen(command.connection, command.contexts, command.all_contexts)  # before anything is sent
    color = sys.stdout.isatty() and not command.output.no_color and not os.environ.get("NO_COLOR")
    interrupt = threading.Event()
    printers = {name: _Printer(command.output.format, color, None, f"{name}: ") for name in names}

    def one(connection: ConnectionOptions) -> Report:
        context = str(connection.context)
        return run_api(
            command.selection,
            command.options,
            connection,
            on_outcome=printers[context].outcome,
            retain=False,
            interrupt=interrupt,
            on_warning=lambda message: warn(f"context {context}: {message}"),
            record=command.record,
            command=command_line(),
        )

    with signals_stop(interrupt) as stop:
        outcomes = run_each(names, command.connection, one)
    statuses = []
    for outcome in outcomes:
        printers[outcome.context].flush()
        if outcome.result is None:
            err(f"context {outcome.context}: error: {outcome.error}")
            statuses.append(ExitStatus.FAILED)
        else:
            _summarize(outcome.result, command.output.quiet, outcome.context)
            statuses.append(of_report(outcome.result, stop.signum))
    if interrupt.is_set():
        return stopped(stop.signum)
    return worst_status(statuses)


def confirm(targets: Targets, delete: bool) -> bool:
    """-i: the plan on stderr, then y or N from the terminal."""
    from .output import plan_lines

    for line in plan_lines(targets, delete):
        err(line)
    if not sys.stdin.isatty():
        raise UsageError("-i needs a terminal to ask on")
    sys.stderr.write("Continue? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _summarize(report: Report, quiet: bool, context: str | None = None) -> None:
    """`context`: the one of several contexts the run was in, named on each line and in
    the commands that read its record."""
    from .output import deleting_line, summary_line

    prefix = "" if context is None else f"context {context}: "
    flag = context_flag(context)

    def say(line: str) -> None:
        err(prefix + line)

    if report.aborted:
        say("aborted: nothing was changed")
        return
    if not quiet:
        for skipped in report.skipped:  # a missing object's name, or why a type was not read
            say(f"skipped: {skipped}" if " " in skipped else f"{skipped} not found (skipped)")
        if not sum(report.counts.values()) and not report.scanned and not report.skipped:
            say("nothing to do: no matching custom resources, CRDs or namespaces")
    if report.error:
        say(f"error: {report.error}")
    if not quiet:
        if deleting := deleting_line(report):
            say(deleting)
        if report.record:
            say(f"record: {report.record} (history --last{flag} shows it; undo --last{flag} puts back what can be)")
        say(summary_line(report))  # the last line: what scripts and people read first
