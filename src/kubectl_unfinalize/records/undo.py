"""Putting back what a recorded run removed, and saying why not where it cannot: CRDs the
run deleted (from their manifests), backed-up custom resources (from their bodies, once
their CRD serves again), then finalizers on objects that are still the ones the run freed.

Every write is conditional on what undo just read: a finalizer a controller added since
is kept, an object someone re-created (another uid) is left alone, and an object being
deleted is left (the API server refuses new finalizers on it)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Protocol

from ..errors import Conflict, NotFound, UnfinalizeError
from ..journal import Journal, Write
from ..model import CRD_RESOURCE, ObjectMeta, ObjectRef, Resource
from ..options import DryRun
from .entries import KeptBody, for_create
from .model import UndoItem
from .reading import Record

CONFLICT_RETRIES = 5
NOT_BACKED_UP = "deleted by the run, and not backed up (--backup keeps the bodies of what --delete deletes)"
NOT_BROUGHT_BACK = (
    "left gone: it was gone before this run, which created it again only to free what was left in it"
    ", then deleted it again"
)
NOT_READABLE = (
    "left gone: the API server could not read it from storage, so nothing of it could be kept;"
    " it was deleted unreadable (--unsafe-delete-corrupt)"
)
NOT_FORCED = (
    "left gone: it was force-deleted on a lost node (--force-lost-pods); a pod cannot be put back,"
    " its controller makes a new one"
)
SERVED_WAIT = 30.0  # how long a re-created CRD may take to be Established before its objects are created


class UndoCluster(Protocol):
    def get_meta(self, ref: ObjectRef) -> ObjectMeta | None: ...

    def get(self, ref: ObjectRef) -> dict[str, Any] | None: ...

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> str: ...

    def create(self, resource: Resource, namespace: str | None, body: dict[str, Any], dry_run: DryRun) -> str:
        """The new object's uid ("" in a dry run)."""
        ...


class Undo:
    def __init__(
        self,
        cluster: UndoCluster,
        journal: Journal,
        dry_run: DryRun,
        concurrency: int = 16,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cluster = cluster
        self.journal = journal
        self.dry_run = dry_run
        self.concurrency = concurrency
        self.sleep = sleep
        self.deleted: set[tuple[ObjectRef, str]] = set()
        self.crd_groups: set[str] = set()  # the API groups of the CRDs this undo creates again

    def _would(self, done: str) -> str:
        """What an item did, or in a dry run what it would do."""
        return done if self.dry_run is DryRun.NONE else f"would be {done}"

    def run(self, record: Record) -> list[UndoItem]:
        items: list[UndoItem] = []
        deleted = {(w.ref, w.uid) for w in record.writes if w.op == "delete" and w.outcome == "ok"}
        # The first manifest kept of a CRD: before its conversion was switched off, if it was.
        crds = list({(k.ref, k.uid): k for k in reversed(record.kept) if k.kind == "crd"}.values())
        crds = [k for k in crds if (k.ref, k.uid) in deleted]
        backups = [k for k in record.kept if k.kind == "backup" and (k.ref, k.uid) in deleted]
        items += (crd_items := [self._crd(kept) for kept in crds])
        served = {k.ref.name for k, item in zip(crds, crd_items, strict=True) if item.done}
        self.crd_groups = {str(k.manifest.get("spec", {}).get("group") or "") for k in crds}
        self._wait_served(served)
        items += self._each(self._object, backups)
        restored = {(k.ref, k.uid) for k in backups}
        freed = [w for w in _latest_unfinalized(record.writes) if (w.ref, w.uid) not in restored]
        self.deleted = deleted
        items += self._each(self._finalizers, freed)
        done = restored | {(w.ref, w.uid) for w in freed}
        gone = [w for w in record.writes if (w.ref, w.uid) in deleted and w.ref.resource != CRD_RESOURCE]
        recreated = {(w.ref, w.uid) for w in record.writes if w.op == "recreate"}
        items += [
            _item(w.ref, False, "object", NOT_BROUGHT_BACK if (w.ref, w.uid) in recreated else NOT_BACKED_UP)
            for w in _unique(gone)
            if (w.ref, w.uid) not in done
        ]
        unreadable = [w for w in record.writes if w.op == "unsafe-delete"]
        items += [_item(w.ref, False, "object", NOT_READABLE) for w in _unique(unreadable)]
        forced = [w for w in record.writes if w.op == "force-delete"]
        items += [_item(w.ref, False, "object", NOT_FORCED) for w in _unique(forced)]
        return items

    def _each(self, job: Callable[[Any], UndoItem], work: list[Any]) -> list[UndoItem]:
        if len(work) < 2 or self.concurrency < 2:
            return [job(item) for item in work]
        with ThreadPoolExecutor(min(self.concurrency, len(work))) as pool:
            return list(pool.map(job, work))

    def _finalizers(self, write: Write) -> UndoItem:
        ref = write.ref
        try:
            for _ in range(CONFLICT_RETRIES):
                meta = self.cluster.get_meta(ref)
                if meta is None:
                    deleted = (ref, write.uid) in self.deleted
                    return _item(ref, False, "finalizers", NOT_BACKED_UP if deleted else "gone")
                if meta.uid != write.uid:
                    return _item(ref, False, "finalizers", f"re-created since (uid {meta.uid}, was {write.uid})")
                if meta.terminating:
                    return _item(ref, False, "finalizers", "being deleted: the API server refuses new finalizers")
                missing = tuple(f for f in write.removed if f not in meta.finalizers)
                if not missing:
                    return _item(ref, True, "finalizers", "already there: " + ", ".join(write.removed))
                if self.dry_run is DryRun.CLIENT:
                    return _item(ref, True, "finalizers", "would be put back: " + ", ".join(missing))
                try:
                    version = self.cluster.patch_finalizers(meta, meta.finalizers + missing, self.dry_run)
                except Conflict:
                    continue  # changed since the read: read again, keep what was added
                except NotFound:
                    return _item(ref, False, "finalizers", "gone")
                self._wrote("refinalize", ref, meta, version, missing)
                return _item(ref, True, "finalizers", self._would("put back") + ": " + ", ".join(missing))
            return _item(ref, False, "finalizers", f"kept changing ({CONFLICT_RETRIES} conflicts in a row)")
        except UnfinalizeError as exc:
            return _item(ref, False, "finalizers", str(exc))

    def _crd(self, kept: KeptBody) -> UndoItem:
        ref = kept.ref
        try:
            meta = self.cluster.get_meta(ref)
            if meta is not None:
                if meta.uid != kept.uid:
                    return _item(ref, False, "crd", f"replaced by a CRD of the same name (uid {meta.uid})")
                return _item(ref, False, "crd", "still being deleted by the API server: undo again once it is gone")
            body = for_create(kept.body())
            body["metadata"].pop("finalizers", None)  # the API server adds its cleanup finalizer itself
            self._create(ref, body, kept)
        except UnfinalizeError as exc:
            return _item(ref, False, "crd", str(exc))
        return _item(ref, True, "crd", self._would("created again") + " from the record")

    def _object(self, kept: KeptBody) -> UndoItem:
        ref = kept.ref
        try:
            meta = self.cluster.get_meta(ref)
            if meta is not None and meta.uid != kept.uid:
                return _item(ref, False, "object", f"re-created since (uid {meta.uid})")
            if meta is not None:
                return _item(ref, False, "object", "still being deleted: undo again once it is gone")
            body = for_create(kept.body())
            dropped = body["metadata"].pop("ownerReferences", None)
            if self.dry_run is not DryRun.NONE and ref.resource.group in self.crd_groups:
                # Its CRD is only being created in this dry run: the API server has no such type yet.
                return _item(ref, True, "object", "would be created again from the backup, once its CRD is served")
            self._create(ref, body, kept)
        except UnfinalizeError as exc:
            return _item(ref, False, "object", str(exc))
        note = "; its ownerReferences were dropped (the owners' uids changed)" if dropped else ""
        return _item(ref, True, "object", self._would("created again") + " from the backup" + note)

    def _create(self, ref: ObjectRef, body: dict[str, Any], kept: KeptBody) -> None:
        if self.dry_run is DryRun.CLIENT:
            return
        for attempt in range(10):
            try:
                uid = self.cluster.create(ref.resource, ref.namespace, body, self.dry_run)
                break
            except NotFound:  # the type is not served yet (a CRD created moments ago)
                if attempt == 9 or self.dry_run is not DryRun.NONE:
                    raise
                self.sleep(1.0)
        if self.dry_run is DryRun.NONE:
            finalizers = tuple(body["metadata"].get("finalizers") or ())
            self.journal.wrote(Write("create", ref, uid=uid, finalizers=finalizers))

    def _wait_served(self, names: set[str]) -> None:
        """A re-created CRD serves its objects once Established; until then creates are 404."""
        if not names or self.dry_run is not DryRun.NONE:
            return
        end = time.monotonic() + SERVED_WAIT
        waiting = set(names)
        while waiting and time.monotonic() < end:
            for name in list(waiting):
                crd = self.cluster.get(ObjectRef(CRD_RESOURCE, name))
                conditions = ((crd or {}).get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    waiting.discard(name)
            if waiting:
                self.sleep(0.2)

    def _wrote(self, op: str, ref: ObjectRef, meta: ObjectMeta, version: str, added: tuple[str, ...]) -> None:
        if self.dry_run is DryRun.NONE:
            self.journal.wrote(Write(op, ref, meta.uid, meta.resource_version, version, meta.finalizers, added=added))


def _latest_unfinalized(writes: list[Write]) -> list[Write]:
    """Each object's finalizers removed by the run, all its writes together (a --finalizer
    run, or a controller that put one back and was freed again, writes one object twice)."""
    found: dict[tuple[ObjectRef, str], Write] = {}
    for write in writes:
        if write.op != "unfinalize" or write.outcome != "ok" or not write.removed:
            continue
        key = (write.ref, write.uid)
        before = found.get(key)
        if before is not None:
            removed = before.removed + tuple(f for f in write.removed if f not in before.removed)
            write = replace(before, removed=removed)
        found[key] = write
    return list(found.values())


def _unique(writes: Iterable[Write]) -> list[Write]:
    seen: dict[tuple[ObjectRef, str], Write] = {}
    for write in writes:
        seen.setdefault((write.ref, write.uid), write)
    return list(seen.values())


def _item(ref: ObjectRef, done: bool, what: str, detail: str) -> UndoItem:
    return UndoItem(ref.display, ref.namespace, done, what, detail)
