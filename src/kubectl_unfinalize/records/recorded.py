"""One recorded run, for every entry point that writes (api.run, scan --free, undo): the
record is started before the first write, told what the run counted, and finished however
the run ends, so what was written stays on disk and `history` reads it. A dry run, and
--record=none, get none."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..journal import NO_JOURNAL, Journal
from ..model import Action, Report
from ..options import DryRun, Options, Selection
from .place import new_id, path_for, prune, state_dir
from .run_journal import RecordJournal, open_journal


@dataclass(frozen=True)
class Header:
    """What a record's first line says of its run (docs/record.schema.json's header)."""

    command: str | None  # None: "python: " and the program's name
    context: str
    server: str
    selection: Selection | None = None  # None for scan --free's calls together, and undo
    options: Options | None = None
    undoes: str = ""  # an undo's record: the id it undoes


@dataclass
class Recording:
    """The run's side of its record: the journal its writes go to, what it counted and
    whether all went well (told before the block ends); `path` once it is finished ("" when
    none was written)."""

    journal: Journal
    counts: Counter[str] = field(default_factory=Counter)
    ok: bool = False
    path: str = ""
    id: str = ""  # the record's ID ("" when none is written: a dry run, record="none")

    def count(self, counts: Mapping[str, int]) -> None:
        self.counts.update(counts)


@contextmanager
def recorded(
    record: str | None,
    header: Header,
    warn: Callable[[str], None],
    dry_run: DryRun = DryRun.NONE,
    backups: bool = False,
) -> Iterator[Recording]:
    """`record` as unfinalize(record=...): None the default place, a folder or a file,
    "none" nowhere. An exception ends the record as not ok, and goes on."""
    journal, run_id = _start(record, header, warn, dry_run, backups)
    recording = Recording(journal, id=run_id)
    started = time.monotonic()
    try:
        yield recording
    except BaseException:
        recording.ok = False
        raise
    finally:
        recording.path = _finish(recording, time.monotonic() - started)


def _start(
    record: str | None, header: Header, warn: Callable[[str], None], dry_run: DryRun, backups: bool
) -> tuple[Journal, str]:
    """The journal, and the record's ID ("" when none is written)."""
    path = path_for(record, run_id := new_id())
    if path is None or dry_run is not DryRun.NONE:
        return NO_JOURNAL, ""
    fields: dict[str, Any] = {
        "version": __version__,
        "command": header.command if header.command is not None else "python: " + " ".join(sys.argv[:1]),
        "context": header.context,
        "server": header.server,
        "selection": _plain(header.selection),
        "options": _plain(header.options),
    }
    if header.undoes:
        fields["undoes"] = header.undoes
    journal = open_journal(path, run_id, fields, warn, backups)
    return journal, run_id if isinstance(journal, RecordJournal) else ""


def _finish(recording: Recording, seconds: float) -> str:
    """End the record; its path, or "" when there is none (nothing written, or lost)."""
    journal = recording.journal
    if not isinstance(journal, RecordJournal):
        return ""
    journal.finish({k: v for k, v in recording.counts.items() if v}, recording.ok, seconds)
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
