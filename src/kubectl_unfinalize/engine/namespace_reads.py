"""Namespaces: which resource types a namespace can hold, which API groups cannot be
discovered (and the APIService behind them), and what keeps a namespace Terminating.

Reads only. The engine frees what these functions find; this module decides nothing
about writes. A namespace's `spec.finalizers` (`kubernetes`) belong to the namespace
controller: nothing here ever proposes touching them or the `finalize` subresource.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import UnfinalizeError
from ..kube.discovery import Discovery
from ..kube.paging import ListQuery
from ..kube.port import Cluster
from ..kube.status import ApiServiceState, true_conditions
from ..lost_nodes import NODES, PODS, LostPod, by_name, judge
from ..model import APISERVICE_RESOURCE, STILL_BLOCKING, Action, ObjectRef, Resource, namespace_ref
from .outcomes import OutcomeBook

NAMESPACE_FINALIZER = "kubernetes"  # spec.finalizers: the namespace controller's, never ours
NEEDED_VERBS = ("list", "patch")
LOST_PODS_READ = 200  # pods of one namespace read whole at the end of a run that did not finish it


@dataclass
class NamespacedTypes:
    """The namespaced resource types that can be listed and patched, one version each
    (the group's preferred one that serves it), and the group versions that cannot be
    discovered now (an unavailable aggregated API)."""

    resources: list[Resource] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)


def discover(cluster: Cluster) -> NamespacedTypes:
    """Aggregated discovery: the core group and every other group in two requests."""
    served = Discovery.from_groups(cluster.api_discovery())
    resources = [t.resource for t in served.preferred(*NEEDED_VERBS) if t.resource.namespaced]
    return NamespacedTypes(resources, list(served.unavailable))


def unavailable_apiservices(cluster: Cluster) -> list[tuple[ObjectRef, str]]:
    """APIServices whose Available condition is not True, each with its service and the
    condition's message. Empty when they cannot be read (RBAC): never guessed."""
    found: list[tuple[ObjectRef, str]] = []
    try:
        pages = list(cluster.list_objects(APISERVICE_RESOURCE, ListQuery()))
    except UnfinalizeError:
        return found
    for page in pages:
        for obj in page:
            state = ApiServiceState.read(obj)
            if not state.available:
                where = state.service or "no service"
                found.append((ObjectRef(APISERVICE_RESOURCE, state.name), f"{where}; {state.condition}"))
    return found


def report_apiservices(cluster: Cluster, book: OutcomeBook, names: list[str], why: str) -> bool:
    """Name each unavailable APIService as what likely keeps `names` Terminating; True if
    there was one."""
    found = unavailable_apiservices(cluster)
    listed = ", ".join(names)
    for ref, detail in found:
        message = (
            f"{why}: unavailable ({detail}); the namespace controller cannot discover its API group, "
            f"so namespace {listed} cannot finish: fix the service or delete the APIService"
        )
        book.add(ref, Action.BLOCKING, message=message, aspect=STILL_BLOCKING)
    return bool(found)


def blocking(
    cluster: Cluster, book: OutcomeBook, name: str, contents: int | None, apiservice_down: bool, why: str
) -> None:
    """Say what keeps one namespace: the controller's True conditions, its own metadata
    finalizers, and, when nothing is left inside and only the controller's `kubernetes`
    finalizer remains, that the namespace controller is not doing its part. `contents`
    is how many objects the last pass found in it (None: unknown)."""
    ref = namespace_ref(name)
    try:
        obj = cluster.get(ref)
    except UnfinalizeError as exc:
        book.add(ref, Action.BLOCKING, message=f"{why}; cannot read it: {exc}", aspect=STILL_BLOCKING)
        return
    if obj is None:
        return
    meta = obj.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or [])
    spec_finalizers = list((obj.get("spec") or {}).get("finalizers") or [])
    parts = true_conditions(obj)
    if not meta.get("deletionTimestamp"):
        parts.insert(0, "not being deleted (Active)")
    if finalizers:
        parts.append(f"namespace finalizers {finalizers}")
    if contents:
        parts.append(f"{contents} objects remain inside")
        for pod in lost_pods(cluster, name):
            parts.append(f"pod {pod.name} on a lost node")
            message = f"{why}: {pod.reason}; remedy, once the node is known to be down: {pod.remedy}"
            book.add(ObjectRef(PODS, pod.name, name), Action.BLOCKING, message=message, aspect=STILL_BLOCKING)
    if (
        meta.get("deletionTimestamp")
        and contents == 0
        and not finalizers
        and not apiservice_down
        and spec_finalizers == [NAMESPACE_FINALIZER]
    ):
        parts.append(
            f"nothing is left inside and only the namespace controller's own '{NAMESPACE_FINALIZER}' finalizer "
            "remains (spec.finalizers): the namespace controller has not finished it (after failures it retries "
            "only every minute or so); if it stays, is kube-controller-manager running? This tool never removes it"
        )
    if not parts:
        parts.append("still there")
    book.add(ref, Action.BLOCKING, finalizers, f"{why}: " + "; ".join(parts), aspect=STILL_BLOCKING)


def lost_pods(cluster: Cluster, namespace: str) -> list[LostPod]:
    """The namespace's pods held by a lost node (lost_nodes.py): no finalizer holds them,
    so a count of what remains would not say why the namespace stays. Empty when pods or
    nodes cannot be read: nothing is claimed of what was not seen."""
    try:
        first = next(iter(cluster.list_objects(PODS, ListQuery(namespace=namespace, limit=LOST_PODS_READ))), [])
        pods = [pod for pod in first if (pod.get("metadata") or {}).get("deletionTimestamp")]
        if not pods:
            return []
        nodes = by_name(cluster.list_objects(NODES, ListQuery()))
    except UnfinalizeError:
        return []
    now = time.time()
    return [held for pod in pods if (held := judge(pod, nodes, now)) is not None]
