"""--max-objects: the objects a run may change. Counted before the first write (over_cap:
the whole selection, or every call of a scan --free together) and at each write (Cap:
each object once); past it a write is not sent, and the object's outcome says so."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ..errors import InputError, UnfinalizeError
from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import ObjectKey, ObjectMeta, ObjectRef, Targets
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
