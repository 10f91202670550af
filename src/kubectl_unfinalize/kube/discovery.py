"""Discovery: which types the server serves. Read from aggregated discovery
(apidiscovery.k8s.io/v2 from 1.30, v2beta1 in 1.27-1.29: two requests), or on an older
server from each group version, into typed entries, once, for every layer that asks:
the TYPE words (resolve/types), a namespace's contents (engine/namespace_reads) and the
scan (scan/survey). Versions come in the order the server lists them, the group's
preferred one first."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import ApiError, NoAnswer, NotFound
from ..model import Resource
from .retries import UNAVAILABLE

# client-go's order: the format a server knows best first, the plain lists last.
AGGREGATED = ",".join(
    [
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        "application/json",
    ]
)
# A group version is read once, with this bound: an aggregated API that is down answers
# 503 through the API server (or nothing), and waiting for it would hold up every type
# the server does serve; it is reported unavailable instead, as aggregated discovery does.
GROUP_VERSION_TIMEOUT = 5.0
LEGACY_THREADS = 4  # group versions read at once from a server without aggregated discovery
Request = Callable[..., Any]


def group_version(request: Request, api_version: str) -> list[dict[str, Any]] | None:
    """The resources an API group version serves; None when it serves none. An answer
    of 502/503/504, or none within GROUP_VERSION_TIMEOUT, is raised at once (ApiError,
    NoAnswer)."""
    path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    try:
        answer = request("GET", path, probe=GROUP_VERSION_TIMEOUT)
    except NotFound:
        return None
    return list((answer or {}).get("resources") or [])


def read_groups(request: Request) -> list[dict[str, Any]]:
    """Every API group with its versions and resources, in the aggregated discovery
    format (APIGroupDiscovery, v2 or v2beta1 alike; the core group is named "").
    Two requests on a server that aggregates discovery (1.27+); an older one answers
    the plain lists, and each group version is then read on its own, a few at once (one
    that is unavailable is marked "Stale", as aggregated discovery marks it)."""
    groups: list[dict[str, Any]] = []
    legacy: list[tuple[dict[str, Any], str, str]] = []  # (group, its name, a version to read)
    for path in ("/api", "/apis"):
        answer = request("GET", path, accept=AGGREGATED) or {}
        if answer.get("kind") == "APIGroupDiscoveryList":
            for group in answer.get("items") or []:
                if path == "/api":
                    group = dict(group, metadata={"name": ""})
                groups.append(group)
        elif answer.get("kind") == "APIVersions":
            groups.append(core := {"metadata": {"name": ""}, "versions": []})
            legacy += [(core, "", str(v)) for v in answer.get("versions") or []]
        else:
            for listed in answer.get("groups") or []:
                groups.append(group := {"metadata": {"name": listed["name"]}, "versions": []})
                legacy += [(group, listed["name"], str(v["version"])) for v in listed.get("versions") or []]
    if legacy:
        from concurrent.futures import ThreadPoolExecutor  # here: servers since 1.27 never need it

        with ThreadPoolExecutor(LEGACY_THREADS, thread_name_prefix="discovery") as pool:
            read = pool.map(lambda entry: _legacy(request, entry[1], entry[2]), legacy)
            for (group, _, _), version in zip(legacy, read, strict=True):  # in the server's order
                group["versions"].append(version)
    return groups


def _legacy(request: Request, group: str, version: str) -> dict[str, Any]:
    """One group version from the pre-aggregation endpoint, as aggregated discovery shows it."""
    try:
        resources = group_version(request, f"{group}/{version}" if group else version)
    except (ApiError, NoAnswer) as exc:
        if isinstance(exc, ApiError) and exc.status not in UNAVAILABLE:
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
