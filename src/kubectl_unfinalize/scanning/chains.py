"""Ownership chains: an owner deleted with propagationPolicy=Foreground carries
foregroundDeletion, which the garbage collector removes only when every dependent with
blockOwnerDeletion is gone. When a dependent is held by a dead operator's finalizer, the
owner never goes, and the two would read as unrelated groups; this links them, by the
collector's own rule: an ownerReference with the owner's uid and blockOwnerDeletion true,
in the owner's namespace (any namespace under a cluster-scoped owner). What listing.py
kept is bounded (a few hundred owners and dependents a type), so a chain past it is cut,
never wrong."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .model import Dependent, Group

FOREGROUND = "foregroundDeletion"
KEPT = 200  # owners, and dependents, kept per type
SHOWN = 3  # dependents named in a verdict


@dataclass(frozen=True)
class Link:
    """A held object's ownerReference that blocks its owner's deletion."""

    owner_uid: str
    resource: str
    namespace: str | None
    name: str
    finalizers: tuple[str, ...]


def links(meta: dict[str, Any], resource: str) -> list[Link]:
    """The blocking ownerReferences of one held object."""
    return [
        Link(str(ref.get("uid")), resource, meta.get("namespace") or None, str(meta.get("name") or ""), tuple(held))
        for ref in meta.get("ownerReferences") or ()
        if ref.get("blockOwnerDeletion") is True and ref.get("uid")
        for held in (meta.get("finalizers") or (),)
    ]


def link(groups: list[Group], owners: dict[str, tuple[str, str | None, str]], found: Iterable[Link]) -> None:
    """Give each foregroundDeletion group the dependents that block its objects, with the
    state of the group that holds each, and the commands of those groups. `owners`: uid ->
    (resource, namespace, name) of each object held by foregroundDeletion."""
    by_key = {(g.resource, g.finalizer): g for g in groups if g.terminating}
    for dependent in found:
        owner = owners.get(dependent.owner_uid)
        if owner is None:
            continue
        resource, namespace, _ = owner
        if namespace is not None and dependent.namespace != namespace:
            continue  # not the collector's dependent: a namespaced owner's are in its namespace
        chain = by_key.get((resource, FOREGROUND))
        if chain is None:
            continue
        holders = [by_key[(dependent.resource, f)] for f in dependent.finalizers if (dependent.resource, f) in by_key]
        state = holders[0].state.value if holders else "held"
        chain.dependents.append(
            Dependent(dependent.resource, dependent.namespace, dependent.name, list(dependent.finalizers), state)
        )
        for holder in holders:
            chain.commands += [c for c in holder.commands if c not in chain.commands]
    for chain in by_key.values():
        if chain.dependents:
            chain.dependents.sort(key=lambda d: (d.resource, d.namespace or "", d.name))
            chain.verdict += "; " + held_by(chain.dependents)


def held_by(dependents: list[Dependent]) -> str:
    count = len(dependents)
    shown = ", ".join(
        f"{d.resource} {d.namespace + '/' if d.namespace else ''}{d.name} ({', '.join(d.finalizers)}: {d.state})"
        for d in dependents[:SHOWN]
    )
    more = f" and {count - SHOWN} more" if count > SHOWN else ""
    return f"held by {count} dependent{'s' if count != 1 else ''} with blockOwnerDeletion: {shown}{more}"
