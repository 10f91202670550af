"""The flags of the record (every writing run), `history` and `undo`."""

from __future__ import annotations

import argparse

HISTORY_WORDS = ("history",)
UNDO_WORDS = ("undo",)


def _count(value: str) -> int:
    """A number; its bound is the options' (options.check_cap), as for the Python API."""
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {value!r}") from None


def add_record_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--record",
        metavar="PATH",
        help="where this run records what it writes: a folder (one file per run) or a file; 'none' records "
        "nothing (default: $XDG_STATE_HOME/kubectl-unfinalize/, else ~/.local/state/kubectl-unfinalize/; "
        "private to you, it names every object changed). A record that cannot be written is a warning",
    )
    group.add_argument(
        "--backup",
        action="store_true",
        help="with --delete, keep the body of every object deleted (compressed) in the record, so that "
        "undo can create it again; costs one read per object deleted (measured: 0.4-0.9 ms and 0.7 KiB of "
        'record per object: make bench BENCH_ARGS="--only records")',
    )
    group.add_argument(
        "--max-objects",
        type=_count,
        metavar="N",
        help="change at most N objects: refused before the first write (exit 2) when the selection holds "
        "more; objects found during the run past N are not written (exit 1)",
    )
    group.add_argument(
        "--last", action="store_true", help="history, undo: the newest record of this context (undo: not an undo)"
    )
