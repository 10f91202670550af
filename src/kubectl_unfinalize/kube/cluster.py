"""Typed API verbs over the transport: with paging.py (list pages) and changes.py (which
objects were written since), the only modules that build paths, queries and request
bodies, and that decide what a status means for a verb (404 on a delete is "already
gone", 410 on a list continues or restarts it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from ..deadline import Deadline
from ..errors import ApiError, NotFound, UnfinalizeError
from ..model import CRD_RESOURCE, NAMESPACE_RESOURCE, ObjectMeta, ObjectRef, Resource
from ..net.bulk import Bulk, BulkPatch, Sink
from ..net.connections import FAR
from ..options import DryRun
from . import changes
from .paging import Listed, ListRecord, pages
from .paging import ListQuery as ListQuery  # where the engine imports it from
from .reviews import Key, Reviews
from .transport import MERGE_PATCH, Transport

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
REMOVE_ALL = b'{"metadata":{"finalizers":null}}'  # the bulk write, encoded once
AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


@dataclass(frozen=True)
class Deleted:
    """A DELETE's answer: the uid to wait on, and the object if it is still there
    (it has finalizers) so the caller can free it without reading it again; its
    resourceVersion then ("" if none), to tell when a controller has acted on it since."""

    uid: str
    remaining: ObjectMeta | None
    version: str = ""


class Cluster(Protocol):
    """What the engine asks of a cluster; unit tests fake these verbs, not URLs."""

    def list_meta(self, resource: Resource, query: ListQuery) -> Iterator[list[ObjectMeta]]: ...

    def list_objects(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]: ...

    def discover(self, api_version: str) -> list[dict[str, Any]] | None: ...

    def listed_at(self, resource: Resource, namespace: str | None) -> Listed | None:
        """What this run's lists of `resource` (in `namespace`, None: all) saw, if any."""
        ...

    def written_since(self, resource: Resource, query: ListQuery, since: str, seconds: int) -> Counter[str] | None:
        """Writes per object name since `since`, by a watch that lasts `seconds` (changes.py)."""
        ...

    def all_deleted(self, resource: Resource, names: set[str], since: str, seconds: int) -> bool | None:
        """Whether each of `names` is deleted within `seconds`, watched from `since`
        (changes.all_deleted); None when a watch cannot tell."""
        ...

    def api_discovery(self) -> list[dict[str, Any]]: ...

    def access_rules(self, namespace: str) -> dict[str, Any] | None: ...

    def get_meta(self, ref: ObjectRef) -> ObjectMeta | None: ...

    def get(self, ref: ObjectRef) -> dict[str, Any] | None: ...

    def delete(self, ref: ObjectRef, dry_run: DryRun) -> Deleted | None: ...

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> None: ...

    def merge_patch(self, ref: ObjectRef, body: dict[str, Any], dry_run: DryRun) -> None: ...

    def allowed(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool: ...

    def ask_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> None:
        """Start asking what allowed() will be asked, so that it finds the answer waiting."""
        ...

    def asked_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool: ...

    def whoami(self) -> str: ...

    def bounded(self, deadline: Deadline) -> Cluster: ...

    def far(self) -> bool:
        """Whether the quickest exchange so far took FAR seconds or more."""
        ...

    def bulk(self, sink: Sink, cap: int, warm: int = 0) -> Bulk | None:
        """Where the remove-every-finalizer patches of a bulk run can go, or None. On a
        far server `warm` of its connections are opened at once."""
        ...

    @property
    def pushbacks(self) -> int:
        """How many times the API server answered 429 so far."""
        ...

    def pace(self, refused: Callable[[float], None], parked: Callable[[], AbstractContextManager[object]]) -> None:
        """From now on each 429 is told to `refused` with its request's send time
        (time.monotonic()), and its Retry-After is waited inside `parked()`."""
        ...


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

    def far(self) -> bool:
        round_trip = self.transport.connections.round_trip
        return round_trip is not None and round_trip >= FAR

    def bulk(self, sink: Sink, cap: int, warm: int = 0) -> Bulk | None:
        """None with -v=6 and up: every request is then logged by the transport. Far means
        a round trip of FAR seconds or more: opening `warm` connections then is cheaper
        than a round trip's wait when the first patches come (near, they open in less)."""
        transport = self.transport
        if transport.logging:
            return None
        bulk = Bulk(
            transport.connections,
            partial(transport.headers, METADATA_OBJECT, MERGE_PATCH),
            partial(transport.timeout, self.deadline),
            transport.pushed_back,
            sink,
            cap,
        )
        if warm and self.far():
            bulk.warm(warm)
        return bulk

    @property
    def pushbacks(self) -> int:
        return self.transport.pushbacks

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

    def all_deleted(self, resource: Resource, names: set[str], since: str, seconds: int) -> bool | None:
        """None too when the deadline, or --request-timeout, ends before the watch would;
        and for a failed request (the caller then polls, which reports what fails)."""
        if min(self.deadline.remaining(), self.transport.request_timeout or float("inf")) < seconds + 1:
            return None
        try:
            return changes.all_deleted(self._request, resource, names, since, seconds)
        except UnfinalizeError:
            return None

    def discover(self, api_version: str) -> list[dict[str, Any]] | None:
        """The resources an API group version serves; None when it serves none."""
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            answer = self._request("GET", path)
        except NotFound:
            return None
        return list((answer or {}).get("resources") or [])

    def api_discovery(self) -> list[dict[str, Any]]:
        """Every API group with its versions and resources, in the aggregated discovery
        format (apidiscovery.k8s.io/v2 APIGroupDiscovery; the core group is named "").
        Two requests on a server that aggregates discovery (1.30+); an older one answers
        the plain lists, and each group version is then read on its own (a 503 marks it
        "Stale", as aggregated discovery marks an unavailable APIService)."""
        groups: list[dict[str, Any]] = []
        for path in ("/api", "/apis"):
            answer = self._request("GET", path, accept=AGGREGATED_DISCOVERY) or {}
            if answer.get("kind") == "APIGroupDiscoveryList":
                for group in answer.get("items") or []:
                    if path == "/api":
                        group = dict(group, metadata={"name": ""})
                    groups.append(group)
            elif answer.get("kind") == "APIVersions":
                groups.append({"metadata": {"name": ""}, "versions": [self._legacy("", v) for v in answer["versions"]]})
            else:
                for group in answer.get("groups") or []:
                    versions = [self._legacy(group["name"], v["version"]) for v in group.get("versions") or []]
                    groups.append({"metadata": {"name": group["name"]}, "versions": versions})
        return groups

    def _legacy(self, group: str, version: str) -> dict[str, Any]:
        """One group version from the pre-aggregation endpoint, as aggregated discovery shows it."""
        try:
            resources = self.discover(f"{group}/{version}" if group else version)
        except ApiError as exc:
            if exc.status != 503:
                raise
            return {"version": version, "freshness": "Stale", "resources": []}
        entries = [
            {
                "resource": r["name"],
                "scope": "Namespaced" if r.get("namespaced") else "Cluster",
                "responseKind": {"group": group, "version": version, "kind": r.get("kind", "")},
                "verbs": list(r.get("verbs") or []),
                **_names(r),
            }
            for r in resources or []
            if "/" not in r.get("name", "")
        ]
        return {"version": version, "freshness": "Current", "resources": entries}

    def access_rules(self, namespace: str) -> dict[str, Any] | None:
        """A SelfSubjectRulesReview's status (resourceRules, incomplete) for one namespace:
        one request instead of one review per verb and resource. None when it cannot be
        made; the real requests then report what is refused."""
        return self._review("SelfSubjectRulesReview", {"namespace": namespace})

    def get_meta(self, ref: ObjectRef) -> ObjectMeta | None:
        obj = self.get(ref, accept=METADATA_OBJECT)
        return None if obj is None else ObjectMeta.from_dict(ref.resource, obj)

    def get(self, ref: ObjectRef, accept: str = "application/json") -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self._request("GET", ref.resource.path(ref.namespace, ref.name), accept=accept)
        except NotFound:
            return None
        return obj

    def delete(self, ref: ObjectRef, dry_run: DryRun) -> Deleted | None:
        """None when it was already gone."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        query = None
        if dry_run is DryRun.SERVER:
            query = {"dryRun": "All"}
            body["dryRun"] = ["All"]  # with a body, the API server reads DeleteOptions from it only
        try:
            answer = self._request(
                "DELETE", ref.resource.path(ref.namespace, ref.name), query=query, body=body, accept=METADATA_OBJECT
            )
        except NotFound as exc:
            if exc.ambiguous:  # the connection dropped after the server took the first DELETE
                return Deleted("", None)
            return None
        answer = answer or {}
        if answer.get("kind") == "Status":  # deleted at once; some built-ins answer this way
            return Deleted(str((answer.get("details") or {}).get("uid") or ""), None)
        meta = ObjectMeta.from_dict(ref.resource, answer)
        still_there = meta.terminating and bool(meta.finalizers)
        return Deleted(meta.uid, meta if still_there else None, meta.resource_version)

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> None:
        """keep=None removes every finalizer with a merge patch, which is idempotent. Keeping
        some is a conditional write (resourceVersion precondition): the caller re-reads on
        Conflict so another writer's new finalizer is never dropped."""
        body: dict[str, Any] | bytes
        if keep is None:
            body = REMOVE_ALL
        else:
            body = {"metadata": {"resourceVersion": meta.resource_version, "finalizers": list(keep) or None}}
        query = {"dryRun": "All"} if dry_run is DryRun.SERVER else None
        ref = meta.ref
        self._request(
            "PATCH",
            ref.resource.path(ref.namespace, ref.name),
            query=query,
            body=body,
            content_type=MERGE_PATCH,
            accept=METADATA_OBJECT,
            decode=False,
        )

    def merge_patch(self, ref: ObjectRef, body: dict[str, Any], dry_run: DryRun) -> None:
        """A merge patch of fixed values (a CRD's spec.conversion): sent again after a
        dropped connection, it ends in the same state. NotFound when the object is gone."""
        query = {"dryRun": "All"} if dry_run is DryRun.SERVER else None
        path = ref.resource.path(ref.namespace, ref.name)
        self._request("PATCH", path, query=query, body=body, content_type=MERGE_PATCH, accept=METADATA_OBJECT)

    def allowed(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool:
        """SelfSubjectAccessReview; True when the review itself cannot be made, since the
        real requests will then report what is refused."""
        key = _review_key(verb, resource, namespace, name)
        return self.reviews.answer(key, partial(self._allowed, key))

    def ask_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> None:
        """On a thread whose connection is lent to the run's next request once answered."""
        key = _review_key(verb, resource, namespace, name)
        self.reviews.ahead(key, partial(self._allowed, key), self.transport.connections.lend)

    def asked_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool:
        return self.reviews.asked(_review_key(verb, resource, namespace, name))

    def _allowed(self, key: Key) -> bool:
        verb, group, plural, namespace, name = key
        attributes = {"verb": verb, "group": group, "resource": plural}
        if namespace:
            attributes["namespace"] = namespace
        if name:
            attributes["name"] = name
        status = self._review("SelfSubjectAccessReview", {"resourceAttributes": attributes})
        return True if status is None else bool(status.get("allowed"))

    def _review(self, kind: str, spec: dict[str, Any]) -> dict[str, Any] | None:
        """An authorization review's status, or None when the review cannot be made."""
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}
        try:
            review = self._request("POST", f"/apis/authorization.k8s.io/v1/{kind.lower()}s", body=body)
        except ApiError:
            return None
        return dict((review or {}).get("status") or {})

    def whoami(self) -> str:
        """The user name the API server sees, or "" when it will not say."""
        try:
            review = self._request(
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            )
        except ApiError:
            return ""
        return str(((review or {}).get("status") or {}).get("userInfo", {}).get("username") or "")


def _names(legacy: dict[str, Any]) -> dict[str, Any]:
    """A legacy APIResource's other names, as aggregated discovery spells them (only those it has)."""
    keys = {"singularResource": "singularName", "shortNames": "shortNames", "categories": "categories"}
    return {key: legacy[old] for key, old in keys.items() if legacy.get(old)}


def remove_all(meta: ObjectMeta, done: Callable[[], object], fallback: Callable[[bool], object]) -> BulkPatch:
    """The patch that removes every finalizer of `meta`, for Cluster.bulk()."""
    ref = meta.ref
    return BulkPatch(ref.resource.path(ref.namespace, ref.name), REMOVE_ALL, done, fallback)


def crd_ref(name: str) -> ObjectRef:
    return ObjectRef(CRD_RESOURCE, name)


def namespace_ref(name: str) -> ObjectRef:
    return ObjectRef(NAMESPACE_RESOURCE, name)


def _review_key(verb: str, resource: Resource, namespace: str | None, name: str | None) -> Key:
    """What a review sends: a cluster-scoped resource's namespace is not part of it."""
    return (verb, resource.group, resource.plural, namespace if resource.namespaced else None, name)
