"""An in-memory cluster behind the engine's Cluster verbs, for fast tests of the loop's
logic. It models only what the engine decides on: finalizers, deletionTimestamps, uids,
resourceVersions, and that a terminating object without finalizers is gone. With
``FakeCluster(bulk=True)`` the remove-every-finalizer patches go to a bulk sender of its
own (FakeBulk), as they go to bulk.Bulk on a real cluster."""

from __future__ import annotations

import copy
import itertools
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.engine import Engine
from kubectl_unfinalize.errors import ApiError, Conflict, CorruptObjects, Forbidden, Gone, Invalid, NotFound
from kubectl_unfinalize.journal import Write
from kubectl_unfinalize.kube.paging import Listed, ListQuery
from kubectl_unfinalize.kube.port import Deleted, DeleteFirst, PlumbedCluster, RemoveAll, Sink
from kubectl_unfinalize.model import (
    CRD,
    CRD_RESOURCE,
    NAMESPACE_RESOURCE,
    ObjectMeta,
    ObjectRef,
    Outcome,
    Progress,
    Report,
    Resource,
    Targets,
)
from kubectl_unfinalize.options import DryRun, Options
from kubectl_unfinalize.records.undo import UndoCluster
from kubectl_unfinalize.scanning.port import ScanCluster

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)
WIDGET_CRD = CRD("widgets.example.com", WIDGETS)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
_uids = itertools.count(1)


@dataclass
class Stored:
    finalizers: list[str]
    uid: str = field(default_factory=lambda: f"uid-{next(_uids)}")
    rv: int = 1
    terminating: bool = False
    blocks: tuple[str, ...] = ()  # uids of the owners it blocks (ownerReferences, blockOwnerDeletion)

    def meta(self, ref: ObjectRef) -> ObjectMeta:
        return ObjectMeta(ref, self.uid, str(self.rv), tuple(self.finalizers), self.terminating, blocks=self.blocks)


Hook = Callable[[str, ObjectRef], None]
# How the fake bulk sender's request for one object ends:
# "ok"       applied, answered 2xx: job.done(version), then sink.finished(started)
# "refused"  answered non-2xx, not applied (a 500): handed back with sink.requeue(job)
# "429"      the same, answered 429: counted in cluster.pushbacks
# "applied"  applied, then the connection dropped before the answer: handed back as sent
# "lost"     sent, the connection dropped, not applied: handed back as sent
Answer = Literal["ok", "refused", "429", "applied", "lost"]


class FakeCluster:
    """`hooks` run before each verb (verb name, ref): raise there to inject a failure,
    or change the store to play another writer. `calls` records (verb, ref name); a
    patch the bulk sender sends is a ("patch", name) too.

    `bulk=True`: the engine gets a FakeBulk; `answers` scripts it, per object name, one
    Answer per request in order (then "ok")."""

    def __init__(self, page_size: int = 500, bulk: bool = False) -> None:
        self.lock = threading.RLock()  # the store is written from the workers and the bulk thread
        self.objects: dict[ObjectRef, Stored] = {}
        self.page_size = page_size
        self.calls: list[tuple[str, str]] = []
        self.hooks: list[Hook] = []
        self.denied: set[tuple[str, str]] = set()  # (verb, resource plural) refused by RBAC
        self.expire_continue_once = False
        self.deadline = Deadline(None)
        self.crds: dict[str, Resource] = {}
        self.pushbacks = 0
        self.served: list[Resource] = [CONFIGMAPS, WIDGETS]  # what discovery lists
        self.stale: list[str] = []  # group versions discovery marks Stale (an unavailable APIService)
        self.rules: dict[str, Any] | None = None  # the SelfSubjectRulesReview status; None: cannot tell
        self.offers_bulk = bulk
        self.answers: dict[str, list[Answer]] = {}
        self.sender: FakeBulk | None = None  # the last one bulk() made
        self.specs: dict[str, dict[str, Any]] = {}  # a CRD's spec and status by name, as get() shows them
        self.merge_patches: list[tuple[str, dict[str, Any], DryRun]] = []  # (name, body, dry run) of each
        # A watchable cluster: each list records the resourceVersion it read at (an index
        # into `writes`, the refs of every write in order) and as many bytes as `list_bytes`.
        self.list_bytes: int | None = None
        self.listings: dict[Resource, Listed] = {}
        self.writes: list[ObjectRef] = []
        self.expired = False  # a watch finds its history gone (410)
        self.watch_list = False  # versions() answers (a server with WatchList), else None
        self.cleanup_paused = False  # deleted CRDs stay, their instances untouched
        self.watches_deletions = False  # all_deleted watches: the cleanup goes on while it waits
        self.patched_at: dict[ObjectRef, int] = {}  # the resourceVersion each bulk patch left
        # Namespaces removed through /finalize while objects in them were held: those objects
        # stay, readable and deletable, and NamespaceLifecycle answers every update of them
        # with a 404 that names the namespace.
        self.removed_namespaces: set[str] = set()
        self.created: list[dict[str, Any]] = []  # the body of each object created, in order
        # Objects the API server cannot read from storage (AllowUnsafeMalformedObjectDeletion
        # on): a list of their type fails naming each, a read or write of one fails, and only
        # unsafe_delete removes one (refused with a 403 while `unsafe_denied`).
        self.corrupt: set[ObjectRef] = set()
        self.unsafe_denied = False

    def write(self, name: str, finalizers: list[str], resource: Resource = WIDGETS) -> None:
        """Another writer (a controller) sets the finalizers of `name`: a write the watch sees."""
        with self.lock:
            ref = next(r for r in self.objects if r.name == name and r.resource == resource)
            self.objects[ref].finalizers = list(finalizers)
            self.objects[ref].rv += 1
            self.writes.append(ref)

    def puts_back(self, name: str, when: str) -> None:
        """A controller that puts a finalizer back on `name` once the run freed it, at the
        moment the final check makes its read (`when`: that read's verb here)."""

        def controller(verb: str, ref: ObjectRef) -> None:
            stored = self.stored(name)
            if verb == when and stored is not None and stored.finalizers == []:
                self.write(name, ["x"])

        self.hooks.append(controller)

    # -- setup
    def add(
        self, name: str, finalizers: list[str], namespace: str | None = "ns", resource: Resource = WIDGETS
    ) -> ObjectRef:
        ref = ObjectRef(resource, name, namespace if resource.namespaced else None)
        self.objects[ref] = Stored(list(finalizers))
        return ref

    def add_crd(self, crd: CRD = WIDGET_CRD) -> ObjectRef:
        self.crds[crd.name] = crd.resource
        return self.add(crd.name, [], None, CRD_RESOURCE)

    def add_namespace(self, name: str, finalizers: tuple[str, ...] | list[str] = ()) -> ObjectRef:
        return self.add(name, list(finalizers), None, NAMESPACE_RESOURCE)

    def convert_with_webhook(self, crd: CRD = WIDGET_CRD, url: str = "https://127.0.0.1:1/convert") -> None:
        """The CRD converts with a webhook whose backend is gone: every list of its
        objects fails as the API server's does, until spec.conversion is changed."""
        conversion = {"strategy": "Webhook", "webhook": {"clientConfig": {"url": url, "caBundle": "Q0E="}}}
        self.specs[crd.name] = {"spec": {"conversion": conversion}, "status": {"storedVersions": ["v1", "v2"]}}
        message = (
            f"conversion webhook for {crd.resource.group}/v2, Kind={crd.resource.kind} failed:"
            f' Post "{url}?timeout=30s": dial tcp 127.0.0.1:1: connect: connection refused'
        )

        def dead(verb: str, ref: ObjectRef) -> None:
            strategy = self.specs[crd.name]["spec"]["conversion"].get("strategy")
            if verb == "list" and ref.resource == crd.resource and strategy == "Webhook":
                raise ApiError(500, "InternalError", message, "GET", crd.resource.path())

        self.hooks.append(dead)

    def stored(self, name: str, resource: Resource = WIDGETS) -> Stored | None:
        return next((s for r, s in self.objects.items() if r.name == name and r.resource == resource), None)

    def _call(self, verb: str, ref: ObjectRef) -> None:
        self.calls.append((verb, ref.name))
        for hook in list(self.hooks):
            hook(verb, ref)

    def _settle(self) -> None:
        """Terminating objects without finalizers go; a deleted CRD's instances are
        deleted, and the CRD goes once none is left (the cleanup controller)."""
        for ref, stored in list(self.objects.items()):
            if ref not in self.objects:  # went with its CRD or namespace, earlier in this loop
                continue
            if ref.resource == CRD_RESOURCE and stored.terminating:
                if self.cleanup_paused:  # the API server's cleanup has not reached the deleted CRDs
                    continue
                instances = [r for r in self.objects if r.resource == self.crds.get(ref.name)]
                if any(not self.objects[r].terminating for r in instances):
                    stored.rv += 1  # the cleanup controller's first write: its Terminating condition
                for r in instances:
                    self.objects[r].terminating = True
                if not [r for r in instances if self.objects[r].finalizers]:
                    for r in instances:
                        del self.objects[r]
                    del self.objects[ref]
            elif ref.resource == NAMESPACE_RESOURCE and stored.terminating:  # the namespace controller
                inside = [r for r in self.objects if r.namespace == ref.name]
                for r in inside:
                    self.objects[r].terminating = True
                for r in inside:
                    if not self.objects[r].finalizers:
                        del self.objects[r]
                if not stored.finalizers and not [r for r in self.objects if r.namespace == ref.name]:
                    del self.objects[ref]
            elif stored.terminating and not stored.finalizers:
                del self.objects[ref]

    # -- verbs
    def bounded(self, deadline: Deadline) -> FakeCluster:
        return self

    def far(self) -> bool:
        return False

    def hand_over(self) -> None:
        self.handed_over = True  # the engine's run hands the resolving thread's connection on

    def bulk(self, sink: Sink, cap: int, warm: int = 0) -> FakeBulk | None:
        if not self.offers_bulk:
            return None  # every patch goes through the verbs
        self.sender = FakeBulk(self, sink)
        return self.sender

    def pace(self, refused: Callable[[float], None], parked: Callable[[], Any]) -> None:
        self.paced = (refused, parked)  # the engine's pacing hooks (no 429s reach them here)

    def answer(self, name: str) -> Answer:
        with self.lock:
            scripted = self.answers.get(name)
            return scripted.pop(0) if scripted else "ok"

    def remove_all(self, ref: ObjectRef) -> ObjectRef | None:
        """The bulk patch of `ref` on the store: what the API server applies; the ref, or
        None when there is no such object (a 404)."""
        if ref not in self.objects:
            return None
        self._call("patch", ref)
        if ref.namespace in self.removed_namespaces:
            return None
        with self.lock:
            stored = self.objects.get(ref)
            if stored is None:
                return None
            stored.finalizers = []
            stored.rv += 1
            self.patched_at[ref] = stored.rv
            self.writes.append(ref)
            self._settle()
        return ref

    def _unreadable(self, refs: Iterable[ObjectRef]) -> None:
        """Fail as kube-apiserver does when `refs` holds objects it cannot read."""
        bad = [r for r in refs if r in self.corrupt]
        if bad:
            keys = [
                f"/registry/{r.resource.group or 'core'}/{r.resource.plural}/{r.namespace or ''}/{r.name}" for r in bad
            ]
            causes = [
                {"reason": "UnexpectedServerResponse", "message": "object not decodable", "field": k} for k in keys
            ]
            raise CorruptObjects(500, "StorageReadError", "failed to read", details={"causes": causes})

    def list_meta(self, resource: Resource, query: ListQuery) -> Iterator[list[ObjectMeta]]:
        self._call("list", ObjectRef(resource, resource.plural, query.namespace or None))
        self._unreadable(
            r
            for r in list(self.objects)
            if r.resource == resource and (not query.namespace or r.namespace == query.namespace)
        )
        if self.list_bytes is not None and resource not in self.listings:
            count = len([r for r in self.objects if r.resource == resource])
            self.listings[resource] = Listed(str(len(self.writes)), self.list_bytes, count)
        with self.lock:
            refs = [
                r
                for r in self.objects
                if r.resource == resource
                and (not query.namespace or r.namespace == query.namespace)
                and (not query.finalized_only or self.objects[r].finalizers)
            ]
        for start in range(0, len(refs), query.limit):
            if start and self.expire_continue_once:
                self.expire_continue_once = False
                raise Gone(410, "Expired", "continue token too old")
            with self.lock:
                page = [self.objects[r].meta(r) for r in refs[start : start + query.limit] if r in self.objects]
            yield page

    def list_objects(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]:
        if resource.group == "admissionregistration.k8s.io":  # webhook configurations: not readable here
            raise ApiError(403, "Forbidden", f"cannot list {resource.plural}", "GET", resource.path())
        if resource.group == "" and resource.plural in ("pods", "nodes"):  # it keeps none
            yield []
            return
        raise NotImplementedError

    def listed_at(self, resource: Resource, namespace: str | None) -> Listed | None:
        return self.listings.get(resource)

    def all_deleted(self, resource: Resource, uids: Mapping[str, str], since: str, seconds: int) -> bool | None:
        """None (no watch: the engine polls) unless `watches_deletions`: then the paused
        cleanup resumes during the watch, which says whether every one of `uids` went."""
        if not self.watches_deletions:
            return None
        self._call("watch_deleted", ObjectRef(resource, ",".join(sorted(uids))))
        with self.lock:
            self.cleanup_paused = False
            self._settle()
            return not any(r.resource == resource and s.uid == uids.get(r.name) for r, s in self.objects.items())

    def written_since(self, resource: Resource, query: ListQuery, since: str, seconds: int) -> Counter[str] | None:
        """`writes` per name after the `since`-th entry (a resourceVersion here is an
        index into it); None when `expired`: the history is gone."""
        self._call("watch", ObjectRef(resource, resource.plural, query.namespace or None))
        if self.expired:
            return None
        return Counter(
            r.name for r in self.writes[int(since) :] if r.resource == resource and r.namespace == query.namespace
        )

    def versions(
        self, resource: Resource, query: ListQuery, seconds: int, on_row: Callable[[str, str], None]
    ) -> bool | None:
        """Each object's name and version now (`rv` here), when `watch_list`."""
        self._call("versions", ObjectRef(resource, resource.plural, query.namespace or None))
        if not self.watch_list:
            return None
        with self.lock:
            rows = [
                (ref.name, str(stored.rv))
                for ref, stored in self.objects.items()
                if ref.resource == resource and (query.namespace is None or ref.namespace == query.namespace)
            ]
        for name, version in rows:
            on_row(name, version)
        return True

    def discover(self, api_version: str) -> list[dict[str, Any]] | None:
        raise NotImplementedError

    def api_discovery(self) -> list[dict[str, Any]]:
        self.calls.append(("discovery", ""))
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in self.served:
            entry = {
                "resource": r.plural,
                "scope": "Namespaced" if r.namespaced else "Cluster",
                "responseKind": {"kind": r.kind},
                "verbs": ["list", "patch"],
            }
            groups.setdefault(r.group, []).append({"version": r.version, "resources": [entry], "freshness": "Current"})
        for gv in self.stale:
            group, _, version = gv.rpartition("/")
            groups.setdefault(group, []).append({"version": version, "freshness": "Stale"})
        return [{"metadata": {"name": g}, "versions": versions} for g, versions in groups.items()]

    def access_rules(self, namespace: str) -> dict[str, Any] | None:
        self.calls.append(("rules", namespace))
        return self.rules

    def get_meta(self, ref: ObjectRef) -> ObjectMeta | None:
        self._call("get", ref)
        self._unreadable([ref])
        stored = self.objects.get(ref)
        return None if stored is None else stored.meta(ref)

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        meta = self.get_meta(ref)
        if meta is None:
            return None
        extra = self.specs.get(ref.name, {}) if ref.resource == CRD_RESOURCE else {}
        return {"metadata": {"name": ref.name, "finalizers": list(meta.finalizers)}, **copy.deepcopy(extra)}

    def merge_patch(self, ref: ObjectRef, body: dict[str, Any], dry_run: DryRun) -> None:
        """JSON merge patch semantics on the CRD's spec and status (None removes a key)."""
        assert dry_run is not DryRun.CLIENT, "a client dry run must not send a PATCH"
        self._call("merge_patch", ref)
        if ref not in self.objects:
            raise NotFound(404, "NotFound", "not found")
        self.merge_patches.append((ref.name, body, dry_run))
        if dry_run is DryRun.NONE:
            _merge(self.specs.setdefault(ref.name, {}), body)

    def delete(self, ref: ObjectRef, dry_run: DryRun, whole: bool = False) -> Deleted | None:
        assert dry_run is not DryRun.CLIENT, "a client dry run must not send a DELETE"
        self._call("delete", ref)
        self._unreadable([ref])
        stored = self.objects.get(ref)
        if stored is None:
            return None
        if dry_run is DryRun.SERVER:
            return Deleted(stored.uid, stored.meta(ref) if stored.finalizers else None)
        with self.lock:
            stored.terminating = True
            stored.rv += 1
            answer = Deleted(stored.uid, stored.meta(ref), str(stored.rv))
            self._settle()
            return answer if ref in self.objects else Deleted(stored.uid, None, answer.version)

    def force_delete(self, ref: ObjectRef, uid: str, dry_run: DryRun) -> bool:
        self._call("force_delete", ref)
        with self.lock:
            return self.objects.pop(ref, None) is not None if dry_run is DryRun.NONE else ref in self.objects

    def unsafe_delete(self, ref: ObjectRef) -> bool:
        self._call("unsafe_delete", ref)
        if self.unsafe_denied:
            raise Forbidden(
                403, "Forbidden", f'cannot unsafe-delete-ignore-read-errors resource "{ref.resource.plural}"'
            )
        with self.lock:
            if ref not in self.objects:
                return False
            if ref not in self.corrupt:
                raise Invalid(422, "Invalid", "is exclusively used to delete corrupt object(s)")
            self.corrupt.discard(ref)
            del self.objects[ref]
            return True

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> str:
        assert dry_run is not DryRun.CLIENT, "a client dry run must not send a PATCH"
        self._call("patch", meta.ref)
        stored = self.objects.get(meta.ref)
        if stored is None:
            raise NotFound(404, "NotFound", "not found")
        if meta.ref.namespace in self.removed_namespaces:
            namespace = meta.ref.namespace
            details = {"name": namespace, "kind": "namespaces"}
            raise NotFound(404, "NotFound", f'namespaces "{namespace}" not found', details=details)
        if keep is not None and str(stored.rv) != meta.resource_version:
            raise Conflict(409, "Conflict", "the object has been modified")
        if dry_run is DryRun.SERVER:
            return ""
        with self.lock:
            stored.finalizers = list(keep or [])
            stored.rv += 1
            self.writes.append(meta.ref)
            self._settle()
            return str(stored.rv)

    def create(self, resource: Resource, namespace: str | None, body: dict[str, Any], dry_run: DryRun) -> str:
        """Only a namespace is created by a run: one that was removed exists again."""
        assert resource == NAMESPACE_RESOURCE and dry_run is DryRun.NONE
        ref = ObjectRef(resource, body["metadata"]["name"], None)
        self._call("create", ref)
        with self.lock:
            if ref in self.objects:
                raise Conflict(409, "AlreadyExists", f'namespaces "{ref.name}" already exists')
            self.removed_namespaces.discard(ref.name)
            self.objects[ref] = Stored([])
            self.created.append(body)
            return self.objects[ref].uid

    def allowed(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool:
        self.calls.append(("review", f"{verb} {resource.plural}"))
        if resource.plural == "*":  # as RBAC: only a rule for every resource allows "*"
            return not [denied for denied, _ in self.denied if denied == verb]
        return (verb, resource.plural) not in self.denied

    def ask_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> None:
        self.calls.append(("ahead", f"{verb} {resource.plural}"))

    def asked_ahead(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool:
        return False

    def whoami(self) -> str:
        return "tester"


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class FakeBulk:
    """The bulk sender of a FakeCluster. On a thread of its own, like bulk.Bulk, each
    patch put here is answered as cluster.answer() says (applied to the store unless
    refused or lost), and the sink is told what bulk.Bulk would tell it. A failure a hook
    raises while the patch is applied is an answer that is not 2xx: the workers send the
    patch again and meet the hook there. `sent` names each patch sent here, in order."""

    def __init__(self, cluster: FakeCluster, sink: Sink) -> None:
        self.cluster = cluster
        self.sink = sink
        self.sent: list[str] = []
        self._jobs: queue.SimpleQueue[tuple[RemoveAll, float] | None] = queue.SimpleQueue()
        self._stopped = False
        self._nudged = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-bulk", daemon=True)
        self._thread.start()

    def put(self, job: RemoveAll) -> None:
        self._jobs.put((job, time.monotonic()))
        if self._stopped:  # after a bug here, or close(): the workers send it
            self._hand_back()

    def nudge(self) -> None:
        self._nudged.set()

    def release(self, timeout: float = 1.0) -> None:
        pass  # no connections to give away

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            while (item := self._jobs.get()) is not None:
                while not self.sink.places(1):  # as bulk.Bulk: sent once the workers give it a place
                    self._nudged.wait(0.05)
                    self._nudged.clear()
                self._one(*item)
        except BaseException as exc:  # noqa: BLE001 - like bulk.Bulk: a bug here reaches the engine
            self.sink.failed(exc)
        finally:
            self._stopped = True
            self._hand_back()

    def _hand_back(self) -> None:
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self.sink.returned(item[0])  # never given a place

    def _one(self, job: RemoveAll, started: float) -> None:
        if isinstance(job, DeleteFirst):  # its DELETE, then what it left, in the same place
            try:
                deleted = self.cluster.delete(job.meta.ref, DryRun.NONE)
            except Exception:  # noqa: BLE001 - refused (a hook's failure): the workers send it again
                deleted = None
            if deleted is None:  # or answered 404: the workers' DELETE says so
                self.sink.requeue(job)
                return
            left = job.deleted(deleted)
            if left is None:
                self.sink.finished(started)
                return
            if not isinstance(left, RemoveAll):  # the rest is a worker's, in this place
                self.sink.requeue(left)
                return
            job = left
        name = job.meta.ref.name
        self.sent.append(name)
        try:
            answer = self.cluster.answer(name)
            if answer in ("refused", "429"):
                self.cluster.calls.append(("patch", name))  # it reached the server, which refused it
                if answer == "429":
                    self.cluster.pushbacks += 1
                self.sink.requeue(job)  # answered: not applied, the workers send it afresh
                return
            if answer == "lost":
                self.sink.requeue(partial(job.fallback, True))  # sent, no answer: it may have been applied
                return
            try:
                applied = self.cluster.remove_all(job.meta.ref)
            except Exception:  # noqa: BLE001 - a hook's failure: not a 2xx
                applied = None
            if applied is None:  # answered 404 or another refusal
                self.sink.requeue(job)
                return
            if answer == "applied":
                self.sink.requeue(partial(job.fallback, True))
                return
        except BaseException:
            self.sink.requeue(job)  # not lost to a bug here
            raise
        version = self.cluster.patched_at.get(applied, 0)
        try:
            job.done(str(version))
        finally:
            self.sink.finished(started)


def run_engine(
    cluster: FakeCluster,
    targets: Targets | None = None,
    outcomes: Callable[[Outcome], None] | None = None,
    progress: Callable[[Progress], None] | None = None,
    **options: Any,
) -> Report:
    """One engine run over `targets` (default: the widgets CRD), with no settling and a
    quick poll unless the test says otherwise."""
    options.setdefault("settle", 0)
    options.setdefault("poll", 0.01)
    opts = Options(**options)
    engine = Engine(cluster, opts, Deadline(opts.deadline_seconds), outcomes, progress)
    return engine.run(targets or Targets(crds=[WIDGET_CRD]))


class MemoryCluster:
    """Undo's cluster: objects by ref, each a metadata view and a body; conflicts on demand."""

    def __init__(self) -> None:
        self.objects: dict[ObjectRef, ObjectMeta] = {}
        self.bodies: dict[ObjectRef, dict[str, Any]] = {}
        self.conflicts = 0
        self.writes: list[tuple[str, ObjectRef]] = []

    def put(self, ref: ObjectRef, uid: str, finalizers: tuple[str, ...] = (), terminating: bool = False) -> None:
        self.objects[ref] = ObjectMeta(ref, uid, "5", finalizers, terminating)

    def get_meta(self, ref: ObjectRef) -> ObjectMeta | None:
        return self.objects.get(ref)

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        if ref not in self.objects:
            return None
        return {"status": {"conditions": [{"type": "Established", "status": "True"}]}}

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> str:
        if self.conflicts:
            self.conflicts -= 1
            self.put(meta.ref, meta.uid, meta.finalizers + ("late.example.com",))
            raise Conflict(409, "Conflict", "the object has been modified")
        assert keep is not None and self.objects[meta.ref].resource_version == meta.resource_version
        self.writes.append(("patch", meta.ref))
        if dry_run is DryRun.NONE:  # a server dry run stores nothing
            self.put(meta.ref, meta.uid, keep)
        return "6"

    def create(self, resource: Resource, namespace: str | None, body: dict[str, Any], dry_run: DryRun) -> str:
        ref = ObjectRef(resource, body["metadata"]["name"], namespace)
        assert "uid" not in body["metadata"] and "resourceVersion" not in body["metadata"]
        self.writes.append(("create", ref))
        self.put(ref, "new-" + ref.name, tuple(body["metadata"].get("finalizers") or ()))
        self.bodies[ref] = body
        return "new-" + ref.name


class MemoryJournal:
    """What undo wrote, in order; undo keeps no bodies."""

    def __init__(self) -> None:
        self.writes: list[Write] = []

    def wants(self, kind: str) -> bool:
        return False

    def wrote(self, write: Write) -> None:
        self.writes.append(write)

    def keep(self, kind: str, ref: ObjectRef, body: dict[str, Any]) -> None:
        raise AssertionError("undo keeps no bodies")


def entry(
    plural: str, kind: str, scope: str = "Namespaced", verbs: tuple[str, ...] = ("list", "get")
) -> dict[str, Any]:
    """One resource of an aggregated discovery document."""
    return {"resource": plural, "scope": scope, "responseKind": {"kind": kind}, "verbs": list(verbs)}


DISCOVERY: list[dict[str, Any]] = [
    {
        "metadata": {"name": ""},
        "versions": [
            {
                "version": "v1",
                "resources": [
                    entry("configmaps", "ConfigMap"),
                    entry("secrets", "Secret"),
                    entry("namespaces", "Namespace", "Cluster"),
                    entry("bindings", "Binding", verbs=("create",)),
                ],
            }
        ],
    },
    {
        "metadata": {"name": "apiextensions.k8s.io"},
        "versions": [{"version": "v1", "resources": [entry("customresourcedefinitions", "CRD", "Cluster")]}],
    },
    {
        "metadata": {"name": "g.example.com"},
        "versions": [
            {"version": "v1", "resources": [entry("stalls", "Stall"), entry("nodes2", "Node2", "Cluster")]},
            {"version": "v1beta1", "resources": [entry("stalls", "Stall")]},
        ],
    },
    {"metadata": {"name": "metrics.acme.io"}, "versions": [{"version": "v1beta1", "freshness": "Stale"}]},
]
# Every group version available: nothing discovery cannot read fails the gate.
HEALTHY_DISCOVERY = [g for g in DISCOVERY if g["metadata"]["name"] != "metrics.acme.io"]


class FakeScanCluster:
    """The scan's cluster: pages of plain metadata by plural, whole objects where the scan
    reads them (`full`), and types the user may not list (`forbidden`, a 403)."""

    def __init__(
        self,
        objects: dict[str, list[dict[str, Any]]],
        forbidden: Iterable[str] = (),
        full: dict[str, list[dict[str, Any]]] | None = None,
        removed_namespaces: Iterable[str] = (),
        failing: dict[str, Exception] | None = None,
        discovery: list[dict[str, Any]] | None = None,
    ) -> None:
        self.discovery = HEALTHY_DISCOVERY if discovery is None else discovery
        self.objects = objects
        self.forbidden = set(forbidden)
        self.failing = failing or {}  # plural -> what its list raises (a 500, corrupt objects)
        self.full = full or {}
        self.listed: list[tuple[str, str, str | None]] = []
        # The namespaces of the objects exist (a namespace listed with none given), but those
        # removed through /finalize while objects in them were held.
        self.removed_namespaces = set(removed_namespaces)

    def api_discovery(self) -> list[dict[str, Any]]:
        return self.discovery

    def list_metadata(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]:
        self.listed.append((resource.plural, resource.version, query.namespace))
        if resource.plural in self.forbidden:
            raise Forbidden(403, "Forbidden", f"{resource.plural} is forbidden")
        if resource.plural in self.failing:
            raise self.failing[resource.plural]
        stored = self._namespaces() if resource.plural == "namespaces" else self.objects.get(resource.plural, [])
        items = [
            m for m in stored if not (query.namespace and resource.namespaced) or m.get("namespace") == query.namespace
        ]
        for start in range(0, len(items), query.limit):
            yield items[start : start + query.limit]

    def list_objects(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]:
        if resource.plural in self.forbidden:
            raise Forbidden(403, "Forbidden", "forbidden")
        yield list(self.full.get(resource.plural, []))

    def get(self, ref: Any) -> dict[str, Any] | None:
        found = next((o for o in self.full.get(ref.resource.plural, []) if o["metadata"]["name"] == ref.name), None)
        if found is None and ref.resource.plural == "namespaces":
            return next(({"metadata": m} for m in self._namespaces() if m["name"] == ref.name), None)
        return found

    def _namespaces(self) -> list[dict[str, Any]]:
        given = self.objects.get("namespaces", [])
        names = {m["name"] for m in given}
        implied = {m["namespace"] for ms in self.objects.values() for m in ms if m.get("namespace")}
        return given + [{"name": n} for n in sorted(implied - names - self.removed_namespaces)]


# Never called: mypy checks that each fake offers every verb of the port it stands for.
def _engine_port() -> None:
    _: PlumbedCluster = FakeCluster()  # the engine's verbs and its plumbing


def _undo_port() -> None:
    _: UndoCluster = MemoryCluster()


def _scan_port() -> None:
    _: ScanCluster = FakeScanCluster({})
