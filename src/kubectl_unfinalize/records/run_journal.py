"""The journal a writing run hands the engine: each write, and each body kept before a
delete, becomes a line of the record as it happens."""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from ..journal import Write
from ..model import ObjectRef
from .entries import FORMAT, kept_line, write_bytes
from .writer import RecordWriter, Warn


class RecordJournal:
    def __init__(self, writer: RecordWriter, backups: bool = False) -> None:
        self.writer = writer
        self._backups = backups
        self.may_leak = 0  # writes whose object said what may be left outside the cluster
        self._lock = threading.Lock()
        self._packing = threading.Lock()

    def wants(self, kind: str) -> bool:
        return kind == "crd" or (kind == "backup" and self._backups)

    @property
    def path(self) -> str:
        """The record, once something was written to it and nothing lost."""
        return str(self.writer.path) if self.writer.written else ""

    def wrote(self, write: Write) -> None:
        if write.leaks:
            with self._lock:
                self.may_leak += 1
        self.writer.write(partial(write_bytes, write))  # made a line where it is written

    def keep(self, kind: str, ref: ObjectRef, body: dict[str, Any]) -> None:
        """On the workers, which delete: one body compressed at a time, so that the deflate
        buffers (a few hundred KiB each) of many workers are never alive at once."""
        with self._packing:
            line = kept_line(kind, ref, body)
        self.writer.write(line)

    def finish(self, counts: dict[str, int], ok: bool, seconds: float) -> None:
        counts = {**counts, "mayLeak": self.may_leak} if self.may_leak else counts
        end = {"type": "end", "finished": _now(), "seconds": round(seconds, 3), "ok": ok, "counts": counts}
        self.writer.close(end)


def header(run_id: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The record's first line: what ran, where, when. `fields` are the caller's (command,
    context, server, user, selection, options, undoes)."""
    return {"type": "header", "format": FORMAT, "id": run_id, "started": _now(), **fields}


def open_journal(path: Path, run_id: str, fields: dict[str, Any], warn: Warn, backups: bool) -> RecordJournal:
    """The record is made at the run's first write: a run that changes nothing leaves none."""
    return RecordJournal(RecordWriter(path, warn, header(run_id, fields)), backups)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
