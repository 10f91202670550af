"""`history`: the records of one cluster context, newest first, read as far as a summary
needs (header and end line; the writes only of a run that was killed before its end)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .model import RecordSummary
from .place import record_files
from .reading import Record, counts, load


def summary(record: Record) -> RecordSummary:
    header = record.header
    return RecordSummary(
        id=record.id,
        path=str(record.path),
        started=str(header.get("started") or ""),
        command=str(header.get("command") or ""),
        context=str(header.get("context") or ""),
        server=str(header.get("server") or ""),
        counts=dict(counts(record)),
        undoes=record.undoes,
        finished=record.end is not None,
    )


def of_context(context: str, server: str, folder: Path | None = None) -> list[RecordSummary]:
    """Records are kept per user, not per cluster: those of another context are left out
    (their header says which), and files that are not records are passed over."""
    found = []
    for path in record_files(folder):
        try:
            record = load(path, writes=False)
        except InputError:
            continue
        if record.header.get("context") == context and record.header.get("server") == server:
            if record.end is None:
                record = load(path)  # killed part way: count what it wrote
            found.append(summary(record))
    return found


def newest_to_undo(summaries: list[RecordSummary]) -> tuple[RecordSummary, list[str]]:
    """`undo --last`: the newest run that is not itself an undo and was not undone already.
    Returns it and what was passed over, so the command can say so."""
    undone = {s.undoes for s in summaries if s.undoes}
    passed: list[str] = []
    for item in summaries:
        if item.undoes:
            passed.append(f"{item.id} (an undo of {item.undoes})")
        elif item.id in undone:
            passed.append(f"{item.id} (undone already)")
        else:
            return item, passed
    raise InputError("no record of this context to undo" + (f" (passed over: {', '.join(passed)})" if passed else ""))
