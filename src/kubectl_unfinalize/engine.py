"""The doing: list, patch, delete, wait. Returns a Report and never prints.

Order with delete: CRDs and selected objects are deleted first. From then on each
object carries a deletionTimestamp, so the API server refuses new finalizers and a
controller that is still running cannot win; the engine re-lists and clears finalizers
until everything is gone or the deadline passes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from .errors import ApiError, ClusterError, PermissionDenied
from .model import (
    CRD,
    CRD_RESOURCE,
    DryRun,
    ObjectRef,
    Outcome,
    Progress,
    Report,
    Resource,
    Targets,
)
from .transport import MERGE_PATCH, METADATA_LIST, Transport

DEFAULT_DELETE_TIMEOUT = 300.0
CONFLICT_RETRIES = 10


@dataclass
class Options:
    """Engine settings; the CLI flags and the Python API map onto these one to one."""

    delete: bool = False
    wait: bool = True
    timeout: float | None = None
    dry_run: DryRun = None
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    only_terminating: bool = False
    finalizers: tuple[str, ...] = ()
    concurrency: int = 16
    chunk_size: int = 500
    settle: float = 1.0
    poll: float = 0.5


@dataclass
class _Item:
    """One listed object: only what the engine needs from its metadata."""

    resource: Resource
    name: str
    namespace: str | None
    uid: str
    resource_version: str
    finalizers: list[str]
    terminating: bool
    managers: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple:
        return (self.resource.group, self.resource.plural, self.namespace, self.name, self.uid)


OutcomeListener = Callable[[Outcome], None]
ProgressListener = Callable[[Progress], None]


class Engine:
    def __init__(
        self,
        transport: Transport,
        options: Options,
        on_outcome: OutcomeListener | None = None,
        on_progress: ProgressListener | None = None,
    ) -> None:
        self.t = transport
        self.o = options
        self._on_outcome = on_outcome or (lambda _: None)
        self._on_progress = on_progress or (lambda _: None)
        self._outcomes: dict[tuple, Outcome] = {}
        self._seen: set[tuple] = set()
        self._done = 0
        self._total = 0
        self._lock = threading.Lock()
        self._deadline: float | None = None

    # ----------------------------------------------------------------- public
    def run(self, targets: Targets) -> Report:
        started = time.monotonic()
        report = Report(dry_run=self.o.dry_run, skipped=list(targets.missing))
        timeout = self.o.timeout
        if timeout is None and self.o.delete:
            timeout = DEFAULT_DELETE_TIMEOUT
        self._deadline = started + timeout if timeout else None
        crds, objects = list(targets.crds), list(targets.objects)
        with ThreadPoolExecutor(max_workers=max(1, self.o.concurrency)) as pool:
            self._pool = pool
            self.preflight(targets)
            if self.o.delete:
                crds = self._keep(crds, lambda c: self._delete(CRD_RESOURCE, c.name, None))
                objects = self._keep(objects, lambda r: self._delete(r.resource, r.name, r.namespace))
            while True:
                if not self._pass(crds, objects):
                    report.timed_out = True
                    break
                if not (self.o.delete and self.o.wait) or self.o.dry_run:
                    break
                crds = self._keep(crds, lambda c: self._exists(CRD_RESOURCE, c.name, None))
                objects = self._keep(objects, lambda r: self._exists(r.resource, r.name, r.namespace))
                if not crds and not objects:
                    break
                if self._expired():
                    report.timed_out = True
                    self._diagnose(crds, objects)
                    break
                time.sleep(self.o.poll)
            if not self.o.delete and not self.o.dry_run and not report.timed_out:
                self._final_check(crds, objects)
        report.outcomes = list(self._outcomes.values())
        report.scanned = len(self._seen)
        report.seconds = time.monotonic() - started
        return report

    def preflight(self, targets: Targets) -> None:
        """Ask the API server (SelfSubjectAccessReview) for every verb the plan needs,
        so a missing permission is reported before anything is changed. Runs on the
        worker pool, first thing in run()."""
        checks: list[tuple[str, Resource, str | None, str | None]] = []
        writes = self.o.dry_run != "client"
        for crd in targets.crds:
            ns = self.o.namespace if crd.resource.namespaced else None
            checks.append(("list", crd.resource, ns, None))
            if writes:
                checks.append(("patch", crd.resource, ns, None))
                if self.o.delete:
                    checks.append(("delete", CRD_RESOURCE, None, crd.name))
        for ref in targets.objects:
            checks.append(("get", ref.resource, ref.namespace, ref.name))
            if writes:
                checks.append(("patch", ref.resource, ref.namespace, ref.name))
                if self.o.delete:
                    checks.append(("delete", ref.resource, ref.namespace, ref.name))
        checks = list(dict.fromkeys(checks))
        answers = list(self._pool.map(lambda check: self._allowed(*check), checks))
        for (verb, resource, namespace, name), allowed in zip(checks, answers, strict=True):
            if not allowed:
                where = f"in namespace {namespace}" if namespace else "in all namespaces"
                if not resource.namespaced:
                    where = "cluster-wide"
                target = f"{resource.qualified}/{name}" if name else resource.qualified
                raise PermissionDenied(
                    f"forbidden: {self._whoami()}cannot {verb} {target} {where} (RBAC); nothing was changed"
                )

    def _allowed(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool:
        attributes = {"verb": verb, "group": resource.group, "resource": resource.plural}
        if namespace:
            attributes["namespace"] = namespace
        if name:
            attributes["name"] = name
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        try:
            review = self.t.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=body)
        except ApiError:
            return True  # cannot ask; the real requests will report what is refused
        return bool((review.get("status") or {}).get("allowed"))

    def _expired(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    def _keep(self, things: list, predicate: Callable) -> list:
        """Filter with the API calls made concurrently (a manifest may name many objects)."""
        return [thing for thing, keep in zip(things, list(self._pool.map(predicate, things)), strict=True) if keep]

    # --------------------------------------------------------------- passes
    def _pass(self, crds: list[CRD], objects: list[ObjectRef]) -> bool:
        """One list-and-patch sweep; False when the deadline cut it short."""
        inflight: set[Future] = set()
        limit = self.o.concurrency * 4
        complete = True
        for item in self._candidates(crds, objects):
            if self._expired():
                complete = False
                break
            self._total += 1
            inflight.add(self._pool.submit(self._unfinalize, item))
            if len(inflight) >= limit:
                done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                self._collect(done)
        while inflight:
            done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
            self._collect(done)
        return complete

    def _collect(self, futures: set[Future]) -> None:
        for future in futures:
            outcome, key = future.result()
            self._done += 1
            if outcome is not None:
                self._record(key, outcome)
        self._on_progress(Progress("unfinalize", self._done, self._total))

    def _candidates(self, crds: list[CRD], objects: list[ObjectRef]) -> Iterator[_Item]:
        for crd in crds:
            for item in self._list(crd):
                self._seen.add(item.key)
                if self._wanted(item):
                    yield item
        for ref, item in zip(objects, self._pool.map(self._get, objects), strict=True):
            if item is None:
                if not self.o.delete:  # with --delete, _delete already reported it
                    self._record((ref,), _outcome_for_ref(ref, "gone", "not found", self.o.dry_run), first_only=True)
                continue
            self._seen.add(item.key)
            if self._removable(item.finalizers):
                yield item

    def _wanted(self, item: _Item) -> bool:
        if self.o.only_terminating and not item.terminating:
            return False
        return bool(self._removable(item.finalizers))

    def _removable(self, finalizers: list[str]) -> list[str]:
        if self.o.finalizers:
            return [f for f in finalizers if f in self.o.finalizers]
        return list(finalizers)

    def _list(self, crd: CRD) -> Iterator[_Item]:
        """Metadata-only pages; an expired continue token restarts the list."""
        resource = crd.resource
        path = resource.path(self.o.namespace if resource.namespaced else None)
        token = None
        while True:
            query = {
                "limit": self.o.chunk_size,
                "continue": token,
                "labelSelector": self.o.label_selector,
                "fieldSelector": self.o.field_selector,
            }
            try:
                page = self.t.request("GET", path, query=query, accept=METADATA_LIST)
            except ApiError as exc:
                if exc.status == 404:
                    return  # the CRD is gone: nothing left to free
                if exc.status == 410 and token:
                    token = None
                    continue
                hint = ""
                if "conversion webhook" in str(exc):
                    hint = (
                        "; the CRD's conversion webhook is failing, so its objects can be neither listed nor"
                        " patched: bring the webhook back, or set spec.conversion.strategy to None, and run again"
                    )
                self._record(
                    ("list", crd.name),
                    Outcome(
                        CRD_RESOURCE.display,
                        crd.name,
                        "failed",
                        message=f"cannot list {resource.qualified}: {exc}{hint}",
                    ),
                )
                return
            for obj in page.get("items") or []:
                yield _item(resource, obj)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def _get(self, ref: ObjectRef) -> _Item | None:
        try:
            obj = self.t.request("GET", ref.resource.path(ref.namespace, ref.name), accept=_METADATA_OBJECT)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return _item(ref.resource, obj)

    # ---------------------------------------------------------------- writes
    def _unfinalize(self, item: _Item) -> tuple[Outcome | None, tuple]:
        """Runs in a worker thread; returns (outcome, key) for the main thread to record."""
        path = item.resource.path(item.namespace, item.name)
        query = {"dryRun": "All"} if self.o.dry_run == "server" else None
        removed = self._removable(item.finalizers)
        for _ in range(CONFLICT_RETRIES):
            if self.o.finalizers:
                keep = [f for f in item.finalizers if f not in self.o.finalizers]
                body = {"metadata": {"resourceVersion": item.resource_version, "finalizers": keep or None}}
            else:
                body = {"metadata": {"finalizers": None}}
            if self.o.dry_run == "client":
                return self._make(item, "unfinalized", removed), item.key
            try:
                self.t.request("PATCH", path, query=query, body=body, content_type=MERGE_PATCH, accept=_METADATA_OBJECT)
                return self._make(item, "unfinalized", removed), item.key
            except ApiError as exc:
                if exc.status == 404:
                    return self._make(item, "gone", [], "already gone"), item.key
                if exc.status != 409:
                    return self._make(item, "failed", removed, _explain(exc, "patch", item.resource)), item.key
            fresh = self._get(ObjectRef(item.resource, item.name, item.namespace))
            if fresh is None:
                return self._make(item, "gone", [], "already gone"), item.key
            item = fresh
            removed = self._removable(item.finalizers)
            if not removed:
                return None, item.key
        return self._make(item, "failed", removed, "kept conflicting with another writer"), item.key

    def _delete(self, resource: Resource, name: str, namespace: str | None) -> bool:
        """Delete one CRD or object; True when it still exists afterwards."""
        display = f"{resource.display}/{name}"
        if self.o.dry_run == "client":
            exists = self._exists(resource, name, namespace)
            if exists:
                self._record(
                    (display, namespace), Outcome(resource.display, name, "deleted", namespace, dry_run="client")
                )
            return exists
        query = {"dryRun": "All"} if self.o.dry_run == "server" else None
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if query:  # with a body, the API server reads DeleteOptions from it and ignores the query
            body["dryRun"] = ["All"]
        try:
            self.t.request("DELETE", resource.path(namespace, name), query=query, body=body)
        except ApiError as exc:
            if exc.status == 404:
                self._record(
                    (display, namespace), Outcome(resource.display, name, "gone", namespace, message="not found")
                )
                return False
            raise ClusterError(f"cannot delete {display}: {_explain(exc, 'delete', resource)}") from exc
        self._record(
            (display, namespace), Outcome(resource.display, name, "deleted", namespace, dry_run=self.o.dry_run)
        )
        return True

    def _exists(self, resource: Resource, name: str, namespace: str | None) -> bool:
        try:
            self.t.request("GET", resource.path(namespace, name), accept=_METADATA_OBJECT)
            return True
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise

    # -------------------------------------------------------------- checking
    def _final_check(self, crds: list[CRD], objects: list[ObjectRef]) -> None:
        """Without --delete a live controller may put finalizers back: name the objects."""
        cleared = {k for k, o in self._outcomes.items() if o.action == "unfinalized"}
        if not cleared:
            return
        time.sleep(self.o.settle)
        items = [i for crd in crds for i in self._list(crd)]
        items += [i for ref in objects if (i := self._get(ref)) is not None]
        for item in items:
            if item.key in cleared and self._removable(item.finalizers):
                culprit = f"; likely re-added by {', '.join(item.managers)}" if item.managers else ""
                self._record(
                    item.key,
                    self._make(
                        item,
                        "refinalized",
                        self._removable(item.finalizers),
                        f"finalizers came back{culprit}: is a controller still running?",
                    ),
                )

    def _diagnose(self, crds: list[CRD], objects: list[ObjectRef]) -> None:
        """On timeout, say exactly what still blocks: objects, finalizers, CRD conditions."""
        for crd in crds:
            remaining = [i for i in self._list(crd)]
            try:
                obj = self.t.request("GET", CRD_RESOURCE.path(None, crd.name))
            except ApiError:
                obj = {}
            conditions = [
                f"{c.get('type')}={c.get('status')}: {c.get('message', '')}".strip()
                for c in (obj.get("status") or {}).get("conditions") or []
                if c.get("type") in ("Terminating", "NamesAccepted", "Established") and c.get("message")
            ]
            waiting = [f"{i.namespace + '/' if i.namespace else ''}{i.name} {i.finalizers}" for i in remaining[:5]]
            more = f" and {len(remaining) - 5} more" if len(remaining) > 5 else ""
            parts = [
                f"{len(remaining)} {crd.resource.qualified} remain"
                + (": " + ", ".join(waiting) + more if waiting else "")
            ]
            parts += conditions
            finalizers = (obj.get("metadata") or {}).get("finalizers") or []
            if finalizers and not remaining:
                parts.append(f"CRD finalizers {finalizers}")
            self._record(
                ("blocking", crd.name), Outcome(CRD_RESOURCE.display, crd.name, "blocking", message="; ".join(parts))
            )
        for ref in objects:
            item = self._get(ref)
            if item is not None:
                message = (
                    f"finalizers {item.finalizers}"
                    if item.finalizers
                    else "still terminating (no finalizers; waiting for the garbage collector?)"
                )
                self._record(("blocking",) + item.key, self._make(item, "blocking", item.finalizers, message))

    # --------------------------------------------------------------- helpers
    def _make(self, item: _Item, action, finalizers: list[str], message: str = "") -> Outcome:
        return Outcome(
            item.resource.display, item.name, action, item.namespace, list(finalizers), message, self.o.dry_run
        )

    def _record(self, key: tuple, outcome: Outcome, first_only: bool = False) -> None:
        """Keep one outcome per object; tell the listener when it changes. Thread-safe:
        deletes and existence checks run on the worker threads."""
        with self._lock:
            previous = self._outcomes.get(key)
            if previous is not None:
                if first_only or (previous.action == outcome.action and previous.finalizers == outcome.finalizers):
                    return
                if previous.action == "unfinalized" and outcome.action == "gone":
                    return
            self._outcomes[key] = outcome
            self._on_outcome(outcome)

    def _whoami(self) -> str:
        try:
            review = self.t.request(
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            )
            user = ((review.get("status") or {}).get("userInfo") or {}).get("username")
            return f"user {user!r} " if user else ""
        except ClusterError:
            return ""


_METADATA_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


def _item(resource: Resource, obj: dict) -> _Item:
    meta = obj.get("metadata") or {}
    managers = [
        entry.get("manager", "")
        for entry in meta.get("managedFields") or []
        if "f:finalizers" in ((entry.get("fieldsV1") or {}).get("f:metadata") or {})
    ]
    return _Item(
        resource=resource,
        name=meta.get("name", ""),
        namespace=meta.get("namespace") or None,
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        finalizers=list(meta.get("finalizers") or []),
        terminating=bool(meta.get("deletionTimestamp")),
        managers=[m for m in managers if m],
    )


def _outcome_for_ref(ref: ObjectRef, action, message: str, dry_run: DryRun) -> Outcome:
    return Outcome(ref.resource.display, ref.name, action, ref.namespace, message=message, dry_run=dry_run)


def _explain(exc: ApiError, verb: str, resource: Resource) -> str:
    if exc.status == 403:
        return f"forbidden: cannot {verb} {resource.qualified} (RBAC): {exc}"
    if exc.status in (400, 422) and "webhook" in str(exc):
        return f"rejected by an admission webhook: {exc}"
    return f"{exc.status} {exc.reason}: {exc}"
