"""The process around a command: stderr lines, what Ctrl-C and SIGTERM do to a run, and
how the process ends. Both commands (the run and scan) use it; neither imports the other."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import NoReturn


def err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def warn(text: str) -> None:
    """A warning as kubectl prints one: what the run goes on despite."""
    err(f"warning: {text}")


def command_line() -> str:
    """What a record's header says was run."""
    return " ".join(["kubectl unfinalize", *sys.argv[1:]])


def print_traceback(verbose: int) -> None:
    if verbose:
        import traceback

        traceback.print_exc()


def exit_now(code: int) -> NoReturn:
    """Exit the process with `code` once stdout and stderr are flushed, without tearing
    the interpreter down: every module's objects, the threads' states and the collector's
    last pass are a few ms of a small teardown, and nothing is left to do (the engine has
    joined what it started, files are closed). A flush that fails is left to the normal
    exit, which reports it as it always did."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


class Stopped(KeyboardInterrupt):
    """A second signal: stop at once (main() says which signal and exits 128 + it)."""

    def __init__(self, signum: int | None) -> None:
        super().__init__()
        self.signum = signum


class Stop:
    signum: int | None = None  # the first signal that stopped the run


@contextlib.contextmanager
def signals_stop(interrupt: threading.Event) -> Iterator[Stop]:
    """The first Ctrl-C or SIGTERM (CI cancelling a job) ends the run like its deadline:
    requests in flight finish, the summary says what was done, and the exit code says
    which signal it was; a second one stops at once."""
    stop = Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: object) -> None:
        if interrupt.is_set():
            raise Stopped(signum)
        stop.signum = signum
        interrupt.set()

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
