"""The CRD sweep: list each CRD's instances and free them; with --delete, delete each
instance first (its deletionTimestamp makes the API server refuse new finalizers, so a
controller that is still running cannot win), and the CRD itself once every instance is
gone or going, so the cleanup controller finds nothing left and never waits on its 5 s
poll. A CRD whose instances could not be freed is not deleted: it is never left
Terminating over objects the run could not free."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from . import diagnose
from .cluster import ListQuery, crd_ref
from .errors import DeadlineExceeded, Forbidden, Invalid, UnfinalizeError
from .freeing import Freer
from .mapper import Mapper
from .model import CRD, Action, ObjectMeta
from .options import DryRun
from .workers import ReadAhead


@dataclass
class CrdState:
    crd: CRD
    uid: str | None = None  # set once this run deleted it
    refused: bool = False  # its DELETE was refused (RBAC, admission): waiting cannot help
    blocked: int = 0  # instances the last whole pass could not free
    counting: int = 0  # the same, for the pass under way
    listed: bool = True  # False when the last pass could not list its instances

    @property
    def ready(self) -> bool:
        """Not deleted yet, and nothing of it is known to block."""
        return self.uid is None and self.listed and not self.blocked and not self.refused


def jobs(freer: Freer, state: CrdState) -> Iterator[Callable[[], object]]:
    """Runs in the main thread, page by page: one job per instance to free."""
    options = freer.options
    query = ListQuery(options.namespace, options.label_selector, options.field_selector, options.chunk_size)
    state.listed = True
    pages = ReadAhead(freer.cluster.list_meta(state.crd.resource, query))
    try:
        freer.cleared()  # no outcome, and no write, before the RBAC preflight passed
    except BaseException:
        pages.close()
        raise
    try:
        for page in pages:
            for meta in page:
                freer.seen.add(meta.uid)
                if freer.wanted(meta):
                    yield freer.fast(meta, partial(_free_instance, freer, state, meta))
    except DeadlineExceeded:
        state.listed = False  # the diagnosis at the deadline says what is left
    except UnfinalizeError as exc:
        state.listed = False
        message = diagnose.list_failure(exc, state.crd.resource)
        freer.book.add(crd_ref(state.crd.name), Action.FAILED, message=message, aspect="list")
    finally:
        pages.close()


def _free_instance(freer: Freer, state: CrdState, meta: ObjectMeta, sent: bool = False) -> None:
    if not freer.contain(meta.ref, "free", partial(_delete_then_free, freer, meta, sent)):
        with freer.lock:
            state.counting += 1


def _delete_then_free(freer: Freer, meta: ObjectMeta, sent: bool) -> bool:
    """Instances are deleted silently (the CRD's own line says it): the DELETE is there
    to set the deletionTimestamp before the finalizers go. `sent`: the bulk sender sent
    the finalizer patch already, and no answer came."""
    options = freer.options
    if options.delete and not meta.terminating and options.dry_run.sends_writes:
        deleted = freer.cluster.delete(meta.ref, options.dry_run)
        if deleted is None or deleted.remaining is None:
            return True  # gone already, or gone at once
        meta = deleted.remaining
    return freer.free(meta, sent)


def delete(freer: Freer, pool: Mapper, states: list[CrdState]) -> None:
    def one(state: CrdState) -> bool:
        return freer.contain(crd_ref(state.crd.name), "delete", partial(_delete_crd, freer, state))

    list(pool.map(one, states))


def _delete_crd(freer: Freer, state: CrdState) -> bool:
    ref = crd_ref(state.crd.name)
    dry_run = freer.options.dry_run
    if dry_run is DryRun.CLIENT:
        found = freer.cluster.get_meta(ref)
        state.uid = found.uid if found else ""
        if found is not None:
            freer.book.add(ref, Action.DELETED)
        return True
    try:
        deleted = freer.cluster.delete(ref, dry_run)
    except (Forbidden, Invalid):
        state.refused = True
        raise
    if deleted is None:
        state.uid = ""
        freer.book.add(ref, Action.GONE, message="not found")
        return True
    state.uid = deleted.uid
    freer.book.add(ref, Action.DELETED)
    return True
