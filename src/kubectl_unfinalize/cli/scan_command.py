"""`kubectl unfinalize scan`: run the read-only scan, print it; exit 1 while something is
stuck, 3 while something is pending (never 0 for what was deleted moments ago and is held)."""

from __future__ import annotations

import dataclasses
import sys
import threading
from typing import TYPE_CHECKING

from ..errors import UnfinalizeError
from .exit import of_scan, stopped
from .process import Stopped, command_line, err, signals_stop, warn

if TYPE_CHECKING:
    from .commands import ScanCommand


def scan(command: ScanCommand) -> int:
    from ..scan_api import run_scan
    from .scan_output import render, stderr_lines

    interrupt = threading.Event()
    options = command.options
    if options.free is not None:  # what the record's header says was run
        free = dataclasses.replace(options.free, command=command_line())
        options = dataclasses.replace(options, free=free)
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
    try:
        sys.stdout.write(render(report, command.output.format))
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    if not command.output.quiet:
        for line in stderr_lines(report, waited=command.options.wait):
            err(line)
    return of_scan(report)
