"""The command that frees what `scan` found stuck, ready to paste. Each one frees only the
stuck finalizer (`--finalizer F`) unless everything of the CRD is going anyway, and a
built-in controller's finalizer is only ever named explicitly, never implied.

Why these forms:
- custom resources of a Terminating CRD: `crd NAME --delete` (the CRD and all of its
  objects are being deleted already; this frees them and waits until the CRD is gone);
- custom resources of a CRD that stays: `crd NAME --only-terminating --finalizer F`
  touches only the objects already being deleted, and only that finalizer: the CRD,
  its live objects and other controllers' finalizers are left alone (`crd NAME --delete`
  would delete every object of it and the CRD);
- other types: `TYPE NAME... -n NS --finalizer F` (TYPE as `plural.group`, or the plural
  for the core group), one command per namespace, for the names scan kept (at most
  tally.NAMES per group: run scan again after for the rest);
- a Terminating namespace: `ns NAME --delete` (frees what is inside and waits until it
  is gone), after `kubectl delete apiservice NAME` for each unavailable APIService, which
  keeps every namespace from finishing until it is fixed or deleted.

One finalizer held across many types (a removed crossplane provider leaves hundreds of
CRDs, each a group) is one command for all its CRDs, not one per type (`fixes`): the CRDs
as `--group G` when the group has no other CRD, `--category C` when no other CRD lists C
(discovery says which do), both together, or else their names.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from .. import finalizers
from ..model import CRD_RESOURCE, NAMESPACE_RESOURCE
from .model import Fix, Group, State, TerminatingCrd

PREFIX = "kubectl unfinalize"


def group_commands(
    finalizer: str,
    resource: str,
    crd: str,
    crd_terminating: bool,
    names: list[tuple[str | None, str]],
    namespace: str | None,
) -> list[str]:
    """`resource` is plural.group; `crd` the CRD serving it ("" for other types);
    `namespace` is scan's -n (None: all namespaces)."""
    only = f"--finalizer {finalizer}"
    if crd:
        return [_crd_command(crd, crd_terminating, finalizer, namespace)]
    if resource == NAMESPACE_RESOURCE.plural:
        return [f"{PREFIX} ns {' '.join(name for _, name in names)} {only}"]
    if resource == CRD_RESOURCE.qualified and finalizer == finalizers.CRD_CLEANUP:
        return []  # never: the CRD is freed through its objects (see TerminatingCrd)
    return _per_namespace(resource, names, only)


def _per_namespace(resource: str, names: list[tuple[str | None, str]], flags: str) -> list[str]:
    """`TYPE NAME... -n NS FLAGS`, one command per namespace."""
    by_namespace: dict[str | None, list[str]] = {}
    for ns, name in names:
        by_namespace.setdefault(ns, []).append(name)
    return [
        f"{PREFIX} {resource} {' '.join(by_namespace[ns])}{f' -n {ns}' if ns else ''} {flags}"
        for ns in sorted(by_namespace, key=lambda n: n or "")
    ]


def orphan_commands(namespaces: list[str]) -> list[str]:
    """Objects left in namespaces that are gone: each namespace's delete frees them (the
    namespace is created again, what is inside freed, then it is deleted again and gone)."""
    return [f"{PREFIX} ns {ns} --delete" for ns in namespaces]


def corrupt_commands(resource: str, names: list[tuple[str | None, str]]) -> list[str]:
    """Objects the server cannot read: one command per namespace deletes them with the
    server's unsafe delete (the tool warns before it sends one)."""
    return _per_namespace(resource, names, "--unsafe-delete-corrupt")


def _crd_command(crds: str, terminating: bool, finalizer: str, namespace: str | None) -> str:
    """`crds`: the words that select the CRDs (names, or --group/--category)."""
    only = f"--finalizer {finalizer}"
    if terminating:
        return f"{PREFIX} crd {crds} --delete" + (f" {only}" if finalizers.builtin(finalizer) else "")
    scope = f" -n {namespace}" if namespace else ""
    return f"{PREFIX} crd {crds} --only-terminating {only}{scope}"


def fixes(
    groups: list[Group],
    crds: list[TerminatingCrd],
    every: Mapping[str, Collection[str] | None],
    terminating: Collection[str],
    namespace: str | None,
) -> list[Fix]:
    """Per finalizer, the commands that free all its stuck groups: the groups of CRD-served
    types as one command (two when some of their CRDs are Terminating and others stay),
    the others' own; and one for every stuck Terminating CRD. `every`: each CRD's name
    and its categories (None where discovery did not list it); `terminating`: the names
    of the Terminating CRDs."""
    found: list[Fix] = []
    stuck: dict[str, list[Group]] = {}
    for group in groups:
        if group.stuck:
            stuck.setdefault(group.finalizer, []).append(group)
    for finalizer, held in sorted(stuck.items()):
        commands = []
        for going in (True, False):
            names = {g.crd for g in held if g.crd and not _orphaned(g) and (g.crd in terminating) is going}
            if names:
                commands.append(_crd_command(crd_selector(names, every), going, finalizer, namespace))
        for group in held:
            commands += [c for c in group.commands if (not group.crd or _orphaned(group)) and c not in commands]
        found.append(Fix(finalizer, sorted(g.resource for g in held), commands))
    names = {c.name for c in crds if c.stuck}
    if names:
        command = f"{PREFIX} crd {crd_selector(names, every)} --delete"
        found.append(Fix(finalizers.CRD_CLEANUP, sorted(names), [command]))
    return found


def _orphaned(group: Group) -> bool:
    """In a namespace that is gone: freed through that namespace, never by its type."""
    return group.state is State.ORPHANED


def crd_selector(names: Collection[str], every: Mapping[str, Collection[str] | None]) -> str:
    """The words of `crd ...` that select exactly `names` among `every` CRD (name ->
    categories, None when unknown): one CRD by its name, more by a selector where one
    selects exactly them. A category proves nothing while a CRD that could list it is
    unknown."""
    wanted = set(names)
    if len(wanted) == 1:
        return next(iter(wanted))
    groups = {_group(n) for n in wanted}
    group = next(iter(groups)) if len(groups) == 1 else None
    if group is not None and {n for n in every if _group(n) == group} <= wanted:
        return f"--group {group}"
    known = {n: set(c) for n, c in every.items() if c is not None}
    if all(n in known for n in wanted):
        unknown = set(every) - set(known)
        for category in sorted(set.intersection(*(known[n] for n in wanted))):
            listing = {n for n, c in known.items() if category in c}
            if listing == wanted and not unknown:
                return f"--category {category}"
            in_group = {n for n in listing if _group(n) == group}
            if group is not None and in_group == wanted and not {n for n in unknown if _group(n) == group}:
                return f"--group {group} --category {category}"
    return " ".join(sorted(wanted))


def _group(crd: str) -> str:
    return crd.partition(".")[2]


def crd_commands(name: str) -> list[str]:
    return [f"{PREFIX} crd {name} --delete"]


def namespace_commands(name: str, apiservices: list[str]) -> list[str]:
    return [*(f"kubectl delete apiservice {a}" for a in apiservices), f"{PREFIX} ns {name} --delete"]
