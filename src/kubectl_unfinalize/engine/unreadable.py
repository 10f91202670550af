"""Objects the API server cannot read from storage (KEP-3926: a lost encryption key, bytes
that do not decode). A list of their type fails whole while one is there, a read or a
write of one fails, and no answer changes by asking again; nothing, their controller
included, can remove their finalizers. The one cure is the server's unsafe delete, which
skips finalizers and admission: sent only with --unsafe-delete-corrupt, only for an object
the server itself named as unreadable, after one warning. Without the flag each is named
with the command that would delete it."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..errors import CorruptObjects, Forbidden, Invalid, UnfinalizeError
from ..kube import corrupt
from ..model import Action, ObjectRef, Resource
from ..options import DryRun
from .context import RunContext
from .diagnose import explain

UNDOABLE = "undo cannot bring it back"


def command(ref: ObjectRef) -> str:
    """The command that deletes `ref` unreadable, ready to paste."""
    scope = f" -n {ref.namespace}" if ref.namespace else ""
    return f"kubectl unfinalize {ref.resource.qualified} {ref.name}{scope} --unsafe-delete-corrupt"


class Unreadable:
    """Shared by a run's sweeps; each object is told once, however many lists meet it."""

    def __init__(self, run: RunContext, warn: Callable[[str], None]) -> None:
        self._run = run
        self._warn = warn
        self._warned = False
        self._told: dict[ObjectRef, bool] = {}  # ref -> gone by this run's unsafe delete
        self._lock = threading.Lock()

    def meet(self, exc: CorruptObjects, resource: Resource) -> bool:
        """Each object `exc` names, deleted (the flag) or named. True when every one is gone
        now, so that what failed on them may be sent again."""
        found = corrupt.named(exc, resource)
        if not found.said:
            return False
        return all([self._one(ref, said) for ref, said in found.said.items()]) and not found.more

    def _one(self, ref: ObjectRef, said: str) -> bool:
        with self._lock:
            if ref in self._told:
                return self._told[ref]
            self._told[ref] = False
            warn = self._run.options.unsafe_delete_corrupt and not self._warned
            self._warned = self._warned or warn
        if warn:
            self._warn(f"--unsafe-delete-corrupt: {corrupt.WARNING}")
        gone = self._delete(ref, said) if self._run.options.unsafe_delete_corrupt else self._name(ref, said)
        with self._lock:
            self._told[ref] = gone
        return gone

    def _name(self, ref: ObjectRef, said: str) -> bool:
        message = (
            f"the API server cannot read it from storage ({said}): nothing can remove its finalizers or change it;"
            f" `{command(ref)}` deletes it without them (read its warning first)"
        )
        self._run.book.add(ref, Action.FAILED, message=message)
        return False

    def _delete(self, ref: ObjectRef, said: str) -> bool:
        run = self._run
        if run.options.dry_run is not DryRun.NONE:
            # The server refuses a dry run of this delete: nothing is sent.
            run.book.add(ref, Action.DELETED, message=f"unreadable from storage ({said}): would be deleted unsafely")
            return False
        try:
            deleted = run.writes.unsafe_delete(ref, said)
        except Forbidden as exc:
            where = f" in namespace {ref.namespace}" if ref.namespace else ""
            message = (
                f"forbidden: the unsafe delete needs the RBAC verb '{corrupt.UNSAFE_DELETE_VERB}' on"
                f" {ref.resource.qualified}{where}, beside delete: {exc}"
            )
        except Invalid as exc:
            message = f"not deleted: the API server reads it again now, and refuses the unsafe delete: {exc}"
        except UnfinalizeError as exc:
            message = explain(exc, "delete", ref.resource)
        else:
            how = "deleted unreadable from storage" if deleted else "unreadable from storage, and gone already"
            run.book.add(
                ref,
                Action.DELETED,
                message=f"{how} ({said}): finalizers and admission skipped; {UNDOABLE}",
            )
            return True
        run.writes.failed(ref, "unsafe-delete", message, run.options.dry_run)
        run.book.add(ref, Action.FAILED, message=message)
        return False
