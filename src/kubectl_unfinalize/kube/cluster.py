"""Typed API verbs over the transport: with paging.py (list pages) and changes.py (which
objects were written since), the only modules that build paths, queries and request
bodies, and that decide what a status means for a verb (404 on a delete is "already
gone", 410 on a list continues or restarts it)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from functools import partial
from typing import Any

from ..deadline import Deadline
from ..errors import Conflict, NotFound, UnfinalizeError
from ..model import ObjectMeta, ObjectRef, Resource
from ..net.bulk import Bulk
from ..net.bulk_patch import BulkPatch
from ..net.connections import FAR
from ..options import DryRun
from . import changes, discovery, reviews
from .corrupt import UNSAFE_DELETE_OPTION
from .paging import Listed, ListQuery, ListRecord, pages
from .port import BulkSender, Deleted, DeleteFirst, RemoveAll, Sink
from .reviews import Reviews
from .transport import JSON, MERGE_PATCH, Transport

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
REMOVE_ALL = b'{"metadata":{"finalizers":null}}'  # the bulk write, encoded once
DELETE_OPTIONS = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
DELETE_BACKGROUND = json.dumps(DELETE_OPTIONS).encode()  # a bulk DELETE's body
# A patch's answer, read for its status and version: a Table without the object, about a KiB,
# where the metadata may be hundreds (a 100 KiB last-applied-configuration, a big spec's
# managedFields). A server that cannot answer a Table answers JSON (Accept's second choice).
PATCH_ANSWER = changes.TABLE
NO_OBJECT = {"includeObject": "None"}
# Its head, as the API server writes a Table: the object's resourceVersion after the patch.
_TABLE_VERSION = re.compile(
    rb'\{"kind":"Table","apiVersion":"meta\.k8s\.io/v1","metadata":\{"resourceVersion":"([^"]+)"'
)


def answer_version(data: bytes) -> str:
    """The resourceVersion a patch left the object at, from its answer (PATCH_ANSWER); ""
    when the answer is not such a Table (a server that answered JSON)."""
    found = _TABLE_VERSION.match(data) if data else None
    return found.group(1).decode("ascii", "replace") if found else ""


class HttpCluster:
    """The verbs over HTTP, each request bounded by the run's deadline."""

    def __init__(
        self, transport: Transport, deadline: Deadline, listed: ListRecord | None = None, reviews: Reviews | None = None
    ) -> None:
        self.transport = transport
        self.deadline = deadline
        self.listed = listed or ListRecord()  # what each list saw: the final check's starting point
        self.reviews = reviews or Reviews()

    def bounded(self, deadline: Deadline) -> HttpCluster:
        """The same cluster under another deadline (a short grace for diagnosis)."""
        return HttpCluster(self.transport, deadline, self.listed, self.reviews)

    def hand_over(self) -> None:
        self.transport.connections.lend()

    def far(self) -> bool:
        round_trip = self.transport.connections.round_trip
        return round_trip is not None and round_trip >= FAR

    def bulk(self, sink: Sink, cap: int, warm: int = 0) -> BulkSender | None:
        """None with -v=6 and up: every request is then logged by the transport. Far means
        a round trip of FAR seconds or more: opening `warm` connections then is cheaper
        than a round trip's wait when the first patches come (near, they open in less)."""
        transport = self.transport
        if transport.logging:
            return None
        bulk = Bulk(
            transport.connections,
            transport.headers,
            partial(transport.timeout, self.deadline),
            transport.throttled,
            sink,
            cap,
        )
        if warm and self.far():
            bulk.warm(warm)
        return _Sender(bulk)

    def pace(self, refused: Callable[[float], None], parked: Callable[[], AbstractContextManager[object]]) -> None:
        self.transport.on_refused = refused
        self.transport.parked = parked

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Every verb here may be sent again after a dropped connection: reads and reviews
        change nothing, the finalizer patches and deletes end in the same state (a 404 or
        409 on the second try is read as such). A verb added later must decide for itself."""
        return self.transport.request(method, path, deadline=self.deadline, idempotent=True, **kwargs)

    def list_meta(self, resource: Resource, query: ListQuery) -> Iterator[list[ObjectMeta]]:
        """Pages of ObjectMeta; the decoded page is dropped before each is handed on, so
        what is held meanwhile is the small ObjectMeta, not the objects' annotations."""
        finalized = query.finalized_only
        for items in self._pages(resource, query, METADATA_LIST):
            metas = [
                ObjectMeta.from_dict(resource, obj)
                for obj in items
                if not finalized or (obj.get("metadata") or {}).get("finalizers")
            ]
            items.clear()
            del items
            yield metas

    def list_objects(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]:
        """Whole objects, page by page: for CRDs, whose spec names the resource."""
        return self._pages(resource, query, "application/json")

    def _pages(self, resource: Resource, query: ListQuery, accept: str) -> Iterator[list[dict[str, Any]]]:
        return pages(self._request, resource, query, accept, self.listed)

    def listed_at(self, resource: Resource, namespace: str | None) -> Listed | None:
        return self.listed.get(resource.path(namespace if resource.namespaced else None))

    def written_since(self, resource: Resource, query: ListQuery, since: str, seconds: int) -> Counter[str] | None:
        """None too when the run's deadline, or --request-timeout, ends before the watch would."""
        if min(self.deadline.remaining(), self.transport.request_timeout or float("inf")) < seconds + 1:
            return None
        return changes.written_since(self._request, resource, query, since, seconds)

    def versions(
        self, resource: Resource, query: ListQuery, seconds: int, on_row: Callable[[str, str], None]
    ) -> bool | None:
        """The watch is cut to end before the deadline and --request-timeout (it ends at
        the bookmark anyway); None when they leave it no second."""
        left = min(self.deadline.remaining(), self.transport.request_timeout or float("inf")) - 1
        if left < 1:
            return None
        return changes.versions(self._request, resource, query, int(min(seconds, left)), on_row)

    def all_deleted(self, resource: Resource, uids: Mapping[str, str], since: str, seconds: int) -> bool | None:
        """None too when the deadline, or --request-timeout, ends before the watch would;
        and for a failed request (the caller then polls, which reports what fails)."""
        if min(self.deadline.remaining(), self.transport.request_timeout or float("inf")) < seconds + 1:
            return None
        try:
            return changes.all_deleted(self._request, resource, uids, since, seconds)
        except UnfinalizeError:
            return None

    def discover(self, api_version: str) -> list[dict[str, Any]] | None:
        return discovery.group_version(self._request, api_version)

    def api_discovery(self) -> list[dict[str, Any]]:
        return discovery.read_groups(self._request)

    def access_rules(self, namespace: str) -> dict[str, Any] | None:
        """A SelfSubjectRulesReview's status (resourceRules, incomplete) for one namespace:
        one request instead of one review per verb and resource. None when it cannot be
        made; the real requests then report what is refused."""
        return reviews.review(self._request, "SelfSubjectRulesReview", {"namespace": namespace})

    def get_meta(self, ref: ObjectRef) -> ObjectMeta | None:
        obj = self.get(ref, accept=METADATA_OBJECT)
        return None if obj is None else ObjectMeta.from_dict(ref.resource, obj)

    def get(self, ref: ObjectRef, accept: str = "application/json") -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self._request("GET", ref.resource.path(ref.namespace, ref.name), accept=accept)
        except NotFound:
            return None
        return obj

    def delete(self, ref: ObjectRef, dry_run: DryRun, whole: bool = False) -> Deleted | None:
        """None when it was already gone."""
        body: dict[str, Any] = dict(DELETE_OPTIONS)
        query = None
        if dry_run is DryRun.SERVER:
            query = {"dryRun": "All"}
            body["dryRun"] = ["All"]  # with a body, the API server reads DeleteOptions from it only
        try:
            answer = self._request(
                "DELETE",
                ref.resource.path(ref.namespace, ref.name),
                query=query,
                body=body,
                accept="application/json" if whole else METADATA_OBJECT,
            )
        except NotFound as exc:
            if exc.ambiguous:  # the connection dropped after the server took the first DELETE
                return Deleted("", None)
            return None
        return deleted(ref.resource, answer or {}, whole)

    def unsafe_delete(self, ref: ObjectRef) -> bool:
        # The option alone: the server refuses it beside a propagation policy or a dry run.
        return self._delete_with(ref, {"apiVersion": "v1", "kind": "DeleteOptions", UNSAFE_DELETE_OPTION: True})

    def force_delete(self, ref: ObjectRef, uid: str, dry_run: DryRun) -> bool:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        if uid:
            body["preconditions"] = {"uid": uid}
        query = None
        if dry_run is DryRun.SERVER:
            query, body["dryRun"] = {"dryRun": "All"}, ["All"]
        try:
            return self._delete_with(ref, body, query)
        except Conflict:
            return False  # the uid differs: that pod is gone, and one of its name is not this run's to delete

    def _delete_with(self, ref: ObjectRef, body: dict[str, Any], query: dict[str, str] | None = None) -> bool:
        """A DELETE with these DeleteOptions; False when the object was not there."""
        try:
            self._request("DELETE", ref.resource.path(ref.namespace, ref.name), query=query, body=body)
        except NotFound as exc:
            return exc.ambiguous  # a 404 to a second try: the first one deleted it
        return True

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> str:
        """keep=None removes every finalizer with a merge patch, which is idempotent. Keeping
        some is a conditional write (resourceVersion precondition): the caller re-reads on
        Conflict so another writer's new finalizer is never dropped. Returns the
        resourceVersion the patch left ("" when the answer does not say)."""
        body: dict[str, Any] | bytes
        if keep is None:
            body = REMOVE_ALL
        else:
            body = {"metadata": {"resourceVersion": meta.resource_version, "finalizers": list(keep) or None}}
        query = {**NO_OBJECT, "dryRun": "All"} if dry_run is DryRun.SERVER else NO_OBJECT
        ref = meta.ref
        version = self._request(
            "PATCH",
            ref.resource.path(ref.namespace, ref.name),
            query=query,
            body=body,
            content_type=MERGE_PATCH,
            accept=PATCH_ANSWER,
            parse=answer_version,
        )
        return str(version or "")

    def merge_patch(self, ref: ObjectRef, body: dict[str, Any], dry_run: DryRun) -> None:
        """A merge patch of fixed values (a CRD's spec.conversion): sent again after a
        dropped connection, it ends in the same state. NotFound when the object is gone."""
        query = {**NO_OBJECT, "dryRun": "All"} if dry_run is DryRun.SERVER else NO_OBJECT
        path = ref.resource.path(ref.namespace, ref.name)
        self._request("PATCH", path, query=query, body=body, content_type=MERGE_PATCH, accept=PATCH_ANSWER)

    def create(self, resource: Resource, namespace: str | None, body: dict[str, Any], dry_run: DryRun) -> str:
        """undo's one create (a CRD or a backed-up object, again): the new object's uid. A
        409 AlreadyExists is a Conflict: someone made one of that name since."""
        query = {"dryRun": "All"} if dry_run is DryRun.SERVER else None
        answer = self._request("POST", resource.path(namespace), query=query, body=body)
        return str(((answer or {}).get("metadata") or {}).get("uid") or "")

    def allowed(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool:
        """SelfSubjectAccessReview; True when the review itself cannot be made, since the
        real requests will then report what is refused."""
        key = reviews.key(verb, resource, namespace, name)
        return self.reviews.answer(key, partial(reviews.allowed, self._request, key))

    def ask_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> None:
        """On a thread whose connection is lent to the run's next request once answered."""
        key = reviews.key(verb, resource, namespace, name)
        self.reviews.ahead(key, partial(reviews.allowed, self._request, key), self.transport.connections.lend)

    def asked_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool:
        return self.reviews.asked(reviews.key(verb, resource, namespace, name))

    def whoami(self) -> str:
        return reviews.whoami(self._request)


def remove_all(meta: ObjectMeta, done: Callable[[str], object], fallback: Callable[[bool], object]) -> BulkPatch:
    """The patch that removes every finalizer of `meta`, for Cluster.bulk(); `done` is told
    the resourceVersion the patch left ("" when the answer does not say)."""
    path = meta.ref.resource.path(meta.ref.namespace, meta.ref.name) + "?includeObject=None"
    return BulkPatch(
        path, REMOVE_ALL, lambda data: done(answer_version(data)), fallback, "PATCH", PATCH_ANSWER, MERGE_PATCH
    )


def deleted(resource: Resource, answer: dict[str, Any], whole: bool = False) -> Deleted:
    """What a DELETE's 2xx answer says is left."""
    if answer.get("kind") == "Status":  # deleted at once; some built-ins answer this way
        return Deleted(str((answer.get("details") or {}).get("uid") or ""), None)
    meta = ObjectMeta.from_dict(resource, answer)
    left = meta if meta.terminating and meta.finalizers else None
    return Deleted(meta.uid, left, meta.resource_version, answer if whole else None)


def delete_first(job: DeleteFirst) -> BulkPatch:
    """The DELETE of `job.meta`, for Cluster.bulk(): the RemoveAll `job.deleted` makes of
    its 2xx answer is sent next, in its place. Any other end, a lost answer too, is the
    whole job's on a worker (a DELETE sent again is answered as the first was)."""
    ref = job.meta.ref

    def done(answer: bytes) -> Callable[[], object] | None:
        left = job.deleted(deleted(ref.resource, json.loads(answer) if answer else {}))
        return remove_all(left.meta, left.done, left.fallback) if isinstance(left, RemoveAll) else left

    path = ref.resource.path(ref.namespace, ref.name)
    return BulkPatch(path, DELETE_BACKGROUND, done, lambda _sent: job.fallback(False), "DELETE", METADATA_OBJECT, JSON)


class _Sender:
    """The port's bulk sender over the HTTP layer's: each RemoveAll goes as its PATCH
    (a DeleteFirst as its DELETE, then that PATCH)."""

    __slots__ = ("_bulk",)

    def __init__(self, bulk: Bulk) -> None:
        self._bulk = bulk

    def put(self, job: RemoveAll) -> None:
        self._bulk.put(
            delete_first(job) if isinstance(job, DeleteFirst) else remove_all(job.meta, job.done, job.fallback)
        )

    def nudge(self) -> None:
        self._bulk.nudge()

    def release(self, timeout: float = 1.0) -> None:
        self._bulk.release(timeout)

    def close(self) -> None:
        self._bulk.close()
