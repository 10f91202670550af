"""Every write of a run, in one place: counted against --max-objects (engine/cap.py), held
back when a dead admission webhook is known to refuse it (the Guard, engine/admission.py),
and told to the run's record as the API server answered it.

The parts of a run read through the port and write through `Writes`, never through the
cluster itself: a worker's patch, a bulk patch (taken from the cap before it is queued,
told here when its answer comes), a delete, a CRD's conversion switched off. Before a
CRD is deleted (or its conversion switched off) its manifest is kept, and before any
other object but a namespace is deleted with --backup its body is kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..journal import Journal, Write
from ..kube.port import Cluster, Deleted
from ..model import CRD_RESOURCE, NAMESPACE_RESOURCE, ObjectMeta, ObjectRef
from ..options import DryRun
from .cap import Cap, CapReached

T = TypeVar("T")


class Guard(Protocol):
    """What stands before a write: engine/admission.py's Admission."""

    def write(self, ref: ObjectRef, operation: str, send: Callable[[], T]) -> T: ...

    def note_deleted(self, ref: ObjectRef, answer: Deleted | None) -> None: ...


class Writes:
    def __init__(self, cluster: Cluster, journal: Journal, cap: Cap, guard: Guard | None = None) -> None:
        self._cluster = cluster
        self._journal = journal
        self._cap = cap
        self._guard = guard

    def guarded(self, guard: Guard) -> Writes:
        """The same writes, each first through `guard` (the admission webhooks' own writes
        are not: they are what the guard sends)."""
        return Writes(self._cluster, self._journal, self._cap, guard)

    def take(self, ref: ObjectRef) -> bool:
        """Count a bulk patch of `ref` before it is queued; False past the cap (then the
        object's own job meets the cap again and says so)."""
        try:
            self._cap.take(ref)
        except CapReached:
            return False
        return True

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> str:
        """Told to the record by `unfinalized`, once the caller knows what may leak."""

        def send() -> str:
            self._cap.take(meta.ref)
            return self._cluster.patch_finalizers(meta, keep, dry_run)

        return self._guarded(meta.ref, "UPDATE", send)

    def delete(self, ref: ObjectRef, dry_run: DryRun, whole: bool = False) -> Deleted | None:
        answer = self._guarded(ref, "DELETE", lambda: self._delete(ref, dry_run, whole))
        if self._guard is not None:
            self._guard.note_deleted(ref, answer)
        return answer

    def create_namespace(self, ref: ObjectRef, body: dict[str, Any]) -> str:
        """A namespace that is gone, created again to free what was left in it
        (engine/revival.py): counted once, recorded (undo leaves it gone); its uid."""
        self._cap.take(ref)
        uid = self._cluster.create(NAMESPACE_RESOURCE, None, body, DryRun.NONE)
        self._journal.wrote(Write("recreate", ref, uid, message="gone; created again to free what was left in it"))
        return uid

    def delete_created(self, ref: ObjectRef) -> None:
        """Its delete again: not counted twice (it was counted when created), recorded."""
        answer = self._cluster.delete(ref, DryRun.NONE)
        if answer is not None:
            self._journal.wrote(Write("delete", ref, answer.uid, new_version=answer.version))

    def unsafe_delete(self, ref: ObjectRef, said: str) -> bool:
        """An object the server cannot read, deleted from storage: counted, recorded as what
        undo cannot bring back (there is no body to keep). False when it was gone already."""
        self._cap.take(ref)
        deleted = self._cluster.unsafe_delete(ref)
        if deleted:
            self._journal.wrote(Write("unsafe-delete", ref, message=f"unreadable from storage: {said}"))
        return deleted

    def force_delete(self, ref: ObjectRef, uid: str, said: str, dry_run: DryRun) -> bool:
        """A pod on a lost node, deleted with no grace period: counted, recorded as what undo
        cannot bring back (a pod's controller makes a new one). False when it was gone."""
        self._cap.take(ref)
        deleted = self._cluster.force_delete(ref, uid, dry_run)
        if deleted and dry_run is DryRun.NONE:
            self._journal.wrote(Write("force-delete", ref, uid, message=f"on a lost node: {said}"))
        return deleted

    def merge_patch(self, ref: ObjectRef, body: dict[str, Any], dry_run: DryRun) -> None:
        """A CRD's spec.conversion switched off: its manifest first, as it was."""
        self._cap.take(ref)
        if dry_run is DryRun.NONE:
            self._keep_before(ref, "crd")
        self._cluster.merge_patch(ref, body, dry_run)
        if dry_run is DryRun.NONE:
            self._journal.wrote(Write("reconfigure", ref, message=f"merge patch {body}"))

    def unfinalized(
        self, meta: ObjectMeta, removed: list[str], version: str, message: str, leaks: str, dry_run: DryRun
    ) -> None:
        """A finalizer patch answered, by a worker or the bulk sender. `version`: the
        resourceVersion it left the object at, when the answer said."""
        if dry_run is DryRun.NONE:
            self._journal.wrote(
                Write(
                    "unfinalize",
                    meta.ref,
                    meta.uid,
                    meta.resource_version,
                    version,
                    meta.finalizers,
                    tuple(removed),
                    message=message,
                    leaks=leaks,
                )
            )

    def failed(self, ref: ObjectRef, op: str, message: str, dry_run: DryRun) -> None:
        if dry_run is DryRun.NONE:
            self._journal.wrote(Write(op, ref, outcome="failed", message=message))

    def _guarded(self, ref: ObjectRef, operation: str, send: Callable[[], T]) -> T:
        return send() if self._guard is None else self._guard.write(ref, operation, send)

    def _delete(self, ref: ObjectRef, dry_run: DryRun, whole: bool) -> Deleted | None:
        """A CRD's manifest comes whole with its DELETE's answer (its cleanup finalizer keeps
        it there), so keeping it costs no read; another object's body (--backup) is read first."""
        self._cap.take(ref)
        crd = ref.resource == CRD_RESOURCE
        recording = dry_run is DryRun.NONE
        before = self._keep_before(ref, "backup") if recording and not crd else ""
        answer = self._cluster.delete(ref, dry_run, whole=whole or (crd and recording and self._journal.wants("crd")))
        if answer is not None and recording:
            if crd and answer.body:
                self._journal.keep("crd", ref, answer.body)
            self.deleted(ref, answer, before)
        return answer

    def bulk_deletes(self) -> bool:
        """Whether a custom resource's DELETE may be the bulk sender's: not when --backup
        keeps each body first (a read before the DELETE)."""
        return not self._journal.wants("backup")

    def deleted(self, ref: ObjectRef, answer: Deleted, before: str = "") -> None:
        """A DELETE answered 2xx (by a worker, or the bulk sender, taken from the cap
        before it was queued). `before`: the resourceVersion of the body kept first."""
        left = answer.remaining.finalizers if answer.remaining is not None else ()
        self._journal.wrote(Write("delete", ref, answer.uid, before, answer.version, finalizers=left))

    def _keep_before(self, ref: ObjectRef, kind: str) -> str:
        """Keep the body the record wants; its resourceVersion ("" when none was read: a
        delete without --backup knows only what its answer says)."""
        if not self._journal.wants(kind) or ref.resource == NAMESPACE_RESOURCE:
            return ""
        body = self._cluster.get(ref)
        if not body:
            return ""
        self._journal.keep(kind, ref, body)
        return str((body.get("metadata") or {}).get("resourceVersion") or "")
