"""RBAC preflight: ask before the first write, so a missing permission changes nothing.

One SelfSubjectAccessReview per (verb, resource, namespace), all at once; a name is asked
about only where that broad question was denied, since only resourceNames rules can
then still allow it.

Many resources of one API group (the CRDs of a crossplane provider: hundreds) are first
asked about together: one review per (verb, group, namespace) with resource "*". The
API server's RBAC authorizer allows that only for a rule whose resources hold "*" (a
literal match of "*" in its own words), and such a rule allows the verb on every
resource of the group: so an allowed "*" stands for each of them. Denied, each resource
is asked about on its own, as with a single one; a refusal still names the verb and
resource. (Another authorizer might allow "*" and refuse one resource; the preflight
only spares a run its first write, and the real request's 403 is then that object's
outcome.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..errors import PermissionDenied
from ..kube.port import Cluster
from ..model import CRD_RESOURCE, NAMESPACE_RESOURCE, Resource, Targets
from ..options import Options
from .workers import Mapper

Check = tuple[str, Resource, str | None, str | None]
GROUP_WIDE = 2  # resources of one group asked about with one review of resource "*", from this many


def plan_checks(targets: Targets, options: Options) -> list[Check]:
    """Every (verb, resource, namespace, name) the run may need."""
    writes = options.dry_run.sends_writes
    checks: list[Check] = []
    for crd in targets.crds:
        ns = options.namespace if crd.resource.namespaced else None
        checks.append(("list", crd.resource, ns, None))
        if writes:
            checks.append(("patch", crd.resource, ns, None))
            if options.delete:
                checks.append(("delete", crd.resource, ns, None))
                checks.append(("delete", CRD_RESOURCE, None, crd.name))
    for name in targets.namespaces:  # its contents: NamespaceAccess, per type, once discovered
        checks.append(("get", NAMESPACE_RESOURCE, None, name))
        if writes and options.delete:
            checks.append(("delete", NAMESPACE_RESOURCE, None, name))
    for ref in targets.objects:
        checks.append(("get", ref.resource, ref.namespace, ref.name))
        if writes:
            checks.append(("patch", ref.resource, ref.namespace, ref.name))
            if options.delete:
                checks.append(("delete", ref.resource, ref.namespace, ref.name))
    return list(dict.fromkeys(checks))


def preflight(cluster: Cluster, targets: Targets, options: Options, pool: Mapper) -> None:
    """Raise PermissionDenied naming the user, verb and resource of the first refusal."""
    checks = plan_checks(targets, options)
    broad = _broad(checks)
    denied = set(_denied_broad(cluster, broad, pool))
    narrow = [c for c in checks if c[3] is not None and (c[0], c[1], c[2], None) in denied]
    refused = [c for c in checks if c[3] is None and c in denied] + _denied(cluster, narrow, pool)
    if refused:
        verb, resource, namespace, name = refused[0]
        where = f"in namespace {namespace}" if namespace else "in all namespaces"
        if not resource.namespaced:
            where = "cluster-wide"
        target = f"{resource.qualified}/{name}" if name else resource.qualified
        user = cluster.whoami()
        who = f"user {user!r} " if user else ""
        raise PermissionDenied(f"forbidden: {who}cannot {verb} {target} {where} (RBAC); nothing was changed")


AHEAD_AT_MOST = 8  # reviews asked ahead, a thread and a connection each; more wait for the workers


def ask_ahead(cluster: Cluster, targets: Targets, options: Options) -> None:
    """Start the reviews the preflight will ask first, for `targets` as declared (the CRDs
    named or in manifests, not yet read): they are answered while the CRDs are read. A
    guess that proves wrong (a name that was not plural.group) costs a review, not a result."""
    broad = _broad(plan_checks(targets, options))
    whole = _group_wide(broad)
    first = list(whole) + [c for c in broad if (c[0], c[1].group, c[2]) not in whole.values()]
    if len(first) <= AHEAD_AT_MOST:
        for check in first:
            cluster.ask_ahead(*check)


def _broad(checks: list[Check]) -> list[Check]:
    return list(dict.fromkeys((verb, resource, ns, None) for verb, resource, ns, _ in checks))


def _group_wide(checks: list[Check]) -> dict[Check, tuple[str, str, str | None]]:
    """One review of resource "*" per (verb, group, namespace) with GROUP_WIDE checks or more."""
    groups: dict[tuple[str, str, str | None], list[Check]] = {}
    for check in checks:
        verb, resource, namespace, _ = check
        groups.setdefault((verb, resource.group, namespace), []).append(check)
    return {
        (verb, Resource(group, "", "*", "", namespace is not None), namespace, None): key
        for key, members in groups.items()
        if len(members) >= GROUP_WIDE
        for verb, group, namespace in [key]
    }


def _denied_broad(cluster: Cluster, checks: list[Check], pool: Mapper) -> list[Check]:
    """The broad checks refused: a group's many resources first by one review of "*"."""
    whole = _group_wide(checks)
    allowed = {whole[check] for check in whole} - {whole[check] for check in _denied(cluster, whole, pool)}
    return _denied(cluster, [c for c in checks if (c[0], c[1].group, c[2]) not in allowed], pool)


def _denied(cluster: Cluster, checks: Iterable[Check], pool: Mapper) -> list[Check]:
    """Those asked ahead are read here, not as the workers' jobs: a job that ends at once
    would tell the pacing the server is near (pacing.wake_at)."""
    checks = list(checks)
    ask: Callable[[Check], bool] = lambda check: cluster.allowed(*check)  # noqa: E731
    now = [c for c in checks if not cluster.asked_ahead(*c)]
    answers = dict(zip(now, pool.map(ask, now), strict=True))
    return [c for c in checks if not (answers[c] if c in answers else ask(c))]


class NamespaceAccess:
    """What one SelfSubjectRulesReview says the user may do in a namespace: a single
    request covers list and patch for every resource type found there. Only a complete
    review denies; an incomplete one (another authorizer may allow more) or none at all
    lets the real request decide. A rule limited to resourceNames counts as allowing:
    the request then says which objects it refuses."""

    def __init__(self, status: dict[str, Any] | None) -> None:
        self.known = status is not None and not status.get("incomplete")
        self.rules = list((status or {}).get("resourceRules") or [])

    @classmethod
    def review(cls, cluster: Cluster, namespace: str) -> NamespaceAccess:
        return cls(cluster.access_rules(namespace))

    def allows(self, verb: str, resource: Resource) -> bool:
        if not self.known:
            return True
        return any(
            _matches(rule.get("verbs"), verb)
            and _matches(rule.get("apiGroups"), resource.group)
            and _matches(rule.get("resources"), resource.plural)
            for rule in self.rules
        )


def _matches(values: list[str] | None, wanted: str) -> bool:
    return bool(values) and ("*" in values or wanted in values)  # type: ignore[operator]
