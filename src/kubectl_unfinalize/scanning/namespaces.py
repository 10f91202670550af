"""Terminating namespaces for `scan`: the namespace controller's conditions, what inside
is stuck, and the unavailable APIServices (while one cannot be discovered, the namespace
controller finishes no namespace at all)."""

from __future__ import annotations

from typing import Any

from ..durations import ago
from ..errors import UnfinalizeError
from ..kube.paging import ListQuery
from ..kube.status import true_conditions
from ..model import NAMESPACE_RESOURCE, namespace_ref
from .commands import namespace_commands
from .model import Group, LostPod, TerminatingNamespace
from .options import ScanOptions
from .port import ScanCluster
from .tally import timestamp

NAMESPACE_PATIENCE = 300.0  # Terminating this long is stuck, whatever the conditions say


def terminating_namespaces(
    cluster: ScanCluster,
    options: ScanOptions,
    now: float,
    groups: list[Group],
    apiservices: list[str],
    not_scanned: list[str],
    lost: list[LostPod] | None = None,
) -> list[TerminatingNamespace]:
    try:
        if options.namespace:
            one = cluster.get(namespace_ref(options.namespace))
            objects: list[dict[str, Any]] = [one] if one else []
        else:
            objects = [obj for page in cluster.list_objects(NAMESPACE_RESOURCE, ListQuery()) for obj in page]
    except UnfinalizeError as exc:
        not_scanned.append(f"namespaces: cannot read: {exc}")
        return []
    found = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        deletion = timestamp(meta.get("deletionTimestamp"))
        if deletion is None or now - deletion < options.older_than:
            continue
        found.append(judge(obj, now - deletion, groups, apiservices, options.grace, lost or []))
    return sorted(found, key=lambda n: n.name)


def judge(
    obj: dict[str, Any],
    seconds: float,
    groups: list[Group],
    apiservices: list[str],
    grace: float,
    lost: list[LostPod] | None = None,
) -> TerminatingNamespace:
    """A namespace that only pods on a lost node hold is neither pending nor stuck: it will
    not go on its own, and `ns NAME --delete` cannot end it (no finalizer holds the pods);
    its verdict names them, and their remedy is printed with them."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    pods = [p for p in lost or [] if p.namespace == name]
    conditions = true_conditions(obj)
    inside = [g for g in groups if g.terminating and name in g.namespaces]
    stuck_inside = [g for g in inside if g.stuck]
    reasons = [c.split(":", 1)[0] for c in conditions]
    reasons += [f"APIService {a} unavailable" for a in apiservices]
    reasons += [f"{g.count} {g.resource} held by {g.finalizer}" for g in stuck_inside]
    if meta.get("finalizers"):
        reasons.append(f"finalizers {list(meta['finalizers'])}")
    waited = ago(seconds)
    stuck = pending = False
    if pods:
        on = ", ".join(sorted({f"{p.name} on {p.node}" for p in pods}))
        reasons.append(f"{len(pods)} pods on a lost node ({on})")
    if pods and not (stuck_inside or apiservices or meta.get("finalizers")):
        verdict = f"lost node: Terminating for {waited}; " + reasons[-1]
    elif seconds > grace and (reasons or seconds > NAMESPACE_PATIENCE):
        if inside and not stuck_inside and not apiservices and seconds <= NAMESPACE_PATIENCE:
            word = "blocked" if any(g.blocked for g in inside) else "working"
            verdict = f"{word}: Terminating for {waited}; " + ", ".join(g.verdict for g in inside)
        else:
            verdict, stuck = f"stuck: Terminating for {waited}" + "".join(f"; {r}" for r in reasons), True
    else:
        verdict, pending = f"pending: Terminating for {waited}", True
    return TerminatingNamespace(
        name=name,
        seconds=seconds,
        conditions=conditions,
        finalizers=list(meta.get("finalizers") or []),
        apiservices=list(apiservices),
        verdict=verdict,
        stuck=stuck,
        commands=namespace_commands(name, apiservices) if stuck or pending else [],
        pending=pending,
    )
