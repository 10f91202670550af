"""One type's list in `scan`: page by page, each page reduced to per-group tallies before
the next is read, so memory follows the number of groups, not of objects. What stops the
list is a line in the report (a 403, a 500) and, when the server names the objects it
cannot read from storage, each of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import finalizers
from ..errors import CorruptObjects, Forbidden, Unauthorized, UnfinalizeError
from ..kube import corrupt
from ..kube.paging import ListQuery
from ..lost_nodes import PODS
from ..model import CRD_RESOURCE, Resource
from . import chains, orphans
from .commands import corrupt_commands
from .model import CorruptObject
from .options import ScanOptions
from .port import ScanCluster
from .tally import Tally, timestamp

WRITERS = 200  # field managers followed per type
LINGERING = 200  # pods past their deletion deadline kept for lost.find


@dataclass
class TypeTally:
    """What the list of one type left: its groups' tallies and how many objects it had."""

    resource: Resource
    # (finalizer, terminating, orphaned: in a namespace that is gone)
    tallies: dict[orphans.Key, Tally] = field(default_factory=dict)
    total: int = 0
    terminating: dict[str, float] = field(default_factory=dict)  # CRDs only: name -> deletion
    names: set[str] = field(default_factory=set)  # CRDs only: every CRD name
    failure: str = ""
    failing: bool = False  # its list failed for a reason other than RBAC: the gate fails on it
    corrupt: list[CorruptObject] = field(default_factory=list)  # what the server cannot read (the list failed)
    writers: dict[str, str] = field(default_factory=dict)  # field manager -> its latest write of any object (RFC 3339)
    foreground: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # uid -> (namespace, name)
    links: list[chains.Link] = field(default_factory=list)  # held objects' blocking ownerReferences
    lingering: list[tuple[str, str]] = field(default_factory=list)  # pods only: past their deletion deadline


def list_type(
    cluster: ScanCluster, resource: Resource, options: ScanOptions, now: float, spaces: set[str] | None = None
) -> TypeTally:
    """`spaces`: the namespaces that exist (None: unknown); an object in another is orphaned."""
    listed = TypeTally(resource)
    query = ListQuery(namespace=options.namespace if resource.namespaced else None, limit=options.chunk_size)
    is_crd = resource.qualified == CRD_RESOURCE.qualified
    pods = resource.qualified == PODS.qualified
    try:
        for page in cluster.list_metadata(resource, query):
            listed.total += len(page)
            for meta in page:
                _tally(listed, meta, options, now, is_crd, spaces)
                if pods and meta.get("deletionTimestamp") and len(listed.lingering) < LINGERING:
                    _linger(listed, meta, now)
    except Forbidden:
        scope = f"in namespace {options.namespace}" if options.namespace and resource.namespaced else "cluster-wide"
        listed.failure = f"{resource.qualified}: forbidden: cannot list {resource.qualified} {scope} (RBAC)"
    except Unauthorized:
        raise  # rejected for good (kube.transport): no other type can be read either
    except CorruptObjects as exc:
        _corrupt(listed, exc)
        listed.failing = True
    except UnfinalizeError as exc:
        listed.failing = True
        hint = f"; {corrupt.without_gate_hint()}" if getattr(exc, "status", 0) == 500 else ""
        listed.failure = f"{resource.qualified}: cannot list: {exc}{hint}"
    return listed


def _corrupt(listed: TypeTally, exc: CorruptObjects) -> None:
    """The list failed whole on objects the server cannot read: each is named, and the
    type's other objects were not read at all."""
    resource = listed.resource
    found = corrupt.named(exc, resource)
    listed.corrupt = [
        CorruptObject(
            resource.qualified,
            ref.namespace,
            ref.name,
            said,
            corrupt_commands(resource.qualified, [(ref.namespace, ref.name)]),
        )
        for ref, said in found.said.items()
    ]
    more = "; the server names at most 100, and there are more" if found.more else ""
    listed.failure = (
        f"{resource.qualified}: its list fails on {len(found.said)} object(s) the API server cannot read from"
        f" storage (under corrupt){more}; its other objects were not read: {exc}"
    )


def _tally(
    listed: TypeTally, meta: dict[str, Any], options: ScanOptions, now: float, is_crd: bool, spaces: set[str] | None
) -> None:
    _writers(listed.writers, meta.get("managedFields"))
    deletion = timestamp(meta.get("deletionTimestamp"))
    if is_crd:
        listed.names.add(str(meta.get("name") or ""))
        if deletion is not None:
            listed.terminating[str(meta.get("name") or "")] = deletion
    held = meta.get("finalizers")
    if not held:
        return
    if deletion is None and not options.include_live:
        return
    if deletion is not None and now - deletion < options.older_than:
        return
    namespace = meta.get("namespace")
    if deletion is not None:
        _chain(listed, meta, held)
    orphaned = spaces is not None and bool(namespace) and namespace not in spaces
    for finalizer in held:
        if is_crd and finalizer == finalizers.CRD_CLEANUP:
            continue  # a Terminating CRD is reported as one, freed through its objects
        key = (str(finalizer), deletion is not None, orphaned)
        tally = listed.tallies.get(key)
        if tally is None:
            tally = listed.tallies[key] = Tally()
        tally.add(meta, deletion)


def _writers(latest: dict[str, str], entries: list[dict[str, Any]] | None) -> None:
    """Each field manager's latest write on the type: a controller writing other objects
    is alive (evidence.written_elsewhere). The server writes its times in one RFC 3339
    form, so they compare as text; the managers are bounded like a group's."""
    for entry in entries or ():
        name, when = entry.get("manager"), entry.get("time")
        if name and isinstance(when, str) and when > latest.get(name, ""):
            if name in latest or len(latest) < WRITERS:
                latest[name] = when


def _chain(listed: TypeTally, meta: dict[str, Any], held: list[str]) -> None:
    """What chains.link needs of a held object being deleted: its uid when foregroundDeletion
    holds it, its blocking ownerReferences."""
    if chains.FOREGROUND in held and meta.get("uid") and len(listed.foreground) < chains.KEPT:
        listed.foreground[str(meta["uid"])] = (meta.get("namespace") or None, str(meta.get("name") or ""))
    if meta.get("ownerReferences") and len(listed.links) < chains.KEPT:
        listed.links += chains.links(meta, listed.resource.qualified)


def _linger(listed: TypeTally, meta: dict[str, Any], now: float) -> None:
    """A pod past its deletion deadline: with no finalizer it is held only by its kubelet."""
    due = timestamp(meta.get("deletionTimestamp"))
    if due is not None and due <= now:
        listed.lingering.append((str(meta.get("namespace") or ""), str(meta.get("name") or "")))
