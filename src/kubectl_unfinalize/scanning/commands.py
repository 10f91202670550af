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
"""

from __future__ import annotations

from .. import finalizers
from ..model import CRD_RESOURCE, NAMESPACE_RESOURCE

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
        if crd_terminating:
            return [f"{PREFIX} crd {crd} --delete" + (f" {only}" if finalizers.builtin(finalizer) else "")]
        scope = f" -n {namespace}" if namespace else ""
        return [f"{PREFIX} crd {crd} --only-terminating {only}{scope}"]
    if resource == NAMESPACE_RESOURCE.plural:
        return [f"{PREFIX} ns {' '.join(name for _, name in names)} {only}"]
    if resource == CRD_RESOURCE.qualified and finalizer == finalizers.CRD_CLEANUP:
        return []  # never: the CRD is freed through its objects (see TerminatingCrd)
    by_namespace: dict[str | None, list[str]] = {}
    for ns, name in names:
        by_namespace.setdefault(ns, []).append(name)
    commands = []
    for ns in sorted(by_namespace, key=lambda n: n or ""):
        scope = f" -n {ns}" if ns else ""
        commands.append(f"{PREFIX} {resource} {' '.join(by_namespace[ns])}{scope} {only}")
    return commands


def crd_commands(name: str) -> list[str]:
    return [f"{PREFIX} crd {name} --delete"]


def namespace_commands(name: str, apiservices: list[str]) -> list[str]:
    return [*(f"kubectl delete apiservice {a}" for a in apiservices), f"{PREFIX} ns {name} --delete"]
