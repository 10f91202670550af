"""The public Python API's records: `history()` lists what earlier runs wrote, `undo()`
puts back what one removed. Every writing run records itself (api.run); these read it."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from pathlib import Path

from .deadline import Deadline
from .errors import InputError
from .kube.cluster import HttpCluster
from .kube.config import connect
from .options import ConnectionOptions, DryRun, connection_of
from .records.history import newest_to_undo, of_context, summary
from .records.model import RecordSummary, UndoReport, history_document
from .records.reading import Record, find, load
from .records.recorded import Header, recorded
from .records.undo import Undo


def history(
    *,
    connection: ConnectionOptions | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    folder: str | None = None,
    interrupt: threading.Event | None = None,
) -> list[RecordSummary]:
    """The records of the connection's context (by context name and server), newest first.
    `interrupt` is taken for the verbs' one shape: history reads the kubeconfig and local
    files only, and ends at once."""
    with connect(connection_of(connection, kubeconfig, context)) as transport:
        return of_context(transport.context, transport.host, _folder(folder))


def read_record(
    ref: str | None = None,
    *,
    last: bool = False,
    connection: ConnectionOptions | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    folder: str | None = None,
    interrupt: threading.Event | None = None,
    **renamed: str | None,
) -> Record:
    """One record whole: `ref` its id (or a unique prefix, or a path), or the newest of the
    context with `last`."""
    ref = _ref(ref, last, renamed.pop("record", None), "read_record")
    _no_more(renamed, "read_record")
    connection = connection_of(connection, kubeconfig, context)
    if ref is None:
        if not last:
            raise InputError("name a record, or pass last=True")
        found = history(connection=connection, folder=folder, interrupt=interrupt)
        if not found:
            raise InputError("no record of this context (kubectl unfinalize history lists them)")
        ref = found[0].path
    return load(find(ref, _folder(folder)))


def undo(
    ref: str | None = None,
    *,
    last: bool = False,
    dry_run: DryRun | str | None = None,
    connection: ConnectionOptions | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    folder: str | None = None,
    record: str | None = None,
    command: str | None = None,
    on_warning: Callable[[str], None] | None = None,
    interrupt: threading.Event | None = None,
    **renamed: str | None,
) -> UndoReport:
    """Put back what the run of record `ref` removed (or, with last=True, of the newest
    record of this context that is not itself an undo and was not undone): finalizers on
    objects still there with the same uid and not being deleted (those added since are
    kept), the CRDs it deleted, and the objects it backed up (--backup). Each item says what
    was put back or why not. A record of another context is refused unless `context` names
    it. `record` is where undo writes its own record, as for run(); setting `interrupt`
    ends it between writes, and what was put back until then is in its record."""
    if record is not None and ref is None and not last:
        ref, record = _ref(None, last, record, "undo"), None
    if "record_to" in renamed:
        warnings.warn("undo(record_to=...) is now undo(record=...)", DeprecationWarning, stacklevel=2)
        record = renamed.pop("record_to")
    _no_more(renamed, "undo")
    connection = connection_of(connection, kubeconfig, context)
    dry = DryRun.parse(dry_run)
    with connect(connection) as transport:
        if ref is None:
            if not last:
                raise InputError("undo needs a record, or last=True")
            chosen, _ = newest_to_undo(of_context(transport.context, transport.host, _folder(folder)))
            ref = chosen.path
        done = load(find(ref, _folder(folder)))
        if done.undoes:
            raise InputError(f"record {done.id} is an undo of {done.undoes}: run that again to do it again")
        _same_cluster(done, transport.context, transport.host, connection.context)
        header = Header(command, transport.context, transport.host, undoes=done.id)
        with recorded(record, header, on_warning or (lambda _: None), dry) as recording:
            items = Undo(HttpCluster(transport, Deadline(None, interrupt)), recording.journal, dry).run(done)
            report = UndoReport(done.id, items, dry.value)
            back = sum(i.done for i in items)
            recording.count({"putBack": back, "notPutBack": len(items) - back})
            recording.ok = report.ok
        report.record = recording.path
        return report


def _ref(ref: str | None, last: bool, old: str | None, verb: str) -> str | None:
    """Before 0.1.0 `record=` named the record to read or undo; it now names where a call
    writes its own. The old use (a record named, no ref, not last) works for one release."""
    if old is None or ref is not None or last:
        return ref
    warnings.warn(f"{verb}(record=ID) is now {verb}(ID)", DeprecationWarning, stacklevel=3)
    return old


def _no_more(renamed: dict[str, str | None], verb: str) -> None:
    if renamed:
        raise TypeError(f"{verb}() got an unexpected keyword argument {next(iter(renamed))!r}")


def _same_cluster(record: Record, context: str, server: str, named: str | None) -> None:
    theirs = (record.header.get("context"), record.header.get("server"))
    if theirs == (context, server) or (named is not None and named == theirs[0]):
        return
    raise InputError(
        f"record {record.id} is of context {theirs[0]!r} ({theirs[1]}), not of {context!r} ({server}):"
        f" pass --context {theirs[0]} to undo it there"
    )


def _folder(folder: str | None) -> Path | None:
    return Path(folder).expanduser() if folder else None


__all__ = ["history", "history_document", "read_record", "summary", "undo"]
