"""The manifest-object sweep: single objects named by -f documents, deleted first with
--delete (the DELETE's answer says whether finalizers hold the object, so freeing it
needs no read), then freed."""

from __future__ import annotations

from dataclasses import dataclass

from .freeing import Freer
from .model import Action, ObjectRef
from .options import DryRun


@dataclass
class ObjectState:
    ref: ObjectRef
    uid: str = ""
    deleted: bool = False


def free(freer: Freer, obj: ObjectState) -> bool:
    """A single object from a manifest."""
    if freer.options.delete and not obj.deleted:
        return _delete(freer, obj)
    meta = freer.cluster.get_meta(obj.ref)
    if meta is None:
        return True if obj.deleted else freer.missing(obj.ref)
    if obj.uid and meta.uid != obj.uid:
        return True  # re-created: the wait reports it
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
