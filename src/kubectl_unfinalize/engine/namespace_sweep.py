"""The namespace sweep: a namespace's own metadata.finalizers, then every namespaced type
discovery lists, listed in it at once and freed where finalizers hold objects. With
--delete the namespace is deleted first (the namespace controller then deletes
everything inside, so no controller can put finalizers back). Its spec.finalizers belong
to the namespace controller and are never touched."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from ..errors import RUN_ENDED, CorruptObjects, UnfinalizeError
from ..kube.paging import ListQuery
from ..model import Action, ObjectMeta, ObjectRef, Resource, namespace_ref
from . import diagnose, namespace_reads
from .context import RunContext
from .freeing import Freer
from .lost_pods import LostPods
from .preflight import NamespaceAccess
from .sightings import Sightings
from .unreadable import Unreadable

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

HELD_SHOWN = 20  # objects kept by built-in controllers named per namespace at the end
NAMESPACE_RELIST = 1.0  # while waiting, a namespace's contents are listed again at most this often


@dataclass
class NamespaceState:
    name: str
    uid: str | None = None  # set once this run deleted it (or found it already being deleted)
    terminating: bool = False
    contents: int | None = None  # objects the last listing found inside
    listed_at: float = float("-inf")
    access: NamespaceAccess | None = None
    held: list[ObjectMeta] = field(default_factory=list)  # terminating, kept only by built-in controllers' finalizers
    unreadable: bool = False  # a list inside failed on objects the server cannot read, and they stay


class NamespaceSweep:
    """Shared by every namespace of a run: one discovery per pass, the group versions
    found unavailable, the types where live objects were freed (for the final check)."""

    def __init__(
        self, run: RunContext, freer: Freer, sightings: Sightings, unreadable: Unreadable, lost: LostPods
    ) -> None:
        self.run = run
        self.freer = freer
        self.sightings = sightings
        self.unreadable = unreadable
        self.lost = lost
        self._pool = _Pool(run.options.concurrency)
        self.discovery: namespace_reads.NamespacedTypes | None = None
        self.unavailable: list[str] = []
        self.missing: list[str] = []  # named namespaces that are not there, nothing left inside
        self.live_lists: set[tuple[Resource, str]] = set()
        self._user: str | None = None

    def begin_pass(self) -> None:
        self.discovery = None

    def close(self, wait: bool) -> None:
        self._pool.shutdown(wait)

    def jobs(self, state: NamespaceState) -> Iterator[Callable[[], object]]:
        """The namespace's own metadata.finalizers, then (at most every NAMESPACE_RELIST
        seconds) whatever inside has finalizers."""
        ref = namespace_ref(state.name)
        try:
            meta = self.run.cluster.get_meta(ref)
        except RUN_ENDED:
            return  # the diagnosis says what is left
        except UnfinalizeError as exc:
            self.run.book.add(ref, Action.FAILED, message=diagnose.explain(exc, "get", ref.resource), aspect="get")
            return
        if meta is None:
            if state.uid is None and state.contents is None:
                yield from self._gone_jobs(state)
            return
        if state.uid and meta.uid != state.uid:
            return  # re-created: the wait reports it
        state.terminating = meta.terminating
        self.sightings.saw(meta)
        if self.freer.wanted(meta):
            yield partial(self.freer.contain, ref, "free", partial(self.freer.free, meta))
        now = time.monotonic()
        if now < state.listed_at + NAMESPACE_RELIST:
            return
        state.listed_at = now
        yield from self._content_jobs(state)

    def _gone_jobs(self, state: NamespaceState) -> Iterator[Callable[[], object]]:
        """A namespace that is not there: not found, unless objects were left inside when it
        was removed through /finalize. Those are freed (engine/revival.py creates it again
        as their first write is refused); with --delete it is created again even when none
        holds a finalizer, so that its controller deletes them."""
        yield from self._content_jobs(state)
        if not state.contents:
            self.missing.append(state.name)  # skipped, as a named object that is not there
        elif self.run.options.delete:
            self.freer.revive(state.name)

    def _content_jobs(self, state: NamespaceState) -> Iterator[Callable[[], object]]:
        """List every namespaced type in the namespace at once, on the pool; free what has
        finalizers as the lists come back. Types the user may not list or patch (one
        SelfSubjectRulesReview says) are reported, not requested."""
        ref = namespace_ref(state.name)
        discovery = self._discover(ref)
        if discovery is None:
            return
        if state.access is None:
            state.access = NamespaceAccess.review(self.run.cluster, state.name)
        listable = [r for r in discovery.resources if state.access.allows("list", r)]
        denied = [r.qualified for r in discovery.resources if r not in listable]
        if denied:
            types = f"{len(denied)} types" if len(denied) > 1 else "1 type"
            message = (
                f"forbidden: {self._who()}cannot list {types} in namespace {state.name} (RBAC): "
                f"{', '.join(sorted(denied))}; their objects were not checked"
            )
            self.run.book.add(ref, Action.FAILED, message=message, aspect="list")
        from concurrent.futures import as_completed

        futures = [self._pool.get().submit(self._list_in, state.name, resource) for resource in listable]
        contents = 0
        queued: set[str] = set()
        held: list[ObjectMeta] = []
        state.unreadable = False
        for future in as_completed(futures):
            count, wanted, kept, unreadable = future.result()
            state.unreadable |= unreadable
            contents += count
            held += kept[: HELD_SHOWN - len(held)]
            for meta in wanted:
                if meta.uid in queued:  # the same object under another group (events)
                    continue
                queued.add(meta.uid)
                resource = meta.ref.resource
                if self.run.options.dry_run.sends_writes and not state.access.allows("patch", resource):
                    message = f"forbidden: {self._who()}cannot patch {resource.qualified} in namespace {state.name}"
                    self.run.book.of(meta, Action.FAILED, self.run.options.removable(list(meta.finalizers)), message)
                    continue
                if not meta.terminating:
                    self.live_lists.add((resource, state.name))
                yield partial(self.freer.contain, meta.ref, "free", partial(self.freer.free, meta))
        state.contents, state.held = contents, held
        if contents and self.lost.wanted:  # its pods a lost node holds, once past their grace period
            yield partial(self.freer.contain, ref, "force-delete", partial(self.lost.free_in, state.name))

    def _discover(self, ref: ObjectRef) -> namespace_reads.NamespacedTypes | None:
        if self.discovery is None:
            try:
                self.discovery = namespace_reads.discover(self.run.cluster)
            except RUN_ENDED:
                return None
            except UnfinalizeError as exc:
                self.run.book.add(ref, Action.FAILED, message=f"cannot discover the API's resource types: {exc}")
                return None
            self.unavailable += [gv for gv in self.discovery.unavailable if gv not in self.unavailable]
        return self.discovery

    def _list_in(self, namespace: str, resource: Resource) -> tuple[int, list[ObjectMeta], list[ObjectMeta], bool]:
        """On a worker: how many objects of `resource` are in the namespace, those with
        finalizers this run removes, the terminating ones only a built-in controller's
        finalizers keep (named if they are still there at the end), and whether objects the
        server cannot read stay (each named; its list is sent again once they were deleted)."""
        for _ in range(2):
            try:
                return (*self._listed_in(namespace, resource), False)
            except CorruptObjects as exc:
                if not self.unreadable.meet(exc, resource):
                    break
        return 0, [], [], True

    def _listed_in(self, namespace: str, resource: Resource) -> tuple[int, list[ObjectMeta], list[ObjectMeta]]:
        options = self.run.options
        query = ListQuery(namespace, options.label_selector, options.field_selector, options.chunk_size)
        count = 0
        wanted: list[ObjectMeta] = []
        held: list[ObjectMeta] = []
        try:
            for page in self.run.cluster.list_meta(resource, query):
                count += len(page)
                for meta in page:
                    self.sightings.saw(meta)
                    if self.freer.wanted(meta):
                        wanted.append(meta)
                    elif meta.terminating and meta.finalizers and len(held) < HELD_SHOWN:
                        held.append(meta)
        except RUN_ENDED:
            pass
        except CorruptObjects:
            raise
        except UnfinalizeError as exc:
            message = diagnose.list_failure(exc, resource)
            self.run.book.add(
                namespace_ref(namespace), Action.FAILED, message=message, aspect=f"list {resource.qualified}"
            )
        return count, wanted, held

    def _who(self) -> str:
        if self._user is None:
            self._user = self.run.cluster.whoami()
        return f"user {self._user!r} " if self._user else ""

    def delete(self, states: list[NamespaceState]) -> None:
        def one(state: NamespaceState) -> bool:
            return self.freer.contain(namespace_ref(state.name), "delete", partial(self._delete_namespace, state))

        list(self._pool.get().map(one, states))

    def _delete_namespace(self, state: NamespaceState) -> bool:
        """Deleted first: the namespace controller then sets a deletionTimestamp on
        everything inside. One already being deleted is not deleted again."""
        ref = namespace_ref(state.name)
        dry_run = self.run.options.dry_run
        found = self.run.cluster.get_meta(ref)
        if found is None:
            return True  # the pass reports it as not found
        state.uid = found.uid
        if found.terminating:
            return True
        if dry_run.sends_writes:
            deleted = self.run.writes.delete(ref, dry_run)
            if deleted is None:
                return True
            state.uid = deleted.uid or found.uid
        self.run.book.add(ref, Action.DELETED)
        return True


class _Pool:
    """The threads of the sweep's lists, made on first use: most runs free no namespace,
    and concurrent.futures (which imports logging) is a few ms of a small teardown's start."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._pool: ThreadPoolExecutor | None = None

    def get(self) -> ThreadPoolExecutor:
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=self._size, thread_name_prefix="unfinalize-pool")
        return self._pool

    def shutdown(self, wait: bool) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
