"""`kubectl unfinalize history [ID|--last]` and `undo ID|--last`: the records of earlier
runs, read through the Python API; undo's exit status says whether all was put back."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .exit import of_undo
from .process import command_line, err, warn

if TYPE_CHECKING:
    from .commands import HistoryCommand, UndoCommand


def history(command: HistoryCommand) -> int:
    from ..record_api import history as list_records
    from ..record_api import history_document, read_record, summary
    from .record_output import document, history_table, record_lines

    output = command.output.format
    folder = command.folder
    if command.ref is None and not command.last:
        found = list_records(connection=command.connection, folder=folder)
        if output in ("json", "yaml"):
            _out(document(history_document(found), output))
        elif found:
            _out("".join(line + "\n" for line in history_table(found)))
        elif not command.output.quiet:
            err("no records of this context")
        return 0
    record = read_record(command.ref, last=command.last, connection=command.connection, folder=folder)
    if output in ("json", "yaml"):
        _out(document(record.to_dict(summary(record)), output))
    else:
        for line in record_lines(record, summary(record)):
            _out(line + "\n")
    return 0


def undo(command: UndoCommand) -> int:
    from ..record_api import undo as undo_record
    from .record_output import document, undo_document, undo_lines

    report = undo_record(
        command.ref,
        last=command.last,
        dry_run=command.dry_run,
        connection=command.connection,
        folder=command.folder,
        record=command.folder,
        command=command_line(),
        on_warning=warn,
    )
    if command.output.format in ("json", "yaml"):
        _out(document(undo_document(report), command.output.format))
    else:
        for line in undo_lines(report):
            _out(line + "\n")
    if not command.output.quiet:
        back = sum(item.done for item in report.items)
        dry = "" if report.dry_run == "none" else f" ({report.dry_run} dry run)"
        text = f"undo of {report.undone}: {back} put back, {len(report.items) - back} not{dry}"
        err(text + (f"; record: {report.record}" if report.record else ""))
    return of_undo(report)


def _out(text: str) -> None:
    try:
        sys.stdout.write(text)
    except BrokenPipeError:
        pass
