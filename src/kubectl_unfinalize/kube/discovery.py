"""Discovery: which types the server serves. Read from aggregated discovery
(apidiscovery.k8s.io/v2, two requests), or on an older server from each group version,
into typed entries, once, for every layer that asks: the TYPE words (resolve/types), a
namespace's contents (engine/namespace_reads) and the scan (scan/survey). Versions come
in the order the server lists them, the group's preferred one first."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import ApiError, NotFound
from ..model import Resource

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
Request = Callable[..., Any]


def group_version(request: Request, api_version: str) -> list[dict[str, Any]] | None:
    """The resources an API group version serves; None when it serves none."""
    path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    try:
        answer = request("GET", path)
    except NotFound:
        return None
    return list((answer or {}).get("resources") or [])


def read_groups(request: Request) -> list[dict[str, Any]]:
    """Every API group with its versions and resources, in the aggregated discovery
    format (apidiscovery.k8s.io/v2 APIGroupDiscovery; the core group is named "").
    Two requests on a server that aggregates discovery (1.30+); an older one answers
    the plain lists, and each group version is then read on its own (a 503 marks it
    "Stale", as aggregated discovery marks an unavailable APIService)."""
    groups: list[dict[str, Any]] = []
    for path in ("/api", "/apis"):
        answer = request("GET", path, accept=AGGREGATED) or {}
        if answer.get("kind") == "APIGroupDiscoveryList":
            for group in answer.get("items") or []:
                if path == "/api":
                    group = dict(group, metadata={"name": ""})
                groups.append(group)
        elif answer.get("kind") == "APIVersions":
            groups.append({"metadata": {"name": ""}, "versions": [_legacy(request, "", v) for v in answer["versions"]]})
        else:
            for group in answer.get("groups") or []:
                versions = [_legacy(request, group["name"], v["version"]) for v in group.get("versions") or []]
                groups.append({"metadata": {"name": group["name"]}, "versions": versions})
    return groups


def _legacy(request: Request, group: str, version: str) -> dict[str, Any]:
    """One group version from the pre-aggregation endpoint, as aggregated discovery shows it."""
    try:
        resources = group_version(request, f"{group}/{version}" if group else version)
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


def _names(legacy: dict[str, Any]) -> dict[str, Any]:
    """A legacy APIResource's other names, as aggregated discovery spells them (only those it has)."""
    keys = {"singularResource": "singularName", "shortNames": "shortNames", "categories": "categories"}
    return {key: legacy[old] for key, old in keys.items() if legacy.get(old)}


@dataclass(frozen=True)
class ServedType:
    """One resource at one version, as discovery names it."""

    resource: Resource
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    stale: bool = False  # its group version is unavailable now: listing it would fail

    @property
    def names(self) -> set[str]:
        r = self.resource
        return {n.lower() for n in (r.plural, self.singular, r.kind) if n}


@dataclass
class Discovery:
    """Every served type, preferred versions first within a group; and the group
    versions discovery could not answer for (an unavailable APIService)."""

    types: list[ServedType]
    unavailable: list[str]

    @classmethod
    def from_groups(cls, groups: Iterable[dict[str, Any]]) -> Discovery:
        types: list[ServedType] = []
        unavailable: list[str] = []
        for group in groups:
            name = str((group.get("metadata") or {}).get("name") or "")
            for version in group.get("versions") or []:
                gv = f"{name}/{version.get('version')}" if name else str(version.get("version"))
                if version.get("freshness") == "Stale":
                    unavailable.append(gv)
                for entry in version.get("resources") or []:
                    if served := _served(name, str(version.get("version") or ""), entry, gv in unavailable):
                        types.append(served)
        return cls(types, unavailable)

    def kinds(self) -> dict[tuple[str, str], Resource]:
        """(apiVersion, kind) -> resource: what a manifest document's header means."""
        found: dict[tuple[str, str], Resource] = {}
        for t in self.types:
            r = t.resource
            found.setdefault((f"{r.group}/{r.version}" if r.group else r.version, r.kind), r)
        return found

    def preferred(self, *verbs: str) -> list[ServedType]:
        """Each type once, at the first version its group lists (the preferred one) that
        is available now and serves every one of `verbs`: what can be listed (and patched)."""
        seen: set[tuple[str, str]] = set()
        found: list[ServedType] = []
        for t in self.types:
            key = (t.resource.group, t.resource.plural)
            if not t.stale and key not in seen and all(v in t.verbs for v in verbs):
                seen.add(key)
                found.append(t)
        return found

    def words(self) -> list[str]:
        """What completion offers for TYPE: kubectl api-resources -o name (plural, or plural.group)."""
        return sorted({t.resource.qualified for t in self.types})


def _served(group: str, version: str, entry: dict[str, Any], stale: bool) -> ServedType | None:
    plural = str(entry.get("resource") or "")
    if not plural or "/" in plural:
        return None  # a subresource: not a type a user names
    kind = str((entry.get("responseKind") or {}).get("kind") or plural)  # printed as kubectl prints it
    resource = Resource(group, version, plural, kind, entry.get("scope") == "Namespaced")
    return ServedType(
        resource,
        singular=str(entry.get("singularResource") or kind.lower()),
        short_names=tuple(str(s) for s in entry.get("shortNames") or ()),
        categories=tuple(str(c) for c in entry.get("categories") or ()),
        verbs=tuple(str(v) for v in entry.get("verbs") or ()),
        stale=stale,
    )
