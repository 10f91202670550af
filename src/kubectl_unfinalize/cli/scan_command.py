"""`kubectl unfinalize scan`: run the read-only scan, print it; exit 1 while something is
stuck, 3 while something is pending (never 0 for what was deleted moments ago and is held)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from ..errors import ExitStatus, InputError, UnfinalizeError
from .flags import UsageError
from .process import Stopped, err, signals_stop
from .scan_flags import SCAN_LISTS


def run(args: argparse.Namespace) -> int:
    from ..api import run_scan
    from ..scanning.options import ScanOptions
    from .connection_flags import to_connection_options
    from .scan_output import render, stderr_lines

    try:
        options = ScanOptions(
            namespace=args.namespace,
            include_live=args.include_live,
            older_than=args.older_than,
            concurrency=min(args.concurrency, SCAN_LISTS),
            chunk_size=args.chunk_size,
            timeout=args.timeout,
            wait=bool(args.wait),
        )
    except InputError as exc:
        raise UsageError(str(exc)) from None
    connection = to_connection_options(args, log=err)
    interrupt = threading.Event()
    with signals_stop(interrupt) as stop:
        try:
            report = run_scan(options, connection, interrupt=interrupt)
        except UnfinalizeError:
            if interrupt.is_set():
                raise Stopped(stop.signum) from None
            raise
    if interrupt.is_set():
        err("terminated" if stop.signum == signal.SIGTERM else "interrupted")
        return ExitStatus.TERMINATED if stop.signum == signal.SIGTERM else ExitStatus.INTERRUPTED
    try:
        sys.stdout.write(render(report, args.output))
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    if not args.quiet:
        for line in stderr_lines(report, waited=options.wait):
            err(line)
    if report.stuck:
        return ExitStatus.FAILED
    return ExitStatus.PENDING if report.pending else ExitStatus.OK
