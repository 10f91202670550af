"""The doing: the loop, its order, and bounded concurrent writes. Returns a Report and
never prints.

Order with --delete: each selected custom resource is deleted (it gets a
deletionTimestamp, so the API server refuses new finalizers and a controller that is
still running cannot win) and then freed; a CRD is deleted once every instance is gone
or going, so the API server's cleanup controller finds nothing left and never waits on
its 5 s poll. The loop re-lists until the CRDs are gone or the deadline passes, catching
objects created or cascade-deleted meanwhile.

Namespaces: with --delete the namespace is deleted first (the namespace controller then
deletes everything inside, so no controller can put finalizers back), then every
namespaced type that discovery lists is listed in it and what has finalizers is freed,
again and again until the namespace is gone; without --delete, one pass. The namespace's
own metadata.finalizers are freed like any object's; its spec.finalizers never.

Containment: whatever fails on one object or CRD becomes its outcome and the rest goes
on; run() raises only for a permission missing before the first write.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from functools import partial

from . import diagnose, namespaces
from .access import NamespaceAccess, preflight
from .cluster import Cluster, ListQuery, crd_ref, namespace_ref
from .deadline import Deadline
from .errors import Conflict, Forbidden, Invalid, NotFound, UnfinalizeError
from .model import CRD, Action, ObjectKey, ObjectMeta, ObjectRef, Progress, Report, Resource, Targets
from .options import DryRun, Options
from .outcomes import OutcomeBook, OutcomeListener

CONFLICT_RETRIES = 10
DIAGNOSIS_GRACE = 5.0  # the deadline has passed; reading what blocks gets this much more
FIRST_POLL = 0.05
NAMESPACE_RELIST = 1.0  # while waiting, a namespace's contents are listed again at most this often

ProgressListener = Callable[[Progress], None]


@dataclass
class _CrdState:
    crd: CRD
    uid: str | None = None  # set once this run deleted it
    refused: bool = False  # its DELETE was refused (RBAC, admission): waiting cannot help
    blocked: int = 0  # instances the last whole pass could not free
    counting: int = 0  # the same, for the pass under way
    listed: bool = True  # False when the last pass could not list its instances


@dataclass
class _ObjectState:
    ref: ObjectRef
    uid: str = ""
    deleted: bool = False


@dataclass
class _NamespaceState:
    name: str
    uid: str | None = None  # set once this run deleted it (or found it already being deleted)
    terminating: bool = False
    contents: int | None = None  # objects the last listing found inside
    listed_at: float = float("-inf")
    access: NamespaceAccess | None = None


@dataclass
class _Pass:
    futures: set[Future[object]] = field(default_factory=set)
    total: int = 0
    done: int = 0


class Engine:
    """One run: construct, call run() once."""

    def __init__(
        self,
        cluster: Cluster,
        options: Options,
        deadline: Deadline,
        on_outcome: OutcomeListener | None = None,
        on_progress: ProgressListener | None = None,
        retain: bool = True,
    ) -> None:
        self.cluster = cluster
        self.options = options
        self.deadline = deadline
        self.book = OutcomeBook(options.dry_run, on_outcome, retain)
        self._on_progress = on_progress or (lambda _: None)
        self._seen: set[str] = set()
        self._live: set[str] = set()  # uids freed while not terminating: may come back
        self._progress = _Pass()
        self._lock = threading.Lock()
        self._discovery: namespaces.Discovery | None = None  # this pass's, for every namespace
        self._unavailable: list[str] = []  # group versions discovery could not list
        self._live_lists: set[tuple[Resource, str]] = set()  # namespaced types where live objects were freed
        self._user: str | None = None

    # ----------------------------------------------------------------- public
    def run(self, targets: Targets, skipped: Iterable[str] = ()) -> Report:
        started = time.monotonic()
        report = Report(dry_run=self.options.dry_run, skipped=list(skipped))
        crds = [_CrdState(c) for c in targets.crds]
        objects = [_ObjectState(r) for r in targets.objects]
        spaces = [_NamespaceState(n) for n in targets.namespaces]
        pool = ThreadPoolExecutor(max_workers=self.options.concurrency, thread_name_prefix="unfinalize")
        try:
            preflight(self.cluster, targets, self.options, pool)
            self._run(pool, crds, objects, report, spaces)
        except KeyboardInterrupt:
            report.interrupted = True
        finally:
            pool.shutdown(wait=not report.interrupted, cancel_futures=True)
        report.outcomes = self.book.outcomes()
        report.counts = self.book.counts
        report.scanned = len(self._seen)
        report.seconds = time.monotonic() - started
        report.skipped += [f"{gv} unavailable" for gv in self._unavailable]
        return report

    # ------------------------------------------------------------------- loop
    def _run(
        self,
        pool: ThreadPoolExecutor,
        crds: list[_CrdState],
        objects: list[_ObjectState],
        report: Report,
        spaces: list[_NamespaceState],
    ) -> None:
        options = self.options
        waiting = options.delete and options.wait and options.dry_run is DryRun.NONE
        if options.delete and spaces:
            self._delete_namespaces(pool, spaces)
        poll = FIRST_POLL
        while True:
            if not self._pass(pool, crds, objects, spaces):
                report.timed_out = True
                break
            if options.delete:
                ready = [c for c in crds if c.uid is None and c.listed and not c.blocked and not c.refused]
                self._delete_crds(pool, ready)
            if not waiting:
                break
            crds = [c for c in crds if not c.refused]
            crds = [c for c in crds if c.uid is None or (c.uid and self._exists(crd_ref(c.crd.name), c.uid))]
            objects = [o for o in objects if o.uid and self._exists(o.ref, o.uid)]
            spaces = [n for n in spaces if n.uid and self._exists(namespace_ref(n.name), n.uid)]
            if not crds and not objects and not spaces:
                return
            if self.deadline.expired():
                report.timed_out = True
                break
            time.sleep(min(poll, self.deadline.remaining()))
            poll = min(poll * 2, options.poll)
        if report.timed_out:
            self._diagnose(crds, objects, "timed out", spaces)
        elif not options.delete and options.dry_run is DryRun.NONE:
            try:
                diagnose.final_check(
                    self.cluster,
                    options,
                    self.book,
                    [c.crd for c in crds],
                    [o.ref for o in objects],
                    self._live,
                    sorted(self._live_lists, key=lambda item: (item[1], item[0].qualified)),
                )
            except UnfinalizeError as exc:
                report.error = f"cannot check whether finalizers came back: {exc}"
            terminating = [n for n in spaces if n.terminating]
            if terminating and self._unavailable:  # the namespace controller cannot finish on its own
                self._diagnose([], [], "not finished", terminating)

    def _pass(
        self,
        pool: ThreadPoolExecutor,
        crds: list[_CrdState],
        objects: list[_ObjectState],
        spaces: list[_NamespaceState],
    ) -> bool:
        """One sweep: list every CRD's instances and free them, the namespaces' contents,
        and the single objects; False when the deadline cut it short."""
        limit = self.options.concurrency * 4
        inflight: set[Future[object]] = set()
        for crd in crds:
            crd.counting = 0
        self._discovery = None
        for job in self._jobs(pool, crds, objects, spaces):
            if self.deadline.expired():
                self._drain(inflight)
                return False
            self._progress.total += 1
            inflight.add(pool.submit(job))
            if len(inflight) >= limit:
                done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                self._finished(done)
        self._drain(inflight)
        if self.deadline.expired():
            return False
        for crd in crds:
            crd.blocked = crd.counting
        return True

    def _drain(self, inflight: set[Future[object]]) -> None:
        while inflight:
            done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
            self._finished(done)

    def _finished(self, done: set[Future[object]]) -> None:
        for future in done:
            future.result()  # jobs contain their failures; this re-raises only a bug
        self._progress.done += len(done)
        self._on_progress(Progress("unfinalize", self._progress.done, self._progress.total))

    def _jobs(
        self,
        pool: ThreadPoolExecutor,
        crds: list[_CrdState],
        objects: list[_ObjectState],
        spaces: list[_NamespaceState],
    ) -> Iterator[Callable[[], object]]:
        for state in crds:
            yield from self._crd_jobs(state)
        for space in spaces:
            yield from self._namespace_jobs(pool, space)
        for obj in objects:
            yield partial(self._contain, obj.ref, "free", partial(self._free_object, obj))

    def _crd_jobs(self, state: _CrdState) -> Iterator[Callable[[], object]]:
        options = self.options
        query = ListQuery(options.namespace, options.label_selector, options.field_selector, options.chunk_size)
        state.listed = True
        try:
            for page in self.cluster.list_meta(state.crd.resource, query):
                for meta in page:
                    self._seen.add(meta.uid)
                    if self._wanted(meta):
                        yield partial(self._free_instance, state, meta)
        except UnfinalizeError as exc:
            state.listed = False
            message = diagnose.list_failure(exc, state.crd.resource)
            self.book.add(crd_ref(state.crd.name), Action.FAILED, message=message, aspect="list")

    def _wanted(self, meta: ObjectMeta) -> bool:
        if self.options.only_terminating and not meta.terminating:
            return False
        return bool(self.options.removable(list(meta.finalizers)))

    # ------------------------------------------------------------------ jobs
    def _free_instance(self, state: _CrdState, meta: ObjectMeta) -> None:
        if not self._contain(meta.ref, "free", partial(self._delete_then_free, meta)):
            with self._lock:
                state.counting += 1

    def _delete_then_free(self, meta: ObjectMeta) -> bool:
        """Instances are deleted silently (the CRD's own line says it): the DELETE is
        there to set the deletionTimestamp before the finalizers go."""
        options = self.options
        if options.delete and not meta.terminating and options.dry_run.sends_writes:
            deleted = self.cluster.delete(meta.ref, options.dry_run)
            if deleted is None or deleted.remaining is None:
                return True  # gone already, or gone at once
            meta = deleted.remaining
        return self._free(meta)

    def _free_object(self, obj: _ObjectState) -> bool:
        """A single object from a manifest."""
        if self.options.delete and not obj.deleted:
            return self._delete_object(obj)
        meta = self.cluster.get_meta(obj.ref)
        if meta is None:
            return True if obj.deleted else self._missing(obj.ref)
        if obj.uid and meta.uid != obj.uid:
            return True  # re-created: the wait reports it
        return self._free_known(meta)

    def _delete_object(self, obj: _ObjectState) -> bool:
        """Delete first; the DELETE's answer says whether finalizers hold the object, so
        freeing it needs no read."""
        dry_run = self.options.dry_run
        if dry_run is DryRun.CLIENT:
            meta = self.cluster.get_meta(obj.ref)
            if meta is None:
                return self._missing(obj.ref)
            obj.deleted = True
            self.book.add(obj.ref, Action.DELETED)
            return self._free_known(meta)
        deleted = self.cluster.delete(obj.ref, dry_run)
        if deleted is None:
            return self._missing(obj.ref)
        obj.deleted, obj.uid = True, deleted.uid
        self.book.add(obj.ref, Action.DELETED)
        return True if deleted.remaining is None else self._free_known(deleted.remaining)

    def _free_known(self, meta: ObjectMeta) -> bool:
        self._seen.add(meta.uid)
        return self._free(meta) if self.options.removable(list(meta.finalizers)) else True

    def _missing(self, ref: ObjectRef) -> bool:
        self.book.record(ObjectKey.of(ref), self.book.outcome(ref, Action.GONE, message="not found"), first_only=True)
        return True

    def _free(self, meta: ObjectMeta) -> bool:
        """Remove the finalizers this run removes; True when the object is free."""
        options = self.options
        removed = options.removable(list(meta.finalizers))
        for _ in range(CONFLICT_RETRIES):
            keep = tuple(f for f in meta.finalizers if f not in removed) if options.finalizers else None
            if options.dry_run is not DryRun.CLIENT:
                try:
                    self.cluster.patch_finalizers(meta, keep, options.dry_run)
                except NotFound as exc:
                    if exc.ambiguous:  # the connection dropped after the server applied our patch
                        return self._freed(meta, removed, "gone right after the patch")
                    self.book.of(meta, Action.GONE, [], "already gone")
                    return True
                except Conflict:
                    fresh = self.cluster.get_meta(meta.ref)
                    if fresh is None or fresh.uid != meta.uid:
                        self.book.of(meta, Action.GONE, [], "already gone")
                        return True
                    meta, removed = fresh, options.removable(list(fresh.finalizers))
                    if not removed:
                        return True
                    continue
            return self._freed(meta, removed)
        self.book.of(meta, Action.FAILED, removed, "kept conflicting with another writer")
        return False

    def _freed(self, meta: ObjectMeta, removed: list[str], message: str = "") -> bool:
        if not meta.terminating and not self.options.delete:
            self._live.add(meta.uid)
        self.book.of(meta, Action.UNFINALIZED, removed, message)
        return True

    def _contain(self, ref: ObjectRef, verb: str, job: Callable[[], bool]) -> bool:
        """Run one object's job on a worker; its failure becomes its outcome."""
        try:
            return job()
        except UnfinalizeError as exc:
            self.book.add(ref, Action.FAILED, message=diagnose.explain(exc, verb, ref.resource))
        except Exception as exc:  # noqa: BLE001 - contained: one object's bug must not lose the report
            self.book.add(ref, Action.FAILED, message=f"unexpected {type(exc).__name__}: {exc}")
        return False

    # ------------------------------------------------------------ namespaces
    def _namespace_jobs(self, pool: ThreadPoolExecutor, state: _NamespaceState) -> Iterator[Callable[[], object]]:
        """The namespace's own metadata.finalizers, then (at most every NAMESPACE_RELIST
        seconds) whatever inside has finalizers."""
        ref = namespace_ref(state.name)
        try:
            meta = self.cluster.get_meta(ref)
        except UnfinalizeError as exc:
            if not self.deadline.expired():  # cut short by the deadline: the diagnosis says what is left
                self.book.add(ref, Action.FAILED, message=diagnose.explain(exc, "get", ref.resource), aspect="get")
            return
        if meta is None:
            if state.uid is None:
                self._missing(ref)
            return
        if state.uid and meta.uid != state.uid:
            return  # re-created: the wait reports it
        state.terminating = meta.terminating
        self._seen.add(meta.uid)
        if self._wanted(meta):
            yield partial(self._contain, ref, "free", partial(self._free, meta))
        now = time.monotonic()
        if now < state.listed_at + NAMESPACE_RELIST:
            return
        state.listed_at = now
        yield from self._content_jobs(pool, state)

    def _content_jobs(self, pool: ThreadPoolExecutor, state: _NamespaceState) -> Iterator[Callable[[], object]]:
        """List every namespaced type in the namespace at once, on the pool; free what has
        finalizers as the lists come back. Types the user may not list or patch (one
        SelfSubjectRulesReview says) are reported, not requested."""
        ref = namespace_ref(state.name)
        discovery = self._discover(ref)
        if discovery is None:
            return
        if state.access is None:
            state.access = NamespaceAccess.review(self.cluster, state.name)
        listable = [r for r in discovery.resources if state.access.allows("list", r)]
        denied = [r.qualified for r in discovery.resources if r not in listable]
        if denied:
            types = f"{len(denied)} types" if len(denied) > 1 else "1 type"
            message = (
                f"forbidden: {self._who()}cannot list {types} in namespace {state.name} (RBAC): "
                f"{', '.join(sorted(denied))}; their objects were not checked"
            )
            self.book.add(ref, Action.FAILED, message=message, aspect="list")
        futures = [pool.submit(self._list_in, state.name, resource) for resource in listable]
        contents = 0
        queued: set[str] = set()
        for future in as_completed(futures):
            count, wanted = future.result()
            contents += count
            for meta in wanted:
                if meta.uid in queued:  # the same object under another group (events)
                    continue
                queued.add(meta.uid)
                resource = meta.ref.resource
                if self.options.dry_run.sends_writes and not state.access.allows("patch", resource):
                    message = f"forbidden: {self._who()}cannot patch {resource.qualified} in namespace {state.name}"
                    self.book.of(meta, Action.FAILED, self.options.removable(list(meta.finalizers)), message)
                    continue
                if not meta.terminating:
                    self._live_lists.add((resource, state.name))
                yield partial(self._contain, meta.ref, "free", partial(self._free, meta))
        state.contents = contents

    def _discover(self, ref: ObjectRef) -> namespaces.Discovery | None:
        if self._discovery is None:
            try:
                self._discovery = namespaces.discover(self.cluster)
            except UnfinalizeError as exc:
                if not self.deadline.expired():
                    self.book.add(ref, Action.FAILED, message=f"cannot discover the API's resource types: {exc}")
                return None
            self._unavailable += [gv for gv in self._discovery.unavailable if gv not in self._unavailable]
        return self._discovery

    def _list_in(self, namespace: str, resource: Resource) -> tuple[int, list[ObjectMeta]]:
        """On a worker: how many objects of `resource` are in the namespace, and those
        with finalizers this run removes."""
        options = self.options
        query = ListQuery(namespace, options.label_selector, options.field_selector, options.chunk_size)
        count = 0
        wanted: list[ObjectMeta] = []
        try:
            for page in self.cluster.list_meta(resource, query):
                count += len(page)
                for meta in page:
                    self._seen.add(meta.uid)
                    if self._wanted(meta):
                        wanted.append(meta)
        except UnfinalizeError as exc:
            if not self.deadline.expired():
                message = diagnose.list_failure(exc, resource)
                self.book.add(
                    namespace_ref(namespace), Action.FAILED, message=message, aspect=f"list {resource.qualified}"
                )
        return count, wanted

    def _who(self) -> str:
        if self._user is None:
            self._user = self.cluster.whoami()
        return f"user {self._user!r} " if self._user else ""

    def _delete_namespaces(self, pool: ThreadPoolExecutor, states: list[_NamespaceState]) -> None:
        def one(state: _NamespaceState) -> bool:
            return self._contain(namespace_ref(state.name), "delete", partial(self._delete_namespace, state))

        list(pool.map(one, states))

    def _delete_namespace(self, state: _NamespaceState) -> bool:
        """Deleted first: the namespace controller then sets a deletionTimestamp on
        everything inside. One already being deleted is not deleted again."""
        ref = namespace_ref(state.name)
        dry_run = self.options.dry_run
        found = self.cluster.get_meta(ref)
        if found is None:
            return True  # the pass reports it as not found
        state.uid = found.uid
        if found.terminating:
            return True
        if dry_run.sends_writes:
            deleted = self.cluster.delete(ref, dry_run)
            if deleted is None:
                return True
            state.uid = deleted.uid or found.uid
        self.book.add(ref, Action.DELETED)
        return True

    # --------------------------------------------------------------- CRDs
    def _delete_crds(self, pool: ThreadPoolExecutor, states: list[_CrdState]) -> None:
        list(pool.map(lambda s: self._contain(crd_ref(s.crd.name), "delete", lambda: self._delete_crd(s)), states))

    def _delete_crd(self, state: _CrdState) -> bool:
        ref = crd_ref(state.crd.name)
        dry_run = self.options.dry_run
        if dry_run is DryRun.CLIENT:
            found = self.cluster.get_meta(ref)
            state.uid = found.uid if found else ""
            if found is not None:
                self.book.add(ref, Action.DELETED)
            return True
        try:
            deleted = self.cluster.delete(ref, dry_run)
        except (Forbidden, Invalid):
            state.refused = True
            raise
        if deleted is None:
            state.uid = ""
            self.book.add(ref, Action.GONE, message="not found")
            return True
        state.uid = deleted.uid
        self.book.add(ref, Action.DELETED)
        return True

    def _exists(self, ref: ObjectRef, uid: str) -> bool:
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

    def _diagnose(
        self,
        crds: list[_CrdState],
        objects: list[_ObjectState],
        why: str,
        spaces: list[_NamespaceState],
    ) -> None:
        grace = self.cluster.bounded(Deadline(DIAGNOSIS_GRACE))
        if spaces:
            down = bool(self._unavailable) and namespaces.report_apiservices(
                grace, self.book, [n.name for n in spaces], why
            )
            for space in spaces:
                namespaces.blocking(grace, self.book, space.name, space.contents, down, why)
        undeleted = [c for c in crds if self.options.delete and c.uid is None]
        for state in undeleted:
            self.book.add(
                crd_ref(state.crd.name),
                Action.BLOCKING,
                message=f"{why}: not deleted, because {state.blocked} of its objects could not be freed"
                if state.blocked
                else f"{why}: not deleted",
                aspect="b",
            )
        diagnose.blocking(
            grace, self.options, self.book, [c.crd for c in crds if c not in undeleted], [o.ref for o in objects], why
        )
