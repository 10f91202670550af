"""Freeing one object, on a worker: the finalizer writes, their outcomes, and the
containment that turns any failure into that object's outcome."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from .. import finalizers
from ..errors import RUN_ENDED, Conflict, NotFound, UnfinalizeError
from ..kube.port import Deleted, DeleteFirst, RemoveAll
from ..model import Action, ObjectKey, ObjectMeta, ObjectRef
from ..options import DryRun
from . import diagnose
from .admission import Admission, Blocked
from .background import Gate
from .context import RunContext
from .revival import Revivals
from .sightings import Sightings

CONFLICT_RETRIES = 10


class Freer:
    """How every sweep (CRDs, namespaces, manifest objects) frees an object. Thread-safe."""

    def __init__(
        self,
        run: RunContext,
        admission: Admission,
        sightings: Sightings,
        revivals: Revivals,
        gate: Gate | None = None,
    ) -> None:
        self._cluster = run.cluster
        self._writes = run.writes
        self._options = run.options
        self._book = run.book
        self._admission = admission
        self._sightings = sightings
        self._gate = gate or Gate()
        self._revivals = revivals
        # Objects of the pass under way whose namespace is gone: the loop does not wait for them.
        self.orphans: set[ObjectRef] = set()

    def begin_pass(self) -> None:
        self.orphans = set()

    def cleared(self) -> None:
        """Wait for the RBAC preflight; raise its refusal. No write, and no outcome, before it."""
        self._gate.wait()

    def wanted(self, meta: ObjectMeta) -> bool:
        if self._options.only_terminating and not meta.terminating:
            return False
        return bool(self._options.removable(list(meta.finalizers)))

    @property
    def bulk_writes(self) -> bool:
        """Whether this run's writes can be bulk writes at all (no finalizer named, no dry run)."""
        return not self._options.finalizers and self._options.dry_run is DryRun.NONE

    def fast(
        self,
        meta: ObjectMeta,
        job_for: Callable[[ObjectMeta], Callable[..., object]],
        then: Callable[[], object] | None = None,
    ) -> Callable[[], object]:
        """`job_for(meta)`, or the bulk sender's writes when they are all it would write
        (no finalizer named, no dry run, no body to keep first): the RemoveAll of `meta`,
        and with --delete, for an object not yet being deleted, its DELETE first
        (DeleteFirst). The bulk sender runs the job instead after any answer but a 2xx,
        as `job(True)` when the patch went out and no answer came (it may have been
        applied); a RemoveAll after a DELETE falls back to `job_for` of what the DELETE
        left. `then` runs after a 2xx's outcome is recorded (the job is never called then)."""
        options, job = self._options, job_for(meta)
        deleting = options.delete and not meta.terminating
        if not self.bulk_writes or (deleting and not self._writes.bulk_deletes()):
            return job
        if self._admission.blocking(meta.ref, "UPDATE") or (deleting and self._admission.blocking(meta.ref, "DELETE")):
            return job  # not sent: the job says why
        if len(options.removable(list(meta.finalizers))) != len(meta.finalizers):
            return job  # a built-in controller's finalizer stays: a conditional write
        if not self._writes.take(meta.ref):
            return job  # not sent: the job meets the cap again and says so
        if deleting:
            return DeleteFirst(meta, _ignored, job, partial(self._deleted_in_bulk, meta, job_for, then))
        return self._remove_all(meta, job, then)

    def _remove_all(self, meta: ObjectMeta, job: Callable[..., object], then: Callable[[], object] | None) -> RemoveAll:
        done = partial(self._freed_in_bulk, meta)
        return RemoveAll(meta, done if then is None else partial(_both, done, then), job)

    def _deleted_in_bulk(
        self,
        meta: ObjectMeta,
        job_for: Callable[[ObjectMeta], Callable[..., object]],
        then: Callable[[], object] | None,
        answer: Deleted,
    ) -> Callable[[], object] | None:
        """The DELETE went; the RemoveAll of what it left, or None when nothing was left
        (gone at once: nothing to free, as on a worker). What left has a finalizer this run
        keeps (another client's foreground delete came first) is freed on a worker, by the
        conditional write that keeps it."""
        self._writes.deleted(meta.ref, answer)
        left = answer.remaining
        if left is None:
            if then is not None:
                then()
            return None
        if len(self._options.removable(list(left.finalizers))) != len(left.finalizers):
            return job_for(left)
        return self._remove_all(left, job_for(left), then)

    def free_known(self, meta: ObjectMeta) -> bool:
        self._sightings.saw(meta)
        return self.free(meta) if self._options.removable(list(meta.finalizers)) else True

    def missing(self, ref: ObjectRef) -> bool:
        self._book.record(ObjectKey.of(ref), self._book.outcome(ref, Action.GONE, message="not found"), first_only=True)
        return True

    def free(self, meta: ObjectMeta, sent: bool = False) -> bool:
        """Remove the finalizers this run removes; True when the object is free. `sent`:
        this patch was sent before and no answer came, so a 404 means it was applied."""
        options = self._options
        removed = options.removable(list(meta.finalizers))
        # What removing a built-in controller's finalizer may leak is in the object's spec
        # or status: read it while it is still there (only for a --finalizer naming one).
        obj = self._cluster.get(meta.ref) if finalizers.needs_object(removed) else None
        revived = False
        for _ in range(CONFLICT_RETRIES):
            kept = tuple(f for f in meta.finalizers if f not in removed)
            # Removing every finalizer needs no precondition; keeping some is a conditional write.
            keep = kept if options.finalizers or kept else None
            if options.dry_run is not DryRun.CLIENT:
                try:
                    version = self._writes.patch_finalizers(meta, keep, options.dry_run)
                except NotFound as exc:
                    namespace = meta.ref.namespace
                    if namespace and exc.names_namespace(namespace):
                        why = "refused again once it existed" if revived else self._revivals.revive(namespace)
                        if why is None:
                            revived = True
                            continue  # the namespace exists again: the same write, once more
                        if options.dry_run is DryRun.SERVER:
                            return self.freed(meta, removed, why, obj)  # what a run would do: said
                        return self._orphaned(meta, removed, why)
                    if exc.ambiguous or sent:  # the connection dropped after the server applied our patch
                        return self.freed(meta, removed, "gone right after the patch", obj)
                    self._book.of(meta, Action.GONE, [], "already gone")
                    return True
                except Conflict as exc:
                    fresh = self._cluster.get_meta(meta.ref)
                    if fresh is None or fresh.uid != meta.uid:
                        self._book.of(meta, Action.GONE, [], "already gone")
                        return True
                    now = options.removable(list(fresh.finalizers))
                    if not now:
                        # Nothing left to remove; ours, when an earlier try went through.
                        return self.freed(meta, removed, obj=obj) if exc.ambiguous else True
                    meta, removed = fresh, now
                    continue
            else:
                version = ""
            return self.freed(meta, removed, obj=obj, version=version)
        self._book.of(meta, Action.FAILED, removed, "kept conflicting with another writer")
        return False

    def revive(self, namespace: str) -> str | None:
        """None when `namespace`, gone, exists again (created by this run); else why it does not."""
        return self._revivals.revive(namespace)

    def _orphaned(self, meta: ObjectMeta, removed: list[str], why: str) -> bool:
        namespace = meta.ref.namespace
        self.orphans.add(meta.ref)
        message = (
            f"its namespace {namespace} is gone: it was removed while this object was held, and nothing, its"
            f" controller included, can change the object until the namespace exists again"
        )
        self._book.of(meta, Action.FAILED, removed, f"{message} ({why})")
        return False

    def _freed_in_bulk(self, meta: ObjectMeta, version: str) -> bool:
        return self.freed(meta, list(meta.finalizers), version=version)

    def freed(
        self,
        meta: ObjectMeta,
        removed: list[str],
        message: str = "",
        obj: dict[str, Any] | None = None,
        version: str = "",
    ) -> bool:
        """`version`: the resourceVersion the patch left the object at, when the answer said."""
        if not meta.terminating and not self._options.delete:
            self._sightings.freed_live(meta, version)
        leaks = finalizers.leaks(removed, obj, meta.external_name)
        self._writes.unfinalized(meta, removed, version, message, leaks, self._options.dry_run)
        self._book.of(meta, Action.UNFINALIZED, removed, message, leaks)
        return True

    def contain(self, ref: ObjectRef, verb: str, job: Callable[[], bool]) -> bool:
        """Run one object's job on a worker; its failure becomes its outcome."""
        try:
            return job()
        except RUN_ENDED:
            pass  # not sent, or the run ended: the diagnosis at the deadline, or the run's error, says what is left
        except Blocked as exc:  # lasting: the webhook's own line says what and how to fix it
            self._admission.count_refusal(ref)
            self._failed(ref, verb, str(exc))
        except UnfinalizeError as exc:
            self._failed(ref, verb, diagnose.explain(exc, verb, ref.resource, self._admission.listed))
        except Exception as exc:  # noqa: BLE001 - contained: one object's bug must not lose the report
            self._failed(ref, verb, f"unexpected {type(exc).__name__}: {exc}")
        return False

    def _failed(self, ref: ObjectRef, verb: str, message: str) -> None:
        self._writes.failed(ref, "unfinalize" if verb == "free" else verb, message, self._options.dry_run)
        self._book.add(ref, Action.FAILED, message=message)


def _ignored(_version: str) -> None:
    """A DeleteFirst's `done`: its RemoveAll has its own."""


def _both(first: Callable[[str], object], then: Callable[[], object], version: str) -> None:
    try:
        first(version)
    finally:
        then()
