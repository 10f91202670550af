"""What to free from one scan, as calls of the public `unfinalize(...)` (a Selection and the
few options a call sets, typed): pure, so the rules are unit-tested on plain data. `scan
--free`, Python `scan(free=True)` and the pytest plugin's free and strict modes all free
through this plan (and api's free run).

The rules, the design's own: only objects already being deleted (`only_terminating`), only
the finalizers scan judged stuck (held past the grace, no controller seen: no write since
the deletion, no fresh Lease or kopf peer), never by deleting anything the user had not
deleted. A blocked group (a live controller that says it cannot finish) only when asked
(`include_blocked`). A Kubernetes controller's own finalizer (scan's `built-in`) only
when the user named it, and then once it held the deletion past the grace. One call per
type (per namespace when namespaces are narrowed), all of the type's stuck finalizers at
once, so an object is patched once.

A stuck Terminating namespace is freed through what holds it: its stuck groups inside and
its own stuck metadata.finalizers. When every group held inside is one this plan frees, it
is also `ns NAME --delete --finalizer F...` (F: those groups' finalizers), which waits
until it is gone, so the scan after it finds it gone rather than Terminating for a moment
more; otherwise (a working controller's objects inside too) never, since that would free
that controller's finalizer where it shares F. An unavailable APIService is named, never
deleted.
Objects left in a namespace that is gone (scan's `orphaned`) are freed through that
namespace, as their printed command: `ns NAME --delete`, every finalizer, not only on
objects being deleted (the namespace's deletion was asked for already; everything left
in it is what that deletion left). The run creates the namespace again to free them and
deletes it again (engine/revival.py).
A stuck Terminating CRD that no group of objects explains (objects without finalizers,
a dead conversion webhook) gets `crd NAME --delete`, as its printed command.

Pods a lost node holds (no finalizer holds them) are force-deleted only when asked
(`force_lost_pods`, scan --free --force-lost-pods), as `pods NAME... -n NS
--force-lost-pods`: each judged again before its delete. The janitor and the pytest
plugin never ask.

`settle`: a Terminating CRD whose objects are freed is also waited on until it is gone
(`delete=True` on a CRD already being deleted, its objects only touched if being
deleted), so what comes next (a session's fixtures) can create it again: a CRD left
Terminating refuses new objects until then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from ..options import DryRun, Options, Selection
from .model import Group, State, TerminatingCrd, TerminatingNamespace
from .report import ScanReport


def api_group(group: Group) -> str:
    """`example.com` of `example.com/v1`; "" for the core group (`v1`)."""
    return group.api_version.rsplit("/", 1)[0] if "/" in group.api_version else ""


@dataclass(frozen=True)
class Scope:
    """What may be freed; empty: everything scan reported. `namespaces` and `groups` are
    shell patterns (a namespace pattern leaves cluster-scoped objects out),
    `exclude_namespaces` too (cluster-scoped objects stay in), `finalizers` names (the
    only way in for a built-in controller's finalizer)."""

    namespaces: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    finalizers: tuple[str, ...] = ()
    exclude_namespaces: tuple[str, ...] = ()

    def namespace(self, name: str | None) -> bool:
        if name is not None and any(fnmatchcase(name, p) for p in self.exclude_namespaces):
            return False
        if not self.namespaces:
            return True
        return name is not None and any(fnmatchcase(name, p) for p in self.namespaces)

    @property
    def narrowed(self) -> bool:
        return bool(self.namespaces or self.exclude_namespaces)

    def names(self, group: Group) -> list[tuple[str | None, str]]:
        """The group's (namespace, name) pairs scan kept that are in scope; a Namespace's own
        name is its namespace."""
        if group.resource == "namespaces":
            return [(ns, name) for ns, name in group.names if self.namespace(name)]
        return [(ns, name) for ns, name in group.names if self.namespace(ns)]

    def in_namespaces(self, group: Group) -> list[str]:
        """The group's namespaces in scope (a namespace scan did not name is left out)."""
        return [ns for ns in group.namespaces if not ns.startswith("... ") and self.namespace(ns)]

    def covers(self, group: Group) -> bool:
        if self.finalizers and group.finalizer not in self.finalizers:
            return False
        if self.groups and not any(fnmatchcase(api_group(group), p) for p in self.groups):
            return False
        if not self.narrowed:
            return True
        return bool(self.in_namespaces(group) if group.namespaced else self.names(group))

    def covers_crd(self, crd: TerminatingCrd) -> bool:
        group = crd.name.split(".", 1)[1] if "." in crd.name else ""
        return not self.groups or any(fnmatchcase(group, p) for p in self.groups)

    def covers_namespace(self, namespace: TerminatingNamespace) -> bool:
        return not self.groups and not self.finalizers and self.namespace(namespace.name)


@dataclass(frozen=True)
class Call:
    """One unfinalize(...) of the plan: what it selects, the finalizers it removes (none: a
    stuck CRD's delete alone), in which namespace, whether it deletes (waits for the CRDs or
    namespaces it names to go), and the groups it frees. Always only_terminating."""

    selection: Selection
    resource: str
    finalizers: tuple[str, ...] = ()
    namespace: str | None = None
    delete: bool = False
    groups: tuple[Group, ...] = field(default=(), compare=False)
    only_terminating: bool = True  # False only for what a namespace that is gone left
    force_lost_pods: bool = False  # the named pods, held by a lost node, are force-deleted

    def options(self, dry_run: DryRun, chunk_size: int) -> Options:
        """The Options unfinalize(...) builds for this call."""
        return Options(
            namespace=self.namespace,
            delete=self.delete,
            only_terminating=self.only_terminating,
            finalizers=self.finalizers,
            dry_run=dry_run,
            chunk_size=chunk_size,
            force_lost_pods=self.force_lost_pods,
        )


def freeable(group: Group, scope: Scope, grace: float, include_blocked: bool = False) -> bool:
    if not group.terminating or not scope.covers(group):
        return False
    if group.state is State.STUCK or (include_blocked and group.state is State.BLOCKED):
        return True
    named = group.finalizer in scope.finalizers
    return group.state is State.BUILTIN and named and group.oldest_seconds > grace


def plan(
    report: ScanReport,
    scope: Scope,
    grace: float,
    settle: bool = False,
    include_blocked: bool = False,
    force_lost_pods: bool = False,
) -> list[Call]:
    by_resource: dict[str, list[Group]] = {}
    orphaned: dict[str, list[Group]] = {}
    for group in report.groups:
        if group.state is State.ORPHANED and scope.covers(group):
            for namespace in scope.in_namespaces(group):
                orphaned.setdefault(namespace, []).append(group)
        elif freeable(group, scope, grace, include_blocked):
            by_resource.setdefault(group.resource, []).append(group)
    going = {crd.name for crd in report.crds} if settle else set()
    calls: list[Call] = []
    for resource, groups in sorted(by_resource.items()):
        calls += _calls(resource, groups, scope, going, report.namespace)
    calls += _namespaces(report, scope, grace, include_blocked)
    for name, groups in sorted(orphaned.items()):
        selected = Selection(namespaces=(name,))
        calls.append(Call(selected, "namespaces", delete=True, groups=tuple(groups), only_terminating=False))
    explained = {g.crd for g in report.groups if g.crd and g.terminating}
    for crd in report.crds:  # stuck with no held object to blame: as its printed command
        if crd.stuck and crd.name not in explained and not scope.narrowed and scope.covers_crd(crd):
            if not scope.finalizers:
                calls.append(Call(Selection(crds=(crd.name,)), crd.name, delete=True))
    return calls + (_lost_pods(report, scope) if force_lost_pods else [])


def _lost_pods(report: ScanReport, scope: Scope) -> list[Call]:
    """The pods a lost node holds, in scope (a group or finalizer scope leaves them out: no
    finalizer holds them), one call per namespace, named: each is judged again before its
    force delete."""
    if scope.groups or scope.finalizers:
        return []
    by_namespace: dict[str, list[str]] = {}
    for pod in report.lost_pods:
        if scope.namespace(pod.namespace):
            by_namespace.setdefault(pod.namespace, []).append(pod.name)
    return [
        Call(Selection(resource="pods", names=tuple(names)), "pods", namespace=ns, force_lost_pods=True)
        for ns, names in sorted(by_namespace.items())
    ]


def _namespaces(report: ScanReport, scope: Scope, grace: float, include_blocked: bool) -> list[Call]:
    calls = []
    for namespace in report.namespaces:
        if not namespace.stuck or namespace.apiservices or not scope.namespace(namespace.name):
            continue
        inside = [g for g in report.groups if g.terminating and _holds(g, namespace.name)]
        if inside and all(freeable(g, scope, grace, include_blocked) for g in inside):
            finalizers = tuple(sorted({g.finalizer for g in inside}))
            selected = Selection(namespaces=(namespace.name,))
            calls.append(Call(selected, "namespaces", finalizers, delete=True, groups=tuple(inside)))
    return calls


def _holds(group: Group, namespace: str) -> bool:
    if group.resource == "namespaces":
        return any(name == namespace for _, name in group.names)
    return namespace in group.namespaces


def _calls(resource: str, groups: list[Group], scope: Scope, going: set[str], listed: str | None) -> list[Call]:
    """`listed`: the one namespace the scan read (-n), else None."""
    finalizers = tuple(sorted({g.finalizer for g in groups}))
    first, held = groups[0], tuple(groups)
    if first.crd:  # the CRD sweep lists every object of the type (paginated), not only the names scan kept
        crds = Selection(crds=(first.crd,))
        if listed is not None and first.namespaced:
            return [Call(crds, resource, finalizers, namespace=listed, groups=held)]
        if not scope.narrowed or not first.namespaced:
            return [Call(crds, resource, finalizers, delete=first.crd in going, groups=held)]
        spaces = sorted({ns for g in groups for ns in scope.in_namespaces(g)})
        return [Call(crds, resource, finalizers, namespace=ns, groups=held) for ns in spaces]
    names = sorted({pair for g in groups for pair in scope.names(g)}, key=lambda p: (p[0] or "", p[1]))
    if resource == "namespaces":  # their own metadata.finalizers, and the same finalizers inside being deleted
        return [Call(Selection(namespaces=tuple(name for _, name in names)), resource, finalizers, groups=held)]
    by_namespace: dict[str | None, list[str]] = {}
    for ns, name in names:
        by_namespace.setdefault(ns, []).append(name)
    return [
        Call(
            Selection(resource=resource, names=tuple(by_namespace[ns])), resource, finalizers, namespace=ns, groups=held
        )
        for ns in sorted(by_namespace, key=lambda n: n or "")
    ]
