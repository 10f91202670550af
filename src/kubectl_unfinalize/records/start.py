"""The record of a run that is about to write: where it goes, what its header says. A dry
run, and --record=none, get none."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._version import __version__
from ..journal import NO_JOURNAL, Journal
from ..model import Action, Report
from ..options import DryRun, Options, Selection
from .place import new_id, path_for, prune, state_dir
from .run_journal import RecordJournal, open_journal


def start(
    record: str | None,
    *,
    command: str | None,
    context: str,
    server: str,
    selection: Selection | None,
    options: Options | None,
    warn: Callable[[str], None],
    dry_run: DryRun = DryRun.NONE,
    backups: bool = False,
    undoes: str = "",
) -> Journal:
    path = path_for(record, run_id := new_id())
    if path is None or dry_run is not DryRun.NONE:
        return NO_JOURNAL
    fields: dict[str, Any] = {
        "version": __version__,
        "command": command if command is not None else "python: " + " ".join(sys.argv[:1]),
        "context": context,
        "server": server,
        "selection": _plain(selection),
        "options": _plain(options),
    }
    if undoes:
        fields["undoes"] = undoes
    return open_journal(path, run_id, fields, warn, backups)


def finish(journal: Journal, counts: dict[str, int], ok: bool, seconds: float) -> str:
    """End the record; its path, or "" when there is none (nothing written, or lost)."""
    if not isinstance(journal, RecordJournal):
        return ""
    journal.finish(counts, ok, seconds)
    if journal.path and Path(journal.path).parent == state_dir():
        prune(state_dir())
    return journal.path


def report_counts(report: Report) -> dict[str, int]:
    """The run's summary as history shows it."""
    counts = {
        "unfinalized": report.count(Action.UNFINALIZED),
        "deleted": report.count(Action.DELETED),
        "failed": report.failures,
        "deleting": report.count(Action.DELETING),
    }
    return {k: v for k, v in counts.items() if v}


INTERNAL = ("settle", "poll")  # Options no flag sets: not what the user asked for


def _plain(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    fields = dataclasses.asdict(value).items()
    return {k: v for k, v in fields if v not in (None, (), False, "") and k not in INTERNAL}
