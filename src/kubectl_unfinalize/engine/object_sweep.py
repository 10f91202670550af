"""The manifest-object sweep: single objects named by -f documents, deleted first with
--delete (the DELETE's answer says whether finalizers hold the object, so freeing it
needs no read), then freed.

Under --delete, the documents that would block the rest are deleted before anything
else: admission webhook configurations (their backend goes with the operator, and each
write they match is then refused) and APIServices (an unavailable one keeps namespaces
Terminating). Webhooks are never called for webhook configurations, so that DELETE works."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from ..errors import CorruptObjects
from ..lost_nodes import PODS
from ..model import APISERVICE_RESOURCE, Action, ObjectRef
from ..options import DryRun
from .admission import CONFIGURATIONS
from .context import RunContext
from .freeing import Freer
from .lost_pods import LostPods
from .unreadable import Unreadable


@dataclass
class ObjectState:
    ref: ObjectRef
    uid: str = ""
    deleted: bool = False


FIRST = {(r.group, r.plural) for r in (*CONFIGURATIONS, APISERVICE_RESOURCE)}


def blockers(objects: list[ObjectState]) -> list[ObjectState]:
    """The manifest objects to delete before anything else."""
    return [o for o in objects if (o.ref.resource.group, o.ref.resource.plural) in FIRST]


class ObjectSweep:
    """The manifest objects of a run: construct once."""

    def __init__(self, run: RunContext, freer: Freer, unreadable: Unreadable, lost: LostPods) -> None:
        self.run = run
        self.freer = freer
        self.unreadable = unreadable
        self.lost = lost

    def job(self, obj: ObjectState) -> Callable[[], object]:
        return partial(self.freer.contain, obj.ref, "free", partial(self.free, obj))

    def delete_first(self, objects: list[ObjectState]) -> None:
        """On the engine's thread, before the first pass: a few objects, one after the other."""
        for obj in objects:
            self.freer.contain(obj.ref, "delete", partial(self.free, obj))

    def free(self, obj: ObjectState) -> bool:
        """A single object from a manifest, or named by TYPE NAME. With --only-terminating
        one not being deleted is left alone, as a CRD's instance is: neither deleted nor freed.
        One the server cannot read is deleted unreadable (--unsafe-delete-corrupt) or named."""
        try:
            return self._free(obj)
        except CorruptObjects as exc:
            obj.deleted = self.unreadable.meet(exc, obj.ref.resource)
            return obj.deleted

    def _free(self, obj: ObjectState) -> bool:
        options = self.run.options
        if options.delete and not obj.deleted and not options.only_terminating:
            return self._delete(obj)
        meta = self.run.cluster.get_meta(obj.ref)
        if meta is None:
            return True if obj.deleted else self.freer.missing(obj.ref)
        if obj.uid and meta.uid != obj.uid:
            return True  # re-created: the wait reports it
        if options.only_terminating and not meta.terminating:
            return True
        if options.delete and not obj.deleted:
            return self._delete(obj)
        if self.lost.wanted and meta.terminating and not meta.finalizers and meta.ref.resource == PODS:
            forced = self.lost.free_named(meta.ref)
            if forced is not None:
                return forced
        return self.freer.free_known(meta)

    def _delete(self, obj: ObjectState) -> bool:
        """Delete first; the DELETE's answer says whether finalizers hold the object, so
        freeing it needs no read."""
        dry_run = self.run.options.dry_run
        if dry_run is DryRun.CLIENT:
            meta = self.run.cluster.get_meta(obj.ref)
            if meta is None:
                return self.freer.missing(obj.ref)
            obj.deleted = True
            self.run.book.add(obj.ref, Action.DELETED)
            return self.freer.free_known(meta)
        deleted = self.run.writes.delete(obj.ref, dry_run)
        if deleted is None:
            return self.freer.missing(obj.ref)
        obj.deleted, obj.uid = True, deleted.uid
        self.run.book.add(obj.ref, Action.DELETED)
        return True if deleted.remaining is None else self.freer.free_known(deleted.remaining)
