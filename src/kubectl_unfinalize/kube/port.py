"""What the engine asks of a cluster: the verbs, not URLs (Cluster), and apart from them
how a run's requests travel (Plumbing: deadlines, connections, the bulk sender, 429s).
HttpCluster (cluster.py) serves both over HTTP; the unit tests' FakeCluster serves them
from memory, and mypy holds both to this port. The remove-every-finalizer write is a job
of the port's own (RemoveAll): HttpCluster's bulk sender makes it the HTTP layer's patch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from ..deadline import Deadline
from ..model import ObjectMeta, ObjectRef, Resource
from ..net.bulk_patch import Sink as Sink  # what the bulk sender tells the workers about the jobs put to it
from ..net.connections import FAR as FAR  # a round trip this long or longer: the cluster is far
from ..options import DryRun
from .paging import Listed, ListQuery


@dataclass(frozen=True, slots=True)
class RemoveAll:
    """The write that removes every finalizer of `meta` (no precondition, idempotent): a job
    the workers hand to the bulk sender when the cluster offers one. Called, it is the
    whole job on a worker (`fallback(False)`); the bulk sender calls `done` with the
    resourceVersion the patch left after a 2xx ("" when the answer did not say), and hands
    anything else back to the workers, as `fallback(True)` when the patch went out and no
    answer came (it may have been applied)."""

    meta: ObjectMeta
    done: Callable[[str], object]
    fallback: Callable[[bool], object]

    def __call__(self) -> object:
        return self.fallback(False)


@dataclass(frozen=True, slots=True)
class DeleteFirst(RemoveAll):
    """--delete: the DELETE of `meta` (not yet being deleted), then the RemoveAll of what
    it left, both from the bulk sender and in one place among the requests in flight.
    `deleted` is told the DELETE's 2xx answer and returns that RemoveAll, or a job for a
    worker in the same place (what is left needs another write), or None (nothing is left
    to free). Called, or after any other end of the DELETE, it is the whole job on a
    worker (`fallback(False)`): the DELETE and the patch, with every rule. `done` goes
    unused: the RemoveAll has its own."""

    deleted: Callable[[Deleted], Callable[[], object] | None]


class BulkSender(Protocol):
    """Where the RemoveAll jobs of a bulk run go: each one's end is told to the Sink the
    sender was made with."""

    def put(self, job: RemoveAll) -> None: ...

    def nudge(self) -> None:
        """A place freed elsewhere: a job put here and waiting for one may take it."""
        ...

    def release(self, timeout: float = 1.0) -> None:
        """Give idle connections back for the reads that come next."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Deleted:
    """A DELETE's answer: the uid to wait on, and the object if it is still there
    (it has finalizers) so the caller can free it without reading it again; its
    resourceVersion then ("" if none), to tell when a controller has acted on it since."""

    uid: str
    remaining: ObjectMeta | None
    version: str = ""
    body: dict[str, Any] | None = None  # the whole object as the DELETE answered it (delete(whole=True))


class Cluster(Protocol):
    def list_meta(self, resource: Resource, query: ListQuery) -> Iterator[list[ObjectMeta]]: ...

    def list_objects(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]: ...

    def discover(self, api_version: str) -> list[dict[str, Any]] | None: ...

    def listed_at(self, resource: Resource, namespace: str | None) -> Listed | None:
        """What this run's lists of `resource` (in `namespace`, None: all) saw, if any."""
        ...

    def written_since(self, resource: Resource, query: ListQuery, since: str, seconds: int) -> Counter[str] | None:
        """Writes per object name since `since`, by a watch that lasts `seconds` (changes.py)."""
        ...

    def versions(
        self, resource: Resource, query: ListQuery, seconds: int, on_row: Callable[[str, str], None]
    ) -> bool | None:
        """Each object's name and resourceVersion now, told to `on_row` (changes.versions);
        None when the server cannot say (then the objects are read instead)."""
        ...

    def all_deleted(self, resource: Resource, uids: Mapping[str, str], since: str, seconds: int) -> bool | None:
        """Whether each object of `uids` (name -> uid) is deleted within `seconds`, watched
        from `since` (changes.all_deleted); None when a watch cannot tell."""
        ...

    def api_discovery(self) -> list[dict[str, Any]]: ...

    def access_rules(self, namespace: str) -> dict[str, Any] | None: ...

    def get_meta(self, ref: ObjectRef) -> ObjectMeta | None: ...

    def get(self, ref: ObjectRef) -> dict[str, Any] | None: ...

    def delete(self, ref: ObjectRef, dry_run: DryRun, whole: bool = False) -> Deleted | None:
        """whole=True: the answer's whole object in Deleted.body (a CRD's manifest for the
        record, with no read before the delete)."""
        ...

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> str:
        """The resourceVersion the patch left the object at ("" when the server did not say)."""
        ...

    def unsafe_delete(self, ref: ObjectRef) -> bool:
        """The server's delete of an object it cannot read from storage (KEP-3926): no
        finalizers, no admission. False when it was gone already. Only for an object the
        server named as unreadable: a server without the feature gate ignores the option
        and deletes a readable object as any delete would."""
        ...

    def force_delete(self, ref: ObjectRef, uid: str, dry_run: DryRun) -> bool:
        """kubectl's force delete (gracePeriodSeconds=0), of that object only (its uid as a
        precondition): for a pod whose node is lost. False when it was gone already."""
        ...

    def merge_patch(self, ref: ObjectRef, body: dict[str, Any], dry_run: DryRun) -> None: ...

    def create(self, resource: Resource, namespace: str | None, body: dict[str, Any], dry_run: DryRun) -> str:
        """The new object's uid; a 409 AlreadyExists is a Conflict (one of that name exists)."""
        ...

    def allowed(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool: ...

    def ask_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> None:
        """Start asking what allowed() will be asked, so that it finds the answer waiting."""
        ...

    def asked_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool: ...

    def whoami(self) -> str: ...


class Plumbing(Protocol):
    """How one run's requests travel: what the Engine tunes, never what it asks."""

    def bounded(self, deadline: Deadline) -> Cluster:
        """The same cluster under another deadline (a short grace for diagnosis)."""
        ...

    def hand_over(self) -> None:
        """The connection this thread used goes to the next thread that sends (the run's
        first list): no handshake, a round trip on a far cluster."""
        ...

    def far(self) -> bool:
        """Whether the quickest exchange so far took FAR seconds or more."""
        ...

    def bulk(self, sink: Sink, cap: int, warm: int = 0) -> BulkSender | None:
        """Where the remove-every-finalizer patches of a bulk run can go, or None. On a
        far server `warm` of its connections are opened at once."""
        ...

    def pace(self, refused: Callable[[float], None], parked: Callable[[], AbstractContextManager[object]]) -> None:
        """From now on each 429 is told to `refused` with its request's send time
        (time.monotonic()), and its Retry-After is waited inside `parked()`."""
        ...


class PlumbedCluster(Cluster, Plumbing, Protocol):
    """The verbs with their plumbing: what an Engine runs on."""
