"""What the user named -> CRDs and objects that exist in the cluster (reads only).

Names are matched the way kubectl matches resource names, but only against CRDs: the
full CRD name, plural, singular, kind or short name, each optionally followed by
`.group`. A few full CRD names are read by GET; more of them, and other spellings, list
the CRDs once, page by page, keeping just their names (GET_AT_MOST says why). Ambiguity
and no match are input errors that list the candidates. `crd --category` selects from
that list too. Other resource types are named_objects.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import InputError
from ..kube.cluster import Cluster, ListQuery, crd_ref, namespace_ref
from ..kube.discovery import Discovery
from ..model import CRD, CRD_RESOURCE, CRD_RESOURCE_GROUP, NAMESPACE_RESOURCE, ObjectRef, Resource, Targets
from ..options import Selection
from .manifests import Document


def resolve(cluster: Cluster, selection: Selection, documents: list[Document], namespace: str) -> Targets:
    """Turn what the user named into existing CRDs and objects. `namespace` is where
    manifest objects without one live (the kubeconfig's, or -n)."""
    targets = Targets()
    if selection.crds:
        targets.crds = resolve_names(cluster, list(selection.crds))
        if selection.group:
            targets.crds = [c for c in targets.crds if c.resource.group == selection.group]
    elif selection.group or selection.crd_selector or selection.categories:
        crds = list_crds(cluster, selection.crd_selector)
        targets.crds = [c for c in crds if not selection.group or c.resource.group == selection.group]
    if selection.categories:
        targets.crds = [c for c in targets.crds if in_categories(c, selection.categories)]
    if selection.namespaces:
        targets.namespaces, targets.missing = existing_namespaces(cluster, selection.namespaces)
    elif selection.namespace_selector:
        query = ListQuery(label_selector=selection.namespace_selector)
        targets.namespaces = [m.ref.name for page in cluster.list_meta(NAMESPACE_RESOURCE, query) for m in page]
    if documents:
        declared = resolve_documents(cluster, documents, namespace)
        known = {c.name for c in targets.crds}
        targets.crds += [c for c in declared.crds if c.name not in known]
        targets.objects = declared.objects
        targets.missing += declared.missing
        targets.namespaces += [n for n in declared.namespaces if n not in targets.namespaces]
    if selection.resource or selection.objects:
        from .named_objects import resolve_named_objects  # it builds on this module's readers

        resolve_named_objects(cluster, selection, namespace, targets)
    return targets


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


def in_categories(crd: CRD, categories: Iterable[str]) -> bool:
    """kubectl get CATEGORY: every type that lists the category, whatever else it lists."""
    return any(c in crd.categories for c in categories)


def existing_namespaces(cluster: Cluster, names: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the namespaces that exist, "namespace/NAME" for those that do not): one
    metadata-only GET each. A namespace already gone is skipped, not an error: the
    teardown it was named in has nothing left to do there."""
    found: list[str] = []
    missing: list[str] = []
    for name in dict.fromkeys(names):
        if cluster.get_meta(namespace_ref(name)) is None:
            missing.append(f"{NAMESPACE_RESOURCE.display}/{name}")
        else:
            found.append(name)
    return found, missing


def list_crds(cluster: Cluster, label_selector: str | None = None, chunk_size: int = 500) -> list[CRD]:
    """Every CRD, reduced page by page to its names: schemas never pile up."""
    return [crd_from_object(obj) for page in _crd_pages(cluster, label_selector, chunk_size) for obj in page]


def _crd_pages(cluster: Cluster, label_selector: str | None, chunk_size: int) -> Iterator[list[dict[str, Any]]]:
    return cluster.list_objects(CRD_RESOURCE, ListQuery(label_selector=label_selector, limit=chunk_size))


def get_crd(cluster: Cluster, name: str) -> CRD | None:
    obj = cluster.get(crd_ref(name))
    return None if obj is None else crd_from_object(obj)


def crd_from_object(obj: dict[str, Any]) -> CRD:
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    versions = spec.get("versions") or []
    served = [v for v in versions if v.get("served", True)] or versions
    storage = next((v for v in served if v.get("storage")), served[0] if served else {"name": "v1"})
    resource = Resource(
        group=spec.get("group", ""),
        version=storage["name"],
        plural=names.get("plural", ""),
        kind=names.get("kind", ""),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
    )
    return CRD(
        name=(obj.get("metadata") or {}).get("name", ""),
        resource=resource,
        singular=names.get("singular") or names.get("kind", "").lower(),
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(str(c).lower() for c in names.get("categories") or ()),
    )


def _aliases(crd: CRD) -> set[str]:
    r = crd.resource
    return {a.lower() for a in (r.plural, crd.singular, r.kind, *crd.short_names) if a}


def match_name(name: str, crds: Iterable[CRD]) -> list[CRD]:
    """Every CRD `name` could mean; the caller decides what 0 or >1 matches mean."""
    crds = list(crds)
    wanted = name.lower()
    exact = [c for c in crds if c.name.lower() == wanted]
    if exact:
        return exact
    found = [c for c in crds if wanted in _aliases(c)]
    if "." in wanted:
        head, _, group = wanted.partition(".")
        # kubectl also accepts resource.version.group
        version, _, rest = group.partition(".")
        for crd in crds:
            g = crd.resource.group.lower()
            if head in _aliases(crd) and (g == group or (g == rest and version == crd.resource.version)):
                found.append(crd)
    unique = {c.name: c for c in found}
    return list(unique.values())


GET_AT_MOST = 3
"""Up to this many CRDs named exactly are read one GET each; more, by one list of every
CRD (page by page). A GET is a round trip carrying one CRD; the list is a round trip per
500 CRDs but carries every CRD of the cluster, schemas included (hundreds of crossplane
CRDs weigh tens of MB), so it pays only once a selection names more than a few: an
operator's test teardown names 1-3, a chart's CRD folder or a provider's group hundreds.
The same bound decides between per-group-version discovery and aggregated discovery."""


def resolve_names(cluster: Cluster, names: list[str]) -> list[CRD]:
    """A name with a dot may be the CRD's own name: one GET answers it, while there are
    few. Anything else needs the list of CRDs, fetched once for all such names."""
    selected: dict[str, CRD] = {}
    listed: list[CRD] | None = None
    if len({n.lower() for n in names if "." in n}) > GET_AT_MOST:
        listed = list_crds(cluster)
    for name in names:
        crd = get_crd(cluster, name.lower()) if "." in name and listed is None else None
        if crd is not None:
            selected.setdefault(crd.name, crd)
            continue
        if listed is None:
            listed = list_crds(cluster)
        matches = match_name(name, listed)
        if not matches:
            raise InputError(_unknown(name, listed))
        if len(matches) > 1:
            shown = ", ".join(sorted(c.name for c in matches))
            raise InputError(f"{name!r} is ambiguous: it matches {shown}; use the full CRD name")
        selected.setdefault(matches[0].name, matches[0])
    return list(selected.values())


def _unknown(name: str, crds: list[CRD]) -> str:
    vocabulary = sorted({c.name for c in crds} | {a for c in crds for a in _aliases(c)})
    import difflib  # only to suggest a name: most runs never need it

    close = difflib.get_close_matches(name.lower(), vocabulary, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"no CustomResourceDefinition matches {name!r}{hint}"


def resolve_documents(cluster: Cluster, documents: list[Document], namespace: str) -> Targets:
    """CRD documents select the CRD, Namespace documents the namespace's contents (as
    `ns NAME` does); any other document selects that one object."""
    targets = Targets()
    declared_namespaces = [
        doc.body["metadata"]["name"]
        for doc in documents
        if doc.body["kind"] == "Namespace" and doc.body["apiVersion"] == "v1"
    ]
    targets.namespaces, targets.missing = existing_namespaces(cluster, declared_namespaces)
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
