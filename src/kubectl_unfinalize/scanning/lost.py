"""Pods held by a lost node (lost_nodes.py's rule), found by scan: the list of pods keeps
the names of those past their deletion deadline (listing.py), and only when there are any
are they read whole (their node is in the spec, not the metadata) and the nodes listed.
Reads only; bounded, so a cluster with thousands of terminating pods costs a few reads."""

from __future__ import annotations

from ..errors import UnfinalizeError
from ..kube.paging import ListQuery
from ..lost_nodes import NODES, PODS, by_name, judge
from ..lost_nodes import LostPod as Held
from ..model import ObjectRef
from .commands import PREFIX
from .model import LostPod
from .port import ScanCluster

READ = 50  # terminating pods read whole at most


def find(cluster: ScanCluster, lingering: list[tuple[str, str]], now: float, not_scanned: list[str]) -> list[LostPod]:
    """`lingering`: (namespace, name) of pods past their deletion deadline."""
    if not lingering:
        return []
    try:
        nodes = by_name(cluster.list_objects(NODES, ListQuery()))
    except UnfinalizeError as exc:
        not_scanned.append(f"evidence: nodes: cannot tell which terminating pods are on a lost node: {exc}")
        return []
    found: list[LostPod] = []
    for namespace, name in sorted(lingering)[:READ]:
        try:
            pod = cluster.get(ObjectRef(PODS, name, namespace))
        except UnfinalizeError:
            continue  # gone, or unreadable: nothing is claimed of it
        held = judge(pod, nodes, now) if pod else None
        if held is not None:
            found.append(
                LostPod(held.namespace, held.name, held.node, held.silent, held.overdue, held.reason, _commands(held))
            )
    return found


def _commands(held: Held) -> list[str]:
    """Kubernetes' remedy first; then the tool's force delete of that pod alone."""
    return [held.remedy, f"{PREFIX} pods {held.name} -n {held.namespace} --force-lost-pods"]
