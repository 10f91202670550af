"""Freeing one object, on a worker: the finalizer writes, their outcomes, and the
containment that turns any failure into that object's outcome."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

from .. import finalizers
from ..deadline import Deadline
from ..errors import RUN_ENDED, Conflict, NotFound, UnfinalizeError
from ..kube.cluster import remove_all
from ..kube.port import Cluster
from ..model import Action, ObjectKey, ObjectMeta, ObjectRef, Resource
from ..options import DryRun, Options
from . import diagnose
from .admission import Admission, Blocked, guard
from .background import Gate
from .outcomes import OutcomeBook

CONFLICT_RETRIES = 10


class Freer:
    """What every sweep (CRDs, namespaces, manifest objects) frees objects with. Thread-safe."""

    def __init__(
        self, cluster: Cluster, options: Options, book: OutcomeBook, deadline: Deadline, gate: Gate | None = None
    ) -> None:
        # Writes go through the admission guard: none is sent that a dead webhook refuses.
        self.admission = Admission(cluster, options, book)
        self.cluster = guard(cluster, self.admission)
        self.options = options
        self.book = book
        self.deadline = deadline
        self.seen: set[str] = set()  # uids listed or read: the report's "scanned"
        # Freed while not terminating (their finalizers may come back): uid -> the object and
        # the resourceVersion this run's patch left it at ("" unknown), as the final check reads them.
        self.live: dict[str, tuple[ObjectRef, str]] = {}
        self.live_places: Counter[tuple[Resource, str | None]] = Counter()  # how many in each (type, namespace)
        self.first_live: float | None = None  # when the first of them was freed
        self.lock = threading.Lock()
        self.gate = gate or Gate()

    def cleared(self) -> None:
        """Wait for the RBAC preflight; raise its refusal. No write, and no outcome, before it."""
        self.gate.wait()

    def wanted(self, meta: ObjectMeta) -> bool:
        if self.options.only_terminating and not meta.terminating:
            return False
        return bool(self.options.removable(list(meta.finalizers)))

    @property
    def bulk_writes(self) -> bool:
        """Whether this run's writes can be bulk patches at all (no finalizer named, no
        dry run): --delete sends them only for objects already being deleted."""
        return not self.options.finalizers and self.options.dry_run is DryRun.NONE

    def fast(
        self, meta: ObjectMeta, job: Callable[..., object], then: Callable[[], object] | None = None
    ) -> Callable[[], object]:
        """`job`, or the bulk patch that removes every finalizer when that is all `job`
        would write (no finalizer named, no dry run, nothing to delete first); the bulk
        sender runs `job` instead after any answer but a 2xx, as `job(True)` when the
        patch went out and no answer came (it may have been applied). `then` runs after
        a 2xx's outcome is recorded (job is never called then)."""
        options = self.options
        if not self.bulk_writes or (options.delete and not meta.terminating):
            return job
        if self.admission.blocking(meta.ref, "UPDATE"):
            return job  # not sent: the job says why
        if len(options.removable(list(meta.finalizers))) != len(meta.finalizers):
            return job  # a built-in controller's finalizer stays: a conditional write
        done = partial(self._freed_in_bulk, meta)
        return remove_all(meta, done if then is None else partial(_both, done, then), job)

    def free_known(self, meta: ObjectMeta) -> bool:
        self.seen.add(meta.uid)
        return self.free(meta) if self.options.removable(list(meta.finalizers)) else True

    def missing(self, ref: ObjectRef) -> bool:
        self.book.record(ObjectKey.of(ref), self.book.outcome(ref, Action.GONE, message="not found"), first_only=True)
        return True

    def free(self, meta: ObjectMeta, sent: bool = False) -> bool:
        """Remove the finalizers this run removes; True when the object is free. `sent`:
        this patch was sent before and no answer came, so a 404 means it was applied."""
        options = self.options
        removed = options.removable(list(meta.finalizers))
        # What removing a built-in controller's finalizer may leak is in the object's spec
        # or status: read it while it is still there (only for a --finalizer naming one).
        obj = self.cluster.get(meta.ref) if finalizers.needs_object(removed) else None
        for _ in range(CONFLICT_RETRIES):
            kept = tuple(f for f in meta.finalizers if f not in removed)
            # Removing every finalizer needs no precondition; keeping some is a conditional write.
            keep = kept if options.finalizers or kept else None
            if options.dry_run is not DryRun.CLIENT:
                try:
                    version = self.cluster.patch_finalizers(meta, keep, options.dry_run)
                except NotFound as exc:
                    if exc.ambiguous or sent:  # the connection dropped after the server applied our patch
                        return self.freed(meta, removed, "gone right after the patch", obj)
                    self.book.of(meta, Action.GONE, [], "already gone")
                    return True
                except Conflict as exc:
                    fresh = self.cluster.get_meta(meta.ref)
                    if fresh is None or fresh.uid != meta.uid:
                        self.book.of(meta, Action.GONE, [], "already gone")
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
        self.book.of(meta, Action.FAILED, removed, "kept conflicting with another writer")
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
        if not meta.terminating and not self.options.delete:
            if self.first_live is None:
                self.first_live = time.monotonic()
            with self.lock:  # from the workers and the bulk sender at once: a count must not be lost
                if meta.uid not in self.live:
                    self.live_places[(meta.ref.resource, meta.ref.namespace)] += 1
                self.live[meta.uid] = (meta.ref, version)
        self.book.of(meta, Action.UNFINALIZED, removed, message, finalizers.leaks(removed, obj, meta.external_name))
        return True

    def contain(self, ref: ObjectRef, verb: str, job: Callable[[], bool]) -> bool:
        """Run one object's job on a worker; its failure becomes its outcome."""
        try:
            return job()
        except RUN_ENDED:
            pass  # not sent, or the run ended: the diagnosis at the deadline, or the run's error, says what is left
        except Blocked as exc:  # lasting: the webhook's own line says what and how to fix it
            with self.lock:
                self.admission.refusals[ref.resource] += 1
                self.admission.refused_in[ref.namespace or ""] += 1
            self.book.add(ref, Action.FAILED, message=str(exc))
        except UnfinalizeError as exc:
            self.book.add(ref, Action.FAILED, message=diagnose.explain(exc, verb, ref.resource))
        except Exception as exc:  # noqa: BLE001 - contained: one object's bug must not lose the report
            self.book.add(ref, Action.FAILED, message=f"unexpected {type(exc).__name__}: {exc}")
        return False

    def begin_pass(self) -> None:
        self.admission.refusals.clear()
        self.admission.refused_in.clear()

    def stuck(self, resource: Resource, failed: int) -> bool:
        """Every one of the `failed` objects of `resource` in the last pass was refused by
        a dead admission webhook: waiting for them cannot help."""
        return failed > 0 and self.admission.refusals[resource] >= failed

    def exists(self, ref: ObjectRef, uid: str) -> bool:
        """Still there with the uid this run deleted; a re-created object is reported,
        not waited on (kubectl's wait compares uids the same way)."""
        try:
            meta = self.cluster.get_meta(ref)
        except UnfinalizeError:
            return True  # cannot tell now; the next round asks again, the deadline bounds it
        if meta is None:
            return False
        if meta.uid != uid:
            self.book.add(ref, Action.RECREATED, message=f"deleted, then re-created (new uid {meta.uid})")
            return False
        return True


def _both(first: Callable[[str], object], then: Callable[[], object], version: str) -> None:
    try:
        first(version)
    finally:
        then()
