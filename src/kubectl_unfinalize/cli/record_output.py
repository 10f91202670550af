"""How history and undo read on a terminal and in a document: plain text, JSON or YAML
(docs/history.schema.json). Pure: strings from the API's data."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .. import Record, RecordSummary, UndoReport
    from ..journal import Write

_COUNTS = (("unfinalized", "freed"), ("deleted", "deleted"), ("failed", "failed"), ("mayLeak", "may leak"))


def document(data: dict[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(data, indent=2) + "\n"
    import yaml

    return str(yaml.safe_dump(data, sort_keys=False))


def history_table(summaries: list[RecordSummary]) -> Iterator[str]:
    rows: list[tuple[str, ...]] = [("ID", "STARTED", "FREED", "DELETED", "FAILED", "MAY LEAK", "COMMAND")]
    for item in summaries:
        counts = [str(item.counts.get(key, 0)) for key, _ in _COUNTS]
        command = item.command
        if item.undoes:
            back, left = item.counts.get("putBack", 0), item.counts.get("notPutBack", 0)
            command = f"undo of {item.undoes}: {back} put back, {left} not"
        rows.append((item.id, item.started, *counts, command + ("" if item.finished else " (did not finish)")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1]


def record_lines(record: Record, summary: RecordSummary) -> Iterator[str]:
    """What the run changed, grouped as its summary is; then every may-leak line, since
    what a removed finalizer guarded outside the cluster is what a person must go and check."""
    counts = ", ".join(f"{summary.counts.get(key, 0)} {word}" for key, word in _COUNTS)
    yield f"record {record.id}: {summary.command}"
    yield f"  started {summary.started} on context {summary.context} ({summary.server}); {counts}"
    if record.cut_short or record.end is None:
        yield "  the run did not finish (killed?): the writes below are those answered before it stopped"
    for write in record.writes:
        yield _write_line(write)
    leaks = [w for w in record.writes if w.leaks]
    if leaks:
        yield "may have been left behind outside the cluster:"
        for write in leaks:
            where = f" (namespace {write.ref.namespace})" if write.ref.namespace else ""
            yield f"  {write.ref.display}{where}: {write.leaks}"


def undo_document(report: UndoReport) -> dict[str, Any]:
    return report.to_dict()


_DRY = {"client": " (dry run)", "server": " (server dry run)"}


def undo_lines(report: UndoReport) -> Iterator[str]:
    dry = _DRY.get(report.dry_run, "")
    for item in report.items:
        where = f"namespace {item.namespace}; " if item.namespace else ""
        if item.done:
            yield f"{item.ref} {item.what} {item.detail}" + (f" ({where[:-2]})" if where else "") + dry
        else:
            yield f"{item.ref} {item.what} not put back ({where}{item.detail})"


def _write_line(write: Write) -> str:
    where = [f"namespace {write.ref.namespace}"] if write.ref.namespace else []
    if write.removed:
        where.append("removed " + ", ".join(write.removed))
    if write.added:
        where.append("put back " + ", ".join(write.added))
    if write.message and write.outcome != "ok":
        where.append(write.message)
    verb = write.done if write.outcome == "ok" else f"{write.op} failed"
    detail = f" ({'; '.join(where)})" if where else ""
    return f"{write.ref.display} {verb}{detail}"
