"""CRDs by what the user typed: the full CRD name, plural, singular, kind or short name,
each optionally followed by `.group`, matched the way kubectl matches resource names but
only against CRDs. A few full CRD names are read by GET; more of them, and other
spellings, list the CRDs once, page by page, keeping just their names (GET_AT_MOST says
why). Ambiguity and no match are input errors that list the candidates. Reads only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import InputError
from ..kube.discovery import ServedType
from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import CRD, CRD_RESOURCE, Resource, crd_ref
from .types import did_you_mean, match_type


def in_categories(crd: CRD, categories: Iterable[str]) -> bool:
    """kubectl get CATEGORY: every type that lists the category, whatever else it lists."""
    return any(c in crd.categories for c in categories)


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
    """Every CRD `name` could mean: its full name, else what kubectl would take it for
    among the CRDs' types (resolve/types.py's rules); the caller decides what 0 or >1 mean."""
    crds = list(crds)
    exact = [c for c in crds if c.name.lower() == name.strip().lower()]
    if exact:
        return exact
    by_type = {(c.resource.group, c.resource.plural): c for c in crds}
    served = [ServedType(c.resource, c.singular, c.short_names, c.categories) for c in crds]
    return [by_type[(t.resource.group, t.resource.plural)] for t in match_type(name, served)]


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
    hint = did_you_mean(name, {c.name for c in crds} | {a for c in crds for a in _aliases(c)})
    return f"no CustomResourceDefinition matches {name!r}{hint}"
