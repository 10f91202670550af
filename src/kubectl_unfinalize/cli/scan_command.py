"""`kubectl unfinalize scan`: run the read-only scan, print it; exit 1 while something is
stuck, 3 while something is pending (never 0 for what was deleted moments ago and is held)."""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import UnfinalizeError
from .exit import of_scan, stopped
from .process import Stopped, command_line, err, signals_stop, warn

if TYPE_CHECKING:
    from ..scanning.options import ScanOptions
    from .commands import ScanCommand


def scan(command: ScanCommand) -> int:
    if command.contexts or command.all_contexts:
        return scan_contexts(command)
    from ..scan_api import run_scan
    from .scan_output import render, stderr_lines

    interrupt = threading.Event()
    options = _recorded(command.options)
    with signals_stop(interrupt) as stop:
        try:
            warned = {"on_warning": warn} if options.free is not None else {}
            report = run_scan(options, command.connection, interrupt=interrupt, **warned)
        except UnfinalizeError:
            if interrupt.is_set():
                raise Stopped(stop.signum) from None
            raise
    if interrupt.is_set():
        return stopped(stop.signum)
    _show(command, render(report, command.output.format), stderr_lines(report, waited=command.options.wait))
    return of_scan(report)


def scan_contexts(command: ScanCommand) -> int:
    """Several contexts (--context repeated, --all-contexts): each scanned on its own
    connection, the output grouped by context, the exit status the worst of theirs."""
    from ..each_context import chosen
    from ..scan_api import run_scans
    from .scan_output import contexts_stderr_lines, render_contexts

    names = chosen(command.connection, command.contexts, command.all_contexts)  # before anything is sent
    interrupt = threading.Event()
    options = _recorded(command.options)
    with signals_stop(interrupt) as stop:
        scans = run_scans(options, command.connection, names, interrupt=interrupt, on_warning=warn)
    if interrupt.is_set():
        return stopped(stop.signum)
    _show(command, render_contexts(scans, command.output.format), contexts_stderr_lines(scans, command.options.wait))
    return scans.exit_status


def _show(command: ScanCommand, text: str, summary: Iterable[str]) -> None:
    """The report on stdout (a closed pipe is not an error), its summary on stderr unless -q."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    if not command.output.quiet:
        for line in summary:
            err(line)


def _recorded(options: ScanOptions) -> ScanOptions:
    """With --free: the command line, for the record's header to say what was run."""
    if options.free is None:
        return options
    return dataclasses.replace(options, free=dataclasses.replace(options.free, command=command_line()))
