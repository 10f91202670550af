"""The run's writes as its record sees them, and its cap (--max-objects).

`Recorded` stands between the engine and the cluster for deletes and merge patches:
before a CRD is deleted (or its conversion switched off) its manifest is kept, before any
other object but a namespace is deleted with --backup its body is kept, and each answered
write is told to the journal. Finalizer patches are told by the Freer, which alone knows
what the patch removed and what may leak (the bulk sender's patches never pass here).

`Cap` counts the objects the run writes to, each once: past --max-objects a write is not
sent, and the object's outcome says so."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, cast

from ..errors import InputError, UnfinalizeError
from ..journal import Journal, Write
from ..kube.paging import ListQuery
from ..kube.port import Cluster, Deleted
from ..model import CRD_RESOURCE, NAMESPACE_RESOURCE, ObjectKey, ObjectMeta, ObjectRef, Targets
from ..options import DryRun, Options


class CapReached(UnfinalizeError):
    """This write would change one object more than --max-objects allows: not sent."""


class Cap:
    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.refused = 0
        self._taken: set[ObjectKey] = set()
        self._lock = threading.Lock()

    def take(self, ref: ObjectRef) -> None:
        """Count `ref` (once), or raise CapReached when the cap is full."""
        if self.limit is None:
            return
        key = ObjectKey.of(ref)
        with self._lock:
            if key in self._taken:
                return
            if len(self._taken) >= self.limit:
                self.refused += 1
                raise CapReached(f"not changed: --max-objects {self.limit} reached")
            self._taken.add(key)


class Recorded:
    def __init__(self, cluster: Cluster, journal: Journal, cap: Cap) -> None:
        self._cluster = cluster
        self._journal = journal
        self._cap = cap

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cluster, name)

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> str:
        self._cap.take(meta.ref)
        return self._cluster.patch_finalizers(meta, keep, dry_run)

    def delete(self, ref: ObjectRef, dry_run: DryRun, whole: bool = False) -> Deleted | None:
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
            left = answer.remaining.finalizers if answer.remaining is not None else ()
            self._journal.wrote(Write("delete", ref, answer.uid, before, answer.version, finalizers=left))
        return answer

    def merge_patch(self, ref: ObjectRef, body: dict[str, Any], dry_run: DryRun) -> None:
        """A CRD's spec.conversion switched off: its manifest first, as it was."""
        self._cap.take(ref)
        if dry_run is DryRun.NONE:
            self._keep_before(ref, "crd")
        self._cluster.merge_patch(ref, body, dry_run)
        if dry_run is DryRun.NONE:
            self._journal.wrote(Write("reconfigure", ref, message=f"merge patch {body}"))

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


def recorded(cluster: Cluster, journal: Journal, cap: Cap) -> Cluster:
    return cast(Cluster, Recorded(cluster, journal, cap))


def over_cap(cluster: Cluster, runs: Sequence[tuple[Options, Targets]], limit: int | None, subject: str) -> None:
    """--max-objects before the first write: count what the runs would change now together
    (the CRDs' instances by a metadata list, named objects by a read; a namespace counts
    itself, its contents are held to the cap while the run goes) and refuse when it is
    more. One run, or every call of a scan --free; a dry run writes nothing to count."""
    if limit is None or all(options.dry_run is not DryRun.NONE for options, _ in runs):
        return
    count = sum(_changes_of(cluster, options, targets) for options, targets in runs)
    if count > limit:
        raise InputError(
            f"{subject} would change {count} objects, more than --max-objects {limit}; nothing was changed"
        )


def _changes_of(cluster: Cluster, options: Options, targets: Targets) -> int:
    count = 0
    query = ListQuery(options.namespace, options.label_selector, options.field_selector, options.chunk_size)
    for crd in targets.crds:
        count += options.delete
        for page in cluster.list_meta(crd.resource, query):
            count += sum(1 for meta in page if _changes(options, meta))
    for ref in targets.objects:
        meta = cluster.get_meta(ref)
        count += meta is not None and (options.delete or _changes(options, meta))
    return count + len(targets.namespaces)  # its delete, or its own finalizers


def _changes(options: Options, meta: ObjectMeta) -> bool:
    if options.delete:
        return True
    if options.only_terminating and not meta.terminating:
        return False
    return bool(options.removable(list(meta.finalizers)))
