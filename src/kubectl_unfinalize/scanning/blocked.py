"""`blocked`: whether a group judged `working` is held by a controller that keeps writing
but says it cannot finish (refusals.py), from its objects' status conditions and the
Warning Events about them.

Only groups that would otherwise be `working` are looked at (survey.py asks before it
builds any Group, and evidence.judge gives the verdict once, with what was read here): the
others' verdicts need no more reads, and a stuck or pending one is held already. What it costs, per scan: one list
of Warning Events per namespace that holds such a group (fieldSelector type=Warning,
paginated, only those about the looked-at objects kept; Events about a cluster-scoped
object are recorded in `default`), and a GET of at most LOOKS objects per group, since
conditions are not in the metadata the lists read. A group is blocked when one of the
objects looked at is: that object can never go, so neither can the namespace it is in.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..errors import Unauthorized, UnfinalizeError
from ..kube.paging import ListQuery
from ..model import ObjectRef, Resource
from . import refusals
from .model import Blocking
from .options import ScanOptions
from .port import ScanCluster

EVENTS = Resource("", "v1", "events", "Event", True)
LOOKS = 10  # objects of a working group read whole
DEFAULT = "default"  # the namespace of Events about cluster-scoped objects

Key = tuple[str, str, str]  # the object's namespace ("" cluster-scoped), kind, name


@dataclass(frozen=True)
class Candidate:
    """A group judged working before its controller's words were read."""

    resource: Resource
    finalizer: str
    names: list[tuple[str | None, str]]

    @property
    def key(self) -> tuple[str, str]:
        return self.resource.qualified, self.finalizer


def look(
    cluster: ScanCluster, candidates: list[Candidate], options: ScanOptions, now: float, not_scanned: list[str]
) -> dict[tuple[str, str], Blocking]:
    """What blocks each candidate whose controller says it cannot finish, by its key."""
    if not candidates:
        return {}
    wanted: dict[str, set[Key]] = {}
    for group in candidates:
        for ns, name in group.names[:LOOKS]:
            wanted.setdefault(ns or DEFAULT, set()).add((ns or "", group.resource.kind, name))
    found: dict[tuple[str, str], Blocking] = {}
    with ThreadPoolExecutor(max(1, options.concurrency)) as pool:
        event_jobs = [pool.submit(_warnings, cluster, ns, keys, options.chunk_size) for ns, keys in wanted.items()]
        object_jobs = [pool.submit(_objects, cluster, g.resource, g.names) for g in candidates]
        events: dict[Key, list[dict[str, Any]]] = {}
        for job in event_jobs:
            said, failure = job.result()
            for key, items in said.items():
                events.setdefault(key, []).extend(items)
            if failure:
                not_scanned.append(failure)
        for group, read in zip(candidates, object_jobs, strict=True):
            objects, failure = read.result()
            if failure:
                not_scanned.append(failure)
            blocking = judge(group.resource.kind, objects, events, now, options.grace)
            if blocking is not None:
                found[group.key] = blocking
    return found


def _warnings(cluster: ScanCluster, namespace: str, keys: set[Key], chunk: int) -> tuple[dict[Key, list[Any]], str]:
    """The Warning Events of one namespace about `keys`, by key; a refusal is a line."""
    found: dict[Key, list[dict[str, Any]]] = {}
    query = ListQuery(namespace=namespace, field_selector="type=Warning", limit=chunk)
    try:
        for page in cluster.list_objects(EVENTS, query):
            for event in page:
                ns, kind, name, _ = refusals.about(event)
                if (ns, kind, name) in keys:
                    found.setdefault((ns, kind, name), []).append(event)
    except Unauthorized:
        raise
    except UnfinalizeError as exc:
        return found, f"evidence: cannot list Warning events in namespace {namespace}: {exc}"
    return found, ""


def _objects(
    cluster: ScanCluster, resource: Resource, names: list[tuple[str | None, str]]
) -> tuple[list[dict[str, Any]], str]:
    """The first LOOKS objects of the group, whole (those gone since the list are left out)."""
    found: list[dict[str, Any]] = []
    for ns, name in names[:LOOKS]:
        try:
            obj = cluster.get(ObjectRef(resource, name, ns))
        except Unauthorized:
            raise
        except UnfinalizeError as exc:
            return found, f"evidence: cannot read {resource.qualified} {name}: {exc}"
        if obj is not None:
            found.append(obj)
    return found, ""


def judge(
    kind: str, objects: list[dict[str, Any]], events: Mapping[Key, list[dict[str, Any]]], now: float, grace: float
) -> Blocking | None:
    """The refusal said longest among the objects that say one, and which objects do."""
    said: list[tuple[str, refusals.Refusal]] = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        refusal = refusals.of_object(obj, events.get((ns, kind, name), []), now, grace)
        if refusal is not None:
            said.append((f"{ns}/{name}" if ns else name, refusal))
    if not said:
        return None
    longest = max(said, key=lambda s: s[1].seconds)[1]
    names = [where for where, _ in said]
    return Blocking(
        longest.cause, longest.action, longest.message, longest.source, longest.seconds, names, len(objects)
    )


def names(blocking: Blocking) -> list[tuple[str | None, str]]:
    """The objects that say it, as the commands that free them name them."""
    return [(ns or None, name) for ns, _, name in (o.rpartition("/") for o in blocking.objects)]
