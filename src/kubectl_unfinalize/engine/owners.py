"""Owners held by foregroundDeletion or orphan. An owner deleted with propagationPolicy=Foreground
(`kubectl delete --cascade=foreground`, Argo CD's default) carries that finalizer until the
garbage collector has seen every dependent with blockOwnerDeletion go; the tool leaves it to
the collector, so a run that selected such an owner would otherwise end without saying why
it stands. At a run's end each one still there is read again, its dependents found by the
collector's own rule (an ownerReference with its uid and blockOwnerDeletion: true, in its
namespace, or in any namespace under a cluster-scoped owner), and named with what holds
each and the command that frees them. Reads only.

An owner with no dependent left is given a few seconds to go: the collector removes the
finalizer moments after the last dependent goes, often during this very run. An owner held
by `orphan` (propagationPolicy=Orphan) is given the same time: the collector removes it
once it has taken the owner out of its dependents' ownerReferences; still there, the
collector is named.
"""

from __future__ import annotations

import time

from ..deadline import Deadline
from ..errors import UnfinalizeError
from ..finalizers import KCM
from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..model import STILL_BLOCKING, Action, ObjectMeta, Resource
from . import namespace_reads
from .outcomes import OutcomeBook
from .sightings import FOREGROUND, KEPT, ORPHAN

SHOWN = 5  # dependents named per owner
SETTLE = 10.0  # seconds an owner with no dependent left is given to go
COLLECTOR = f"the garbage collector ({KCM})"
ORPHANING = (
    f"held by {ORPHAN} (deleted with propagationPolicy=Orphan): {COLLECTOR} removes it once it has taken this owner"
    " out of its dependents' ownerReferences, and has not: is the garbage collector running, and may it update"
    " the dependents (an admission webhook that refuses it)? This tool never removes it unless --finalizer names it"
)


def report(
    cluster: Cluster,
    book: OutcomeBook,
    owners: list[ObjectMeta],
    deadline: Deadline,
    settle: float | None = None,
    said_gone: bool = False,
) -> None:
    """Name what holds each owner still held by foregroundDeletion (a BLOCKING outcome).
    `said_gone` (--with-dependents, which freed their dependents): an owner that went while
    it was waited on is said gone, as the read that found it gone saw."""
    types: list[Resource] | None = None
    settle = SETTLE if settle is None else settle
    for owner in owners[:KEPT]:
        try:
            now = _held(cluster, owner)
            if now is None:
                continue
            if FOREGROUND not in now.finalizers:  # orphan: no dependent blocks it, the collector alone
                if (now := _settled(cluster, owner, deadline, settle)) is not None:
                    book.add(owner.ref, Action.BLOCKING, now.finalizers, ORPHANING, aspect=STILL_BLOCKING)
                continue
            if types is None:
                types = namespace_reads.discover(cluster).resources
            dependents = _dependents(cluster, types, owner)
            if not dependents and (now := _settled(cluster, owner, deadline, settle)) is None:
                if said_gone:
                    book.add(owner.ref, Action.GONE, message=f"deleted by {COLLECTOR} once its dependents went")
                continue
        except UnfinalizeError as exc:
            message = f"held by {FOREGROUND}; cannot tell which dependents hold it: {exc}"
            book.add(owner.ref, Action.BLOCKING, owner.finalizers, message, aspect=STILL_BLOCKING)
            continue
        book.add(owner.ref, Action.BLOCKING, now.finalizers, _said(dependents), aspect=STILL_BLOCKING)


def dependents_of(cluster: Cluster, owners: list[ObjectMeta]) -> list[ObjectMeta]:
    """The dependents that block the owners still held by foregroundDeletion (each once):
    what --with-dependents judges and frees."""
    found: dict[str, ObjectMeta] = {}
    types: list[Resource] | None = None
    for owner in owners[:KEPT]:
        try:
            if (now := _held(cluster, owner)) is None or FOREGROUND not in now.finalizers:
                continue  # gone, or held by orphan: its dependents are kept, not freed
            types = types if types is not None else namespace_reads.discover(cluster).resources
            found.update((m.uid, m) for m in _dependents(cluster, types, owner))
        except UnfinalizeError:
            continue  # report() names it, with what failed
    return list(found.values())


def _held(cluster: Cluster, owner: ObjectMeta) -> ObjectMeta | None:
    now = cluster.get_meta(owner.ref)
    if now is None or now.uid != owner.uid or not (FOREGROUND in now.finalizers or ORPHAN in now.finalizers):
        return None
    return now


def _settled(cluster: Cluster, owner: ObjectMeta, deadline: Deadline, settle: float) -> ObjectMeta | None:
    """The owner if it is still held after `settle` seconds (within the deadline), else None."""
    until = time.monotonic() + min(settle, max(0.0, deadline.remaining()))
    while (now := _held(cluster, owner)) is not None and time.monotonic() < until:
        time.sleep(0.5)
    return now


def _dependents(cluster: Cluster, types: list[Resource], owner: ObjectMeta) -> list[ObjectMeta]:
    """The dependents that block `owner`, of the namespaced types that can be listed."""
    found: list[ObjectMeta] = []
    query = ListQuery(namespace=owner.ref.namespace)
    for resource in types:
        try:
            for page in cluster.list_meta(resource, query):
                found += [meta for meta in page if owner.uid in meta.blocks]
        except UnfinalizeError:
            continue  # a type that cannot be listed hides nothing the message claims: it names what it found
    return sorted(found, key=lambda m: (m.ref.resource.qualified, m.ref.namespace or "", m.ref.name))


def _said(dependents: list[ObjectMeta]) -> str:
    if not dependents:
        return (
            f"held by {FOREGROUND} with no dependent left that blocks it: {COLLECTOR} removes it;"
            " if it stays, is the garbage collector running?"
        )
    count = len(dependents)
    named = ", ".join(
        f"{m.ref.resource.qualified} {m.ref.namespace + '/' if m.ref.namespace else ''}{m.ref.name}"
        f" ({'finalizers ' + ', '.join(m.finalizers) if m.finalizers else 'no finalizers'})"
        for m in dependents[:SHOWN]
    )
    more = f" and {count - SHOWN} more" if count > SHOWN else ""
    commands = "; ".join(_commands(dependents[:SHOWN]))
    return (
        f"held by {FOREGROUND}: {COLLECTOR} deletes it once its {count} dependent{'s' if count != 1 else ''}"
        f" with blockOwnerDeletion {'is' if count == 1 else 'are'} gone: {named}{more}; free them: {commands}"
    )


def _commands(dependents: list[ObjectMeta]) -> list[str]:
    by_place: dict[tuple[str, str | None], list[str]] = {}
    for meta in dependents:
        by_place.setdefault((meta.ref.resource.qualified, meta.ref.namespace), []).append(meta.ref.name)
    return [
        f"kubectl unfinalize {resource} {' '.join(names)}" + (f" -n {namespace}" if namespace else "")
        for (resource, namespace), names in sorted(by_place.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
    ]
