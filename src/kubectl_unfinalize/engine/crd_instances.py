"""The CRD sweep: list each CRD's instances and free them; with --delete, delete each
instance first (its deletionTimestamp makes the API server refuse new finalizers, so a
controller that is still running cannot win), and the CRD itself once every instance is
gone or going, so the cleanup controller finds nothing left and never waits on its 5 s
poll. A CRD whose instances could not be freed is not deleted: it is never left
Terminating over objects the run could not free."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial

from ..errors import RUN_ENDED, CorruptObjects, Forbidden, Invalid, UnfinalizeError
from ..kube.paging import ListQuery
from ..model import CRD, Action, ObjectMeta, crd_ref
from ..options import DryRun
from . import conversion, diagnose
from .context import RunContext
from .freeing import Freer
from .read_ahead import ReadAhead
from .sightings import Sightings
from .unreadable import Unreadable
from .workers import Job

Place = Callable[[], AbstractContextManager[object]]
UNREADABLE_LISTS = 3  # lists of a CRD's instances after its unreadable ones were deleted, at most


@dataclass(eq=False)
class CrdState:
    crd: CRD
    uid: str | None = None  # set once this run deleted it
    refused: bool = False  # its DELETE or list refused lastingly (RBAC, admission, conversion): waiting cannot help
    blocked: int = 0  # instances the last whole pass could not free
    counting: int = 0  # the same, for the pass under way
    listed: bool = True  # False when the last pass could not list its instances
    kept: bool = False  # an instance keeps a finalizer this run leaves (--finalizer, a built-in's)
    reconfigured: bool = False  # its dead conversion webhook was switched off by this run
    # Once deleted (crds): when, its resourceVersion then, when the cleanup controller
    # was first seen at work on it (it changed), and when its instances are listed again.
    deleted_at: float = 0.0
    version: str = ""
    began: float | None = None
    final_list: bool = False  # listed since the controller began: creates are refused from then on
    relist_at: float = 0.0
    relist_every: float = 0.0
    # This pass: instance jobs not finished, whether its list has ended, and what to call
    # (once) when both are true: the CRD is then deleted at once, not after the whole pass.
    open: int = 0
    list_ended: bool = False
    on_settled: Callable[[CrdState], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def ready(self) -> bool:
        """Not deleted yet, listed whole, and none of its instances failed this pass."""
        return self.uid is None and self.listed and not self.counting and not self.refused

    def begin(self, on_settled: Callable[[CrdState], None] | None) -> None:
        self.counting, self.open, self.list_ended, self.on_settled = 0, 0, False, on_settled

    def started(self) -> None:
        with self.lock:
            self.open += 1

    def finished(self, failed: bool = False) -> None:
        """An instance job ended (on a worker, or on the bulk sender's thread)."""
        with self.lock:
            self.counting += failed
            self.open -= 1
            settled = self.list_ended and not self.open
        if settled:
            self._settled()

    def ended(self) -> None:
        """Its list ended (every instance job is queued by now)."""
        with self.lock:
            self.list_ended = True
            settled = not self.open
        if settled:
            self._settled()

    def _settled(self) -> None:
        on_settled, self.on_settled = self.on_settled, None  # at most once per pass
        if on_settled is not None:
            on_settled(self)


class CrdInstances:
    """One CRD's instances, each pass: listed page by page, one job each to free (and,
    with --delete, to delete first); then the CRD itself. Construct once per run."""

    def __init__(self, run: RunContext, freer: Freer, sightings: Sightings, unreadable: Unreadable) -> None:
        self.run = run
        self.freer = freer
        self.sightings = sightings
        self.unreadable = unreadable

    def jobs(self, state: CrdState, place: Place = contextlib.nullcontext) -> Generator[Job, None, None]:
        """Runs on a listing thread (crds), page by page: one job per instance to free.
        A list the CRD's conversion webhook fails is listed again only after the remedy
        (--delete), a few times with backoff while the API server catches up; otherwise it
        is the CRD's one lasting failure, never re-listed until the deadline. Each page is
        read holding a `place` (one of the requests in flight the pacing allows)."""
        state.listed = True
        lists = 0
        while True:
            lists += 1
            failure = yield from self._list(state, place)
            if failure is None:
                return
            state.listed = False
            if isinstance(failure, CorruptObjects):
                if self._unreadable(state, failure, lists):
                    state.listed = True
                    continue
                return
            if not conversion.is_failure(failure):
                message = diagnose.list_failure(failure, state.crd.resource)
                self.run.book.add(crd_ref(state.crd.name), Action.FAILED, message=message, aspect="list")
                return
            wait = self._conversion_failed(state, failure, lists)
            if wait is None or self.run.deadline.remaining() <= wait:
                return
            time.sleep(wait)  # on its listing thread: the other lists and the jobs go on meanwhile
            state.listed = True

    def _list(self, state: CrdState, place: Place) -> Generator[Job, None, UnfinalizeError | None]:
        """One list of the CRD's instances, a job for each to free; the error that ended it.
        A list started again after a failure may yield an object twice: freeing it twice
        ends in the same state (the second DELETE or patch finds it gone or free)."""
        options = self.run.options
        query = ListQuery(options.namespace, options.label_selector, options.field_selector, options.chunk_size)
        pages = ReadAhead(_held(self.run.cluster.list_meta(state.crd.resource, query), place))
        try:
            self.freer.cleared()  # no outcome, and no write, before the RBAC preflight passed
        except BaseException:
            pages.close()
            raise
        try:
            for page in pages:
                for meta in page:
                    self.sightings.saw(meta)
                    if self.freer.wanted(meta):
                        if len(self.run.options.removable(list(meta.finalizers))) < len(meta.finalizers):
                            state.kept = True  # what blocks it then is that finalizer, not the cleanup
                        state.started()
                        # A bulk patch answered 2xx is freed and never handed to _free_instance.
                        yield self.freer.fast(meta, partial(self._instance_job, state), state.finished)
        except RUN_ENDED:
            state.listed = False  # the diagnosis at the deadline says what is left
        except UnfinalizeError as exc:
            return exc
        finally:
            pages.close()
        return None

    def _unreadable(self, state: CrdState, failure: CorruptObjects, lists: int) -> bool:
        """The list failed on instances the server cannot read: True when they were deleted
        (--unsafe-delete-corrupt) and the list may go on; otherwise the CRD's one lasting
        failure (nothing else of it is listed, and it is not deleted)."""
        if self.unreadable.meet(failure, state.crd.resource) and lists <= UNREADABLE_LISTS:
            return True
        state.refused = True
        deleted = "deleted" if state.uid else "not deleted"
        message = (
            f"cannot list {state.crd.resource.qualified}: the API server cannot read some of its objects from"
            f" storage (each named), so its other objects were not listed or freed and the CRD was {deleted}"
        )
        if not self.run.options.unsafe_delete_corrupt:
            message += "; run again with --unsafe-delete-corrupt to delete them without their finalizers"
        self.run.book.add(crd_ref(state.crd.name), Action.FAILED, message=message, aspect="list")
        return False

    def _conversion_failed(self, state: CrdState, failure: UnfinalizeError, lists: int) -> float | None:
        """The list failed on the CRD's conversion webhook: the seconds to wait before listing
        again, or None when this pass lists it no more. With --delete the webhook is switched
        off once (conversion.disable) and recorded; a dry run only says so. Without --delete,
        after the remedy was refused, or when the failure outlasts it, the CRD gets one
        failure naming the webhook and is dropped from the run (refused: waiting cannot help)."""
        options, book, ref = self.run.options, self.run.book, crd_ref(state.crd.name)
        listing = f"cannot list {state.crd.resource.qualified}: {failure}"
        try:
            hook = conversion.read(self.run.cluster, state.crd, failure)
        except UnfinalizeError:
            hook = None  # the failure itself is named; the rest is a best effort
        why = ""
        if options.delete and hook is not None and not state.reconfigured:
            try:
                conversion.disable(self.run.writes, state.crd, options.dry_run)
            except UnfinalizeError as exc:
                why = f"cannot set spec.conversion.strategy to None: {diagnose.explain(exc, 'patch', ref.resource)}"
            else:
                state.reconfigured = True
                book.add(
                    ref, Action.RECONFIGURED, message=conversion.remedy_line(hook, options.dry_run), aspect="conversion"
                )
                if options.dry_run is not DryRun.NONE:
                    state.listed = True  # nothing changed: the preview goes on to the CRD's deletion
                    return None
                return conversion.FIRST_BACKOFF
        elif (state.reconfigured or (options.delete and hook is None)) and options.dry_run is DryRun.NONE:
            if lists <= conversion.LISTS_AFTER_REMEDY:
                return float(conversion.FIRST_BACKOFF * 2.0 ** (lists - 2))
            after = " after spec.conversion.strategy was set to None" if state.reconfigured else ""
            why = f"still failing {lists} lists{after}"
        state.refused = True
        book.add(ref, Action.FAILED, message=conversion.lasting_line(listing, state.crd, hook, why), aspect="list")
        return None

    def _instance_job(self, state: CrdState, meta: ObjectMeta) -> Callable[..., None]:
        return partial(self._free_instance, state, meta)

    def _free_instance(self, state: CrdState, meta: ObjectMeta, sent: bool = False) -> None:
        failed = True
        try:
            failed = not self.freer.contain(meta.ref, "free", partial(self._delete_then_free, meta, sent))
        finally:
            state.finished(failed)

    def _delete_then_free(self, meta: ObjectMeta, sent: bool) -> bool:
        """Instances are deleted silently (the CRD's own line says it): the DELETE is there
        to set the deletionTimestamp before the finalizers go. `sent`: the bulk sender sent
        the finalizer patch already, and no answer came."""
        options = self.run.options
        if options.delete and not meta.terminating and options.dry_run.sends_writes:
            deleted = self.run.writes.delete(meta.ref, options.dry_run)
            if deleted is None or deleted.remaining is None:
                return True  # gone already, or gone at once
            meta = deleted.remaining
        return self.freer.free(meta, sent)

    def delete(self, state: CrdState) -> None:
        """On a worker: delete the CRD, its failure its outcome."""
        self.freer.contain(crd_ref(state.crd.name), "delete", partial(self._delete_crd, state))

    def _delete_crd(self, state: CrdState) -> bool:
        ref = crd_ref(state.crd.name)
        dry_run = self.run.options.dry_run
        if dry_run is DryRun.CLIENT:
            found = self.run.cluster.get_meta(ref)
            state.uid = found.uid if found else ""
            if found is not None:
                self.run.book.add(ref, Action.DELETED)
            return True
        try:
            deleted = self.run.writes.delete(ref, dry_run)
        except (Forbidden, Invalid):
            state.refused = True
            raise
        if deleted is None:
            state.uid = ""
            self.run.book.add(ref, Action.GONE, message="not found")
            return True
        state.uid, state.version = deleted.uid, deleted.version
        self.run.book.add(ref, Action.DELETED)
        return True


def _held(pages: Iterator[list[ObjectMeta]], place: Place) -> Iterator[list[ObjectMeta]]:
    """The pages, each read holding a place (not while its jobs are queued: a full
    queue would then keep the place the jobs that empty it need)."""
    while True:
        with place():
            page = next(pages, None)
        if page is None:
            return
        yield page
