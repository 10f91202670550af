"""What a run tells its record, as plain data: the engine reports each answered write here
and never learns where (or whether) it is kept. records/ writes it to disk; a run without
a record gets NO_JOURNAL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .model import ObjectRef


@dataclass(frozen=True)
class Write:
    """One write as the API server answered it. `version`/`new_version`: the object's
    resourceVersion before and after ("" when unknown); `finalizers`: what it held before."""

    # unfinalize, delete, reconfigure, recreate (a namespace that was gone), unsafe-delete (an
    # object the server could not read, deleted from storage), force-delete (a pod on a lost
    # node, deleted with no grace period); undo's refinalize, create
    op: str
    ref: ObjectRef
    uid: str = ""
    version: str = ""
    new_version: str = ""
    finalizers: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    outcome: str = "ok"
    message: str = ""
    leaks: str = ""
    added: tuple[str, ...] = ()  # undo's refinalize: the finalizers it put back

    @property
    def done(self) -> str:
        """What the write did, in one word: its count in a record's end and history, and
        its verb in a record's text. A newer writer's op is shown as it is named."""
        return DONE.get(self.op, self.op)


# Every op a run writes, and its one word once done.
DONE = {
    "unfinalize": "unfinalized",
    "delete": "deleted",
    "reconfigure": "reconfigured",
    "recreate": "re-created",
    "unsafe-delete": "deleted unreadable",
    "force-delete": "force-deleted",
    "refinalize": "refinalized",
    "create": "created",
}


class Journal(Protocol):
    def wants(self, kind: str) -> bool:
        """Whether a body of `kind` is kept before its delete: "crd" (a CRD's manifest,
        whenever there is a record) or "backup" (any other object's, with --backup). Asked
        first, so that a run without a record reads nothing more."""
        ...

    def wrote(self, write: Write) -> None: ...

    def keep(self, kind: str, ref: ObjectRef, body: dict[str, Any]) -> None:
        """A body before its delete: kind "crd" (a CRD's manifest) or "backup"."""
        ...


class _NoJournal:
    def wants(self, kind: str) -> bool:
        return False

    def wrote(self, write: Write) -> None:
        pass

    def keep(self, kind: str, ref: ObjectRef, body: dict[str, Any]) -> None:
        pass


NO_JOURNAL: Journal = _NoJournal()
