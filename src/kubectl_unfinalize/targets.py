"""What the user named -> CRDs and objects that exist in the cluster.

Names are matched the way kubectl matches resource names, but only against CRDs:
the full CRD name, plural, singular, kind or short name, each optionally followed by
`.group`. Ambiguity and no match are input errors that list the candidates.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from .errors import ApiError, InputError
from .manifests import Document
from .model import CRD, CRD_RESOURCE, CRD_RESOURCE_GROUP, ObjectRef, Resource, Targets
from .transport import Transport


def list_crds(transport: Transport, label_selector: str | None = None, chunk_size: int = 500) -> list[CRD]:
    items: list[dict] = []
    token = None
    while True:
        query = {"labelSelector": label_selector, "limit": chunk_size, "continue": token}
        page = transport.request("GET", CRD_RESOURCE.path(), query=query)
        items += page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return [crd_from_object(item) for item in items]


def crd_from_object(obj: dict) -> CRD:
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
    meta = obj.get("metadata") or {}
    return CRD(
        name=meta.get("name", ""),
        resource=resource,
        singular=names.get("singular") or names.get("kind", "").lower(),
        short_names=tuple(names.get("shortNames") or ()),
        terminating=bool(meta.get("deletionTimestamp")),
        conditions=list((obj.get("status") or {}).get("conditions") or []),
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


def resolve_names(names: list[str], crds: list[CRD]) -> list[CRD]:
    selected: dict[str, CRD] = {}
    for name in names:
        matches = match_name(name, crds)
        if not matches:
            raise InputError(_unknown(name, crds))
        if len(matches) > 1:
            listed = ", ".join(sorted(c.name for c in matches))
            raise InputError(f"{name!r} is ambiguous: it matches {listed}; use the full CRD name")
        selected.setdefault(matches[0].name, matches[0])
    return list(selected.values())


def _unknown(name: str, crds: list[CRD]) -> str:
    vocabulary = sorted({c.name for c in crds} | {a for c in crds for a in _aliases(c)})
    close = difflib.get_close_matches(name.lower(), vocabulary, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"no CustomResourceDefinition matches {name!r}{hint}"


def resolve_documents(transport: Transport, documents: list[Document], crds: list[CRD], namespace: str) -> Targets:
    """CRD documents select the CRD; any other document selects that one object."""
    by_name = {c.name: c for c in crds}
    targets = Targets()
    resolver = _KindResolver(transport, crds)
    seen: set[tuple] = set()
    for doc in documents:
        body = doc.body
        api_version, kind, name = body["apiVersion"], body["kind"], body["metadata"]["name"]
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        if kind == "CustomResourceDefinition" and group == CRD_RESOURCE_GROUP:
            crd = by_name.get(name)
            if crd is None:
                targets.missing.append(f"customresourcedefinition.{CRD_RESOURCE_GROUP}/{name}")
            elif name not in seen:
                seen.add(name)
                targets.crds.append(crd)
            continue
        resource = resolver.resolve(api_version, kind)
        display = f"{kind.lower()}.{group}" if group else kind.lower()
        if resource is None:
            targets.missing.append(f"{display}/{name}")
            continue
        ns = (body["metadata"].get("namespace") or namespace) if resource.namespaced else None
        ref = ObjectRef(resource, name, ns)
        if ref not in seen:
            seen.add(ref)
            targets.objects.append(ref)
    return targets


class _KindResolver:
    """apiVersion + kind -> Resource, from the CRD list first, then discovery."""

    def __init__(self, transport: Transport, crds: list[CRD]) -> None:
        self.transport = transport
        self.cache: dict[str, list[dict] | None] = {}
        self.crds = {(c.resource.group, c.resource.kind): c for c in crds}

    def resolve(self, api_version: str, kind: str) -> Resource | None:
        group, _, version = api_version.rpartition("/")
        crd = self.crds.get((group, kind))
        if crd is not None:
            r = crd.resource
            return Resource(r.group, version or r.version, r.plural, r.kind, r.namespaced)
        for entry in self._discover(api_version) or []:
            if entry.get("kind") == kind and "/" not in entry.get("name", ""):
                return Resource(group, version, entry["name"], kind, bool(entry.get("namespaced")))
        return None

    def _discover(self, api_version: str) -> list[dict] | None:
        if api_version not in self.cache:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            try:
                self.cache[api_version] = self.transport.request("GET", path).get("resources") or []
            except ApiError as exc:
                if exc.status != 404:
                    raise
                self.cache[api_version] = None
        return self.cache[api_version]
