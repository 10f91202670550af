"""The manifest-object sweep: single objects named by -f documents, deleted first with
--delete (the DELETE's answer says whether finalizers hold the object, so freeing it
needs no read), then freed.

Under --delete, the documents that would block the rest are deleted before anything
else: admission webhook configurations (their backend goes with the operator, and each
write they match is then refused) and APIServices (an unavailable one keeps namespaces
Terminating). Webhooks are never called for webhook configurations, so that DELETE works."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ..model import APISERVICE_RESOURCE, Action, ObjectRef
from ..options import DryRun
from .admission import CONFIGURATIONS
from .freeing import Freer


@dataclass
class ObjectState:
    ref: ObjectRef
    uid: str = ""
    deleted: bool = False


FIRST = {(r.group, r.plural) for r in (*CONFIGURATIONS, APISERVICE_RESOURCE)}


def blockers(objects: list[ObjectState]) -> list[ObjectState]:
    """The manifest objects to delete before anything else."""
    return [o for o in objects if (o.ref.resource.group, o.ref.resource.plural) in FIRST]


def delete_first(freer: Freer, objects: list[ObjectState]) -> None:
    """On the engine's thread, before the first pass: a few objects, one after the other."""
    for obj in objects:
        freer.contain(obj.ref, "delete", partial(free, freer, obj))


def free(freer: Freer, obj: ObjectState) -> bool:
    """A single object from a manifest, or named by TYPE NAME. With --only-terminating
    one not being deleted is left alone, as a CRD's instance is: neither deleted nor freed."""
    options = freer.options
    if options.delete and not obj.deleted and not options.only_terminating:
        return _delete(freer, obj)
    meta = freer.cluster.get_meta(obj.ref)
    if meta is None:
        return True if obj.deleted else freer.missing(obj.ref)
    if obj.uid and meta.uid != obj.uid:
        return True  # re-created: the wait reports it
    if options.only_terminating and not meta.terminating:
        return True
    if options.delete and not obj.deleted:
        return _delete(freer, obj)
    return freer.free_known(meta)


def _delete(freer: Freer, obj: ObjectState) -> bool:
    """Delete first; the DELETE's answer says whether finalizers hold the object, so
    freeing it needs no read."""
    dry_run = freer.options.dry_run
    if dry_run is DryRun.CLIENT:
        meta = freer.cluster.get_meta(obj.ref)
        if meta is None:
            return freer.missing(obj.ref)
        obj.deleted = True
        freer.book.add(obj.ref, Action.DELETED)
        return freer.free_known(meta)
    deleted = freer.cluster.delete(obj.ref, dry_run)
    if deleted is None:
        return freer.missing(obj.ref)
    obj.deleted, obj.uid = True, deleted.uid
    freer.book.add(obj.ref, Action.DELETED)
    return True if deleted.remaining is None else freer.free_known(deleted.remaining)
