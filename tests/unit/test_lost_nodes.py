"""The rule for a pod held by a lost node (lost_nodes.py), on plain data: past its grace
period, on a node that is gone or whose Ready has not been True since before the pod was due."""

from __future__ import annotations

from kubectl_unfinalize.lost_nodes import Node, judge
from kubectl_unfinalize.scanning.tally import rfc3339

NOW = 1_800_000_000.0
DAY = 86400.0


def pod(due_ago=60.0, node="node-1"):
    meta = {"name": "web-0", "namespace": "shop"}
    if due_ago is not None:
        meta["deletionTimestamp"] = rfc3339(NOW - due_ago)
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


def node(status="Unknown", since=2 * DAY, heartbeat=2 * DAY, taints=()):
    ready = {"type": "Ready", "status": status, "lastTransitionTime": rfc3339(NOW - since)}
    ready["lastHeartbeatTime"] = rfc3339(NOW - heartbeat)
    obj = {"metadata": {"name": "node-1"}, "spec": {"taints": list(taints)}, "status": {"conditions": [ready]}}
    return Node.of(obj)


def test_a_pod_past_its_grace_on_a_node_silent_for_days_is_held_by_it():
    lost = judge(pod(), {"node-1": node()}, NOW)
    assert lost is not None and (lost.namespace, lost.name, lost.node) == ("shop", "web-0", "node-1")
    assert lost.silent == 2 * DAY and lost.overdue == 60.0
    assert lost.reason == (
        "being deleted, 1m past its grace period, on node node-1, whose kubelet has been silent for 2d"
        " (Ready not True): it cannot confirm the pod stopped"
    )
    assert lost.remedy == "kubectl taint nodes node-1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"


def test_a_node_that_is_gone_holds_its_pods():
    lost = judge(pod(), {}, NOW)
    assert lost is not None and lost.silent is None and "which is gone" in lost.reason


def test_never_a_pod_on_a_ready_node_within_its_grace_unscheduled_or_not_being_deleted():
    assert judge(pod(), {"node-1": node("True", since=DAY, heartbeat=5)}, NOW) is None
    assert judge(pod(due_ago=-20), {"node-1": node()}, NOW) is None  # its grace period runs
    assert judge(pod(node=""), {}, NOW) is None
    assert judge(pod(due_ago=None), {"node-1": node()}, NOW) is None
    # Not Ready only since after the pod was due: the kubelet may have stopped it; not said yet.
    assert judge(pod(due_ago=60), {"node-1": node("False", since=30, heartbeat=30)}, NOW) is None


def test_the_out_of_service_taint_is_read():
    taint = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
    assert node(taints=[taint]).out_of_service and not node().out_of_service
