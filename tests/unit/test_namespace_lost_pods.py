"""ns --delete ends naming the pods a lost node holds in the namespace (issue 40), not only
a count: the pod, its node, how long its kubelet has been silent and Kubernetes' remedy.
Nothing is claimed when the pods or the nodes cannot be read."""

from __future__ import annotations

import time

from fakecluster import FakeCluster
from test_lost_nodes import DAY
from test_scan_lost_pods import node

from kubectl_unfinalize.engine import namespace_reads
from kubectl_unfinalize.engine.outcomes import OutcomeBook
from kubectl_unfinalize.errors import UnfinalizeError
from kubectl_unfinalize.model import Action
from kubectl_unfinalize.options import DryRun
from kubectl_unfinalize.scanning.tally import rfc3339

REMEDY = "kubectl taint nodes lost-1 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"


def pod(name: str, node_name: str) -> dict:
    meta = {"name": name, "namespace": "shop", "deletionTimestamp": rfc3339(time.time() - 60)}
    return {"metadata": meta, "spec": {"nodeName": node_name}}


class Terminating(FakeCluster):
    def __init__(self, nodes_fail: bool = False) -> None:
        super().__init__()
        self.nodes_fail = nodes_fail
        self.listed: list[str] = []

    def get(self, ref):
        return {"metadata": {"name": ref.name, "deletionTimestamp": rfc3339(time.time() - 300)}, "spec": {}}

    def list_objects(self, resource, query):
        self.listed.append(resource.plural)
        if resource.plural == "pods":
            assert query.namespace == "shop"
            yield [pod("web-0", "lost-1"), pod("web-1", "ready-1"), {"metadata": {"name": "idle"}, "spec": {}}]
        elif self.nodes_fail:
            raise UnfinalizeError("nodes: forbidden")
        else:
            now = time.time()
            lost, ready = node("lost-1", "Unknown", 0), node("ready-1", "True", 0)
            condition = lost["status"]["conditions"][0]
            condition["lastTransitionTime"] = condition["lastHeartbeatTime"] = rfc3339(now - 2 * DAY)
            yield [lost, ready]


def test_the_namespace_names_the_pod_on_a_lost_node_with_its_node_and_remedy():
    book = OutcomeBook(DryRun.NONE)
    namespace_reads.blocking(Terminating(), book, "shop", 2, False, "timed out")
    by_ref = {o.ref: o for o in book.outcomes()}
    assert sorted(by_ref) == ["namespace/shop", "pod/web-0"], by_ref
    held = by_ref["pod/web-0"]
    assert held.action is Action.BLOCKING and held.namespace == "shop"
    assert "on node lost-1, whose kubelet has been silent for 2d" in held.message
    assert held.message.endswith(f"remedy, once the node is known to be down: {REMEDY}")
    assert "2 objects remain inside; pod web-0 on a lost node" in by_ref["namespace/shop"].message


def test_nothing_is_claimed_of_pods_when_the_nodes_cannot_be_read():
    book = OutcomeBook(DryRun.NONE)
    cluster = Terminating(nodes_fail=True)
    namespace_reads.blocking(cluster, book, "shop", 2, False, "timed out")
    [outcome] = book.outcomes()
    assert outcome.ref == "namespace/shop" and "lost node" not in outcome.message
    assert cluster.listed == ["pods", "nodes"]


def test_an_empty_namespace_reads_no_pod():
    cluster = Terminating()
    namespace_reads.blocking(cluster, OutcomeBook(DryRun.NONE), "shop", 0, False, "timed out")
    assert cluster.listed == []
