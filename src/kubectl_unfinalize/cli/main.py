"""Command line: main(argv) -> exit status. Parses the line once into a command and hands
it to the module that runs it (version, run_command, scan_command); exit.py decides the
status, for errors too. console() is the process around it, for every entry point.

Imports nothing heavy at load time, so --help and --version stay fast.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from typing import NoReturn

from .commands import Command, HistoryCommand, ScanCommand, UndoCommand, Version, parse
from .exit import of_error
from .flags import build_parser
from .process import exit_now

__all__ = ["build_parser", "console", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["__complete"]:  # hidden: shell completion (kubectl_complete-unfinalize)
        from .completion import main as complete

        return complete(args_list[1:])
    verbose = 0
    try:
        command = parse(args_list)
        verbose = command.output.verbose
        return _dispatch(command)
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - the one place errors become exit codes
        return of_error(exc, verbose)


def _dispatch(command: Command) -> int:
    if isinstance(command, Version):
        from .version import print_versions

        return print_versions()
    if isinstance(command, ScanCommand):
        from .scan_command import scan

        return scan(command)
    if isinstance(command, HistoryCommand):
        from .record_command import history

        return history(command)
    if isinstance(command, UndoCommand):
        from .record_command import undo

        return undo(command)
    from .run_command import run

    return run(command)


def console() -> NoReturn:
    """The process, whichever way it starts: the installed kubectl-unfinalize script,
    python -m kubectl_unfinalize, the checkout's kubectl-unfinalize. The collector is off
    while the command imports the API (thousands of objects, no garbage; the run turns it
    back on), and the process ends with exit_now."""
    gc.disable()
    exit_now(main())
