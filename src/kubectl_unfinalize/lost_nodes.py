"""Pods held by a lost node. A pod being deleted waits for its kubelet to stop its
containers and confirm; on a node whose kubelet is gone it stays Terminating after its
grace period, and its namespace with it (kubernetes/kubernetes#55934). No finalizer holds
it, so nothing the tool frees ends it: the one who can is a person who knows the node is
down. Kubernetes' own remedy is the `node.kubernetes.io/out-of-service` taint, on which the
pod garbage collector force-deletes the node's terminating pods (and volumes detach).
Pure functions over what scan and the engine read, so the rule is unit-tested on plain data.

A pod is held by a lost node when it is being deleted past its grace period (its
deletionTimestamp, which the API server sets that far ahead, has passed) and its node is
gone, or the node's Ready condition has been False or Unknown since before the pod's
deletion was due.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .durations import ago, timestamp
from .model import Resource

PODS = Resource("", "v1", "pods", "Pod", True)
NODES = Resource("", "v1", "nodes", "Node", False)
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


@dataclass(frozen=True)
class Node:
    name: str
    ready: str  # the Ready condition's status: True, False, Unknown ("" when it has none)
    since: float | None  # its lastTransitionTime
    heartbeat: float | None  # its lastHeartbeatTime: the kubelet's last word
    out_of_service: bool  # tainted node.kubernetes.io/out-of-service already

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Node:
        meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        conditions: list[dict[str, Any]] = status.get("conditions") or []
        ready: dict[str, Any] = next((c for c in conditions if c.get("type") == "Ready"), {})
        return cls(
            str(meta.get("name") or ""),
            str(ready.get("status") or ""),
            timestamp(ready.get("lastTransitionTime")),
            timestamp(ready.get("lastHeartbeatTime")),
            any(t.get("key") == OUT_OF_SERVICE for t in spec.get("taints") or []),
        )


def by_name(pages: Iterable[list[dict[str, Any]]]) -> dict[str, Node]:
    """Every node of a list's pages, by name: what judge() is given."""
    return {node.name: node for page in pages for node in map(Node.of, page)}


@dataclass(frozen=True)
class LostPod:
    namespace: str
    name: str
    node: str
    silent: float | None  # seconds since the node's kubelet was last heard of (None: the node is gone)
    overdue: float  # seconds past the pod's deletion deadline
    uid: str = ""

    @property
    def reason(self) -> str:
        late = f"being deleted, {ago(self.overdue)} past its grace period"
        if self.silent is None:
            return f"{late}, on node {self.node}, which is gone: no kubelet can confirm it stopped"
        return (
            f"{late}, on node {self.node}, whose kubelet has been silent for {ago(self.silent)}"
            " (Ready not True): it cannot confirm the pod stopped"
        )

    @property
    def remedy(self) -> str:
        """Kubernetes' own, for a person who knows the node is down (a partitioned node's
        containers may still run)."""
        return f"kubectl taint nodes {self.node} {OUT_OF_SERVICE}=nodeshutdown:NoExecute"


def judge(pod: dict[str, Any], nodes: Mapping[str, Node], now: float) -> LostPod | None:
    """The pod as held by a lost node, or None. `nodes`: every node, by name."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    due, name = timestamp(meta.get("deletionTimestamp")), str(spec.get("nodeName") or "")
    if due is None or due > now or not name:
        return None  # not being deleted, still within its grace period, or never scheduled
    node = nodes.get(name)
    overdue = now - due
    where = (str(meta.get("namespace") or ""), str(meta.get("name") or ""), name)
    uid = str(meta.get("uid") or "")
    if node is None:
        return LostPod(*where, None, overdue, uid)
    if node.ready == "True" or node.since is None or node.since > due:
        return None  # a live kubelet, or one that went quiet after the pod was due: not yet said
    return LostPod(*where, now - (node.heartbeat or node.since), overdue, uid)
