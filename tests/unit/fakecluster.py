"""An in-memory cluster behind the engine's Cluster verbs, for fast tests of the loop's
logic. It models only what the engine decides on: finalizers, deletionTimestamps, uids,
resourceVersions, and that a terminating object without finalizers is gone."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kubectl_unfinalize.cluster import Deleted, ListQuery
from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.errors import Conflict, Gone, NotFound
from kubectl_unfinalize.model import CRD, CRD_RESOURCE, NAMESPACE_RESOURCE, ObjectMeta, ObjectRef, Resource
from kubectl_unfinalize.options import DryRun

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

    def meta(self, ref: ObjectRef) -> ObjectMeta:
        return ObjectMeta(ref, self.uid, str(self.rv), tuple(self.finalizers), self.terminating)


Hook = Callable[[str, ObjectRef], None]


class FakeCluster:
    """`hooks` run before each verb (verb name, ref): raise there to inject a failure,
    or change the store to play another writer. `calls` records (verb, ref name)."""

    def __init__(self, page_size: int = 500) -> None:
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
                instances = [r for r in self.objects if r.resource == self.crds.get(ref.name)]
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

    def bulk(self, sink, cap):
        return None  # every patch goes through the verbs, where the fake records them

    def list_meta(self, resource: Resource, query: ListQuery) -> Iterator[list[ObjectMeta]]:
        self._call("list", ObjectRef(resource, resource.plural, query.namespace or None))
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
            yield [self.objects[r].meta(r) for r in refs[start : start + query.limit] if r in self.objects]

    def list_objects(self, resource: Resource, query: ListQuery) -> Iterator[list[dict[str, Any]]]:
        raise NotImplementedError

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
        stored = self.objects.get(ref)
        return None if stored is None else stored.meta(ref)

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        meta = self.get_meta(ref)
        return None if meta is None else {"metadata": {"name": ref.name, "finalizers": list(meta.finalizers)}}

    def delete(self, ref: ObjectRef, dry_run: DryRun) -> Deleted | None:
        assert dry_run is not DryRun.CLIENT, "a client dry run must not send a DELETE"
        self._call("delete", ref)
        stored = self.objects.get(ref)
        if stored is None:
            return None
        if dry_run is DryRun.SERVER:
            return Deleted(stored.uid, stored.meta(ref) if stored.finalizers else None)
        stored.terminating = True
        stored.rv += 1
        self._settle()
        return Deleted(stored.uid, stored.meta(ref) if ref in self.objects else None)

    def patch_finalizers(self, meta: ObjectMeta, keep: tuple[str, ...] | None, dry_run: DryRun) -> None:
        assert dry_run is not DryRun.CLIENT, "a client dry run must not send a PATCH"
        self._call("patch", meta.ref)
        stored = self.objects.get(meta.ref)
        if stored is None:
            raise NotFound(404, "NotFound", "not found")
        if keep is not None and str(stored.rv) != meta.resource_version:
            raise Conflict(409, "Conflict", "the object has been modified")
        if dry_run is DryRun.SERVER:
            return
        stored.finalizers = list(keep or [])
        stored.rv += 1
        self._settle()

    def allowed(self, verb: str, resource: Resource, namespace: str | None, name: str | None) -> bool:
        self.calls.append(("review", f"{verb} {resource.plural}"))
        return (verb, resource.plural) not in self.denied

    def whoami(self) -> str:
        return "tester"
