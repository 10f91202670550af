"""Manifest documents -> what they select: a CRD document its CRD, a Namespace document the
namespace's contents (as `ns NAME` does), any other document that one object, its type
found through discovery. Reads only."""

from __future__ import annotations

from typing import Any

from ..kube.discovery import Discovery
from ..kube.port import Cluster
from ..model import CRD, CRD_RESOURCE, CRD_RESOURCE_GROUP, ObjectRef, Resource, Targets
from ..options import Selection
from .crds import GET_AT_MOST, get_crd, list_crds
from .manifests import Document


def declared_crds(selection: Selection, documents: list[Document]) -> list[CRD]:
    """The CRDs a run names before any is read, as their names and manifests declare them:
    a full name is plural.group (a guess: it may be kind.group, or nothing), a manifest
    carries group, plural and scope. For asking ahead only; resolve() says what exists."""
    crds: list[CRD] = []
    for name in dict.fromkeys(n.lower() for n in selection.crds if "." in n):
        plural, _, group = name.partition(".")
        crds.append(CRD(name, Resource(group, "", plural, "", True)))
    for doc in documents:
        spec = doc.body.get("spec")
        if _is_crd(doc) and isinstance(spec, dict) and isinstance(spec.get("names"), dict):
            resource = Resource(
                str(spec.get("group", "")),
                "",
                str(spec["names"].get("plural", "")),
                "",
                spec.get("scope", "Namespaced") == "Namespaced",
            )
            crds.append(CRD(str(doc.body["metadata"]["name"]), resource))
    return crds


def resolve_documents(cluster: Cluster, documents: list[Document], namespace: str) -> Targets:
    """CRD documents select the CRD, Namespace documents the namespace's contents (as
    `ns NAME` does); any other document selects that one object."""
    targets = Targets()
    declared_namespaces = [
        doc.body["metadata"]["name"]
        for doc in documents
        if doc.body["kind"] == "Namespace" and doc.body["apiVersion"] == "v1"
    ]
    targets.namespaces = list(dict.fromkeys(declared_namespaces))  # one gone: the engine looks inside
    documents = [d for d in documents if not (d.body["kind"] == "Namespace" and d.body["apiVersion"] == "v1")]
    resolver = _KindResolver(cluster, {d.body["apiVersion"] for d in documents if not _is_crd(d)})
    crd_names = {d.body["metadata"]["name"] for d in documents if _is_crd(d)}
    listed = {c.name: c for c in list_crds(cluster)} if len(crd_names) > GET_AT_MOST else None
    seen_crds: set[str] = set()
    seen_objects: set[ObjectRef] = set()
    for doc in documents:
        body = doc.body
        api_version, kind, name = body["apiVersion"], body["kind"], body["metadata"]["name"]
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        if kind == "CustomResourceDefinition" and group == CRD_RESOURCE_GROUP:
            if name in seen_crds:
                continue
            seen_crds.add(name)
            crd = get_crd(cluster, name) if listed is None else listed.get(name)
            if crd is None:
                targets.missing.append(f"{CRD_RESOURCE.display}/{name}")
            else:
                targets.crds.append(crd)
            continue
        resource = resolver.resolve(api_version, kind)
        if resource is None:
            targets.missing.append(f"{Resource(group, '', '', kind, False).display}/{name}")
            continue
        ns = (body["metadata"].get("namespace") or namespace) if resource.namespaced else None
        ref = ObjectRef(resource, name, ns)
        if ref not in seen_objects:
            seen_objects.add(ref)
            targets.objects.append(ref)
    return targets


def _is_crd(doc: Document) -> bool:
    body = doc.body
    return bool(body["kind"] == "CustomResourceDefinition" and body["apiVersion"].startswith(CRD_RESOURCE_GROUP + "/"))


class _KindResolver:
    """apiVersion + kind -> Resource through discovery (served CRDs are listed there
    too, terminating ones included): one request per group version for a few of them,
    aggregated discovery (two requests) for more."""

    def __init__(self, cluster: Cluster, api_versions: set[str]) -> None:
        self.cluster = cluster
        self.cache: dict[str, list[dict[str, Any]] | None] = {}
        self.kinds: dict[tuple[str, str], Resource] | None = None
        if len(api_versions) > GET_AT_MOST:
            self.kinds = Discovery.from_groups(cluster.api_discovery()).kinds()

    def resolve(self, api_version: str, kind: str) -> Resource | None:
        if self.kinds is not None:
            return self.kinds.get((api_version, kind))
        group, _, version = api_version.rpartition("/")
        if api_version not in self.cache:
            self.cache[api_version] = self.cluster.discover(api_version)
        for entry in self.cache[api_version] or []:
            if entry.get("kind") == kind and "/" not in entry.get("name", ""):
                return Resource(group, version, entry["name"], kind, bool(entry.get("namespaced")))
        return None
