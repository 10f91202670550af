"""What to free from one scan, as calls of the public `unfinalize(...)`: pure, so the
rules are unit-tested on plain data.

The rules, the design's own: only objects already being deleted (`only_terminating`), only
the finalizers scan judged stuck (held past the grace, no controller seen: no write since
the deletion, no fresh Lease or kopf peer), never by deleting anything. A Kubernetes
controller's own finalizer (scan's `built-in`) only when the user named it, and then once it
held the deletion past the grace. One call per type (per namespace when namespaces are
narrowed), all of the type's stuck finalizers at once, so an object is patched once.

`settle` (at session start): a Terminating CRD whose objects are freed is also waited on
until it is gone (`delete=True` on a CRD already being deleted, its objects only touched
if being deleted), so the session's fixtures can create it again: a kept cluster's CRD
left Terminating by the last run refuses new objects until then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import Group, ScanReport, State
from .settings import Narrowing


@dataclass(frozen=True)
class Call:
    """Keyword arguments of one unfinalize(...) and the groups it frees."""

    kwargs: dict[str, Any]
    resource: str
    groups: tuple[Group, ...] = field(default=(), compare=False)


def freeable(group: Group, narrowing: Narrowing, grace: float) -> bool:
    if not group.terminating or not narrowing.covers(group):
        return False
    if group.state is State.STUCK:
        return True
    named = group.finalizer in narrowing.finalizers
    return group.state is State.BUILTIN and named and group.oldest_seconds > grace


def plan(report: ScanReport, narrowing: Narrowing, grace: float, settle: bool = False) -> list[Call]:
    by_resource: dict[str, list[Group]] = {}
    for group in report.groups:
        if freeable(group, narrowing, grace):
            by_resource.setdefault(group.resource, []).append(group)
    going = {crd.name for crd in report.crds} if settle else set()
    calls: list[Call] = []
    for resource, groups in sorted(by_resource.items()):
        calls += _calls(resource, groups, narrowing, going)
    return calls


def _calls(resource: str, groups: list[Group], narrowing: Narrowing, going: set[str]) -> list[Call]:
    finalizers = sorted({g.finalizer for g in groups})
    first = groups[0]
    common: dict[str, Any] = {"finalizers": finalizers}
    if first.crd:  # the CRD sweep lists every object of the type (paginated), not only the names scan kept
        if not narrowing.namespaces:
            if first.crd in going:
                common["delete"] = True
            return [Call({"crds": [first.crd], "only_terminating": True, **common}, resource, tuple(groups))]
        spaces = sorted({ns for g in groups for ns in narrowing.in_namespaces(g)})
        return [
            Call({"crds": [first.crd], "namespace": ns, "only_terminating": True, **common}, resource, tuple(groups))
            for ns in spaces
        ]
    names = sorted({pair for g in groups for pair in narrowing.names(g)}, key=lambda p: (p[0] or "", p[1]))
    if resource == "namespaces":  # their own metadata.finalizers, and the same finalizers inside them
        return [Call({"namespaces": [name for _, name in names], **common}, resource, tuple(groups))]
    by_namespace: dict[str | None, list[str]] = {}
    for ns, name in names:
        by_namespace.setdefault(ns, []).append(name)
    return [
        Call(
            {"resource": resource, "names": by_namespace[ns], "namespace": ns, "only_terminating": True, **common},
            resource,
            tuple(groups),
        )
        for ns in sorted(by_namespace, key=lambda n: n or "")
    ]
