"""What history and undo return: plain data the command line renders and the API hands out."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

API_VERSION = "kubectl-unfinalize/v1"


@dataclass(frozen=True)
class RecordSummary:
    """One line of `history`: when, what command, what it did, where its record is."""

    id: str
    path: str
    started: str
    command: str
    context: str
    server: str
    counts: dict[str, int]
    undoes: str = ""
    finished: bool = True  # False: the run was killed (no end line), or is still going

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "started": self.started,
            "command": self.command,
            "context": self.context,
            "server": self.server,
            "counts": dict(self.counts),
            "undoes": self.undoes or None,
            "finished": self.finished,
        }


def history_document(summaries: list[RecordSummary]) -> dict[str, Any]:
    """What `history -o json|yaml` prints (docs/history.schema.json)."""
    return {"apiVersion": API_VERSION, "kind": "History", "items": [s.to_dict() for s in summaries]}


@dataclass(frozen=True)
class UndoItem:
    """One object undo put back, or could not, and why."""

    ref: str  # kind.group/name, as the run's lines spell it
    namespace: str | None
    done: bool
    what: str  # "finalizers", "crd", "object"
    detail: str = ""  # what was put back, or why not

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "namespace": self.namespace,
            "done": self.done,
            "what": self.what,
            "detail": self.detail,
        }


@dataclass
class UndoReport:
    """What `undo` put back of the run `undone`, item by item, and where it wrote its own
    record: `record` means that path here as everywhere (Report.record, undo(record=...))."""

    undone: str  # the id of the record undone
    items: list[UndoItem] = field(default_factory=list)
    dry_run: str = "none"
    record: str = ""  # the path of undo's own record ("" when none was written)

    @property
    def ok(self) -> bool:
        return all(item.done for item in self.items)

    @property
    def written(self) -> str:
        """The name before 0.1.0 of `record` (kept for one release)."""
        warnings.warn("UndoReport.written is now UndoReport.record", DeprecationWarning, stacklevel=2)
        return self.record

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": "UndoReport",
            "undone": self.undone,
            "ok": self.ok,
            "dryRun": self.dry_run,
            "record": self.record or None,
            "items": [item.to_dict() for item in self.items],
        }
