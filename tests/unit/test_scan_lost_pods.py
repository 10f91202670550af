"""scan names pods held by a lost node (issue 40): pod, node, how long its kubelet has been
silent and Kubernetes' remedy; the gate fails on them. Pods on a Ready node, or still
within their grace period, are not named, and nothing is read whole unless a pod is past
its deletion deadline."""

from __future__ import annotations

import jsonschema
from fakecluster import HEALTHY_DISCOVERY, FakeScanCluster, entry
from test_scan_engine import NOW, SCHEMA

from kubectl_unfinalize.cli.scan_output import render, stderr_lines
from kubectl_unfinalize.errors import ExitStatus
from kubectl_unfinalize.scanning.options import ScanOptions
from kubectl_unfinalize.scanning.survey import scan
from kubectl_unfinalize.scanning.tally import rfc3339

DAY = 86400.0
CORE = {
    "metadata": {"name": ""},
    "versions": [{"version": "v1", "resources": [entry("pods", "Pod"), entry("nodes", "Node", "Cluster")]}],
}
REMEDY = "kubectl taint nodes {} node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"


def pod(name: str, node: str, due_ago: float | None) -> dict:
    meta = {"name": name, "namespace": "shop"}
    if due_ago is not None:
        meta["deletionTimestamp"] = rfc3339(NOW - due_ago)
    return {"metadata": meta, "spec": {"nodeName": node}}


def node(name: str, status: str, since: float) -> dict:
    ready = {"type": "Ready", "status": status, "lastTransitionTime": rfc3339(NOW - since)}
    return {
        "metadata": {"name": name},
        "status": {"conditions": [ready | {"lastHeartbeatTime": ready["lastTransitionTime"]}]},
    }


def cluster() -> FakeScanCluster:
    pods = [
        pod("web-0", "lost-1", 120),
        pod("web-1", "ready-1", 120),
        pod("web-2", "lost-1", -30),
        pod("db-0", "gone", 60),
    ]
    pods.append(pod("idle", "lost-1", None))
    return FakeScanCluster(
        {"pods": [p["metadata"] for p in pods]},
        full={"pods": pods, "nodes": [node("lost-1", "Unknown", 2 * DAY), node("ready-1", "True", DAY)]},
        discovery=[CORE, *HEALTHY_DISCOVERY[1:]],
    )


def test_pods_on_a_lost_node_are_named_with_the_node_and_the_remedy_and_fail_the_gate():
    report = scan(cluster(), ScanOptions(), clock=lambda: NOW)
    assert [(p.name, p.node, p.silent) for p in report.lost_pods] == [
        ("db-0", "gone", None),
        ("web-0", "lost-1", 2 * DAY),
    ]
    force = "kubectl unfinalize pods web-0 -n shop --force-lost-pods"
    assert report.lost_pods[1].commands == [REMEDY.format("lost-1"), force]
    assert report.exit_status is ExitStatus.FAILED and not report.ok
    document = report.to_dict()
    jsonschema.validate(document, SCHEMA)
    assert document["lostPods"][1] | {"reason": ""} == {
        "namespace": "shop",
        "name": "web-0",
        "node": "lost-1",
        "silentSeconds": 2 * DAY,
        "overdueSeconds": 120.0,
        "reason": "",
        "commands": [REMEDY.format("lost-1"), force],
    }
    text = render(report, "text")
    assert "POD (on a lost node)" in text and "shop/web-0" in text and "2d" in text
    assert f"remedy, once the node is known to be down: {REMEDY.format('lost-1')}" in text
    assert f"or force-delete it: {force}" in text
    assert "on a partitioned node the containers may still run" in text
    summary = list(stderr_lines(report))
    assert any("2 on a lost node" in line for line in summary), summary


def test_nothing_is_read_whole_when_no_pod_is_past_its_deadline():
    fake = FakeScanCluster(
        {"pods": [pod("web-2", "lost-1", -30)["metadata"]]}, full={}, discovery=[CORE, *HEALTHY_DISCOVERY[1:]]
    )
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    assert report.lost_pods == [] and report.ok


def test_a_namespace_held_only_by_pods_on_a_lost_node_is_named_for_them_with_no_command_that_cannot_end_it():
    from kubectl_unfinalize.scanning import namespaces
    from kubectl_unfinalize.scanning.model import LostPod

    obj = {
        "metadata": {"name": "shop"},
        "status": {"conditions": [{"type": "NamespaceContentRemaining", "status": "True", "message": "1 left"}]},
    }
    held = LostPod("shop", "web-0", "lost-1", 2 * DAY, 120, "why", [REMEDY.format("lost-1")])
    elsewhere = LostPod("other", "db-0", "lost-1", 2 * DAY, 120, "why", [REMEDY.format("lost-1")])
    for seconds in (5, 600):  # within the grace and past NAMESPACE_PATIENCE alike
        judged = namespaces.judge(obj, seconds, [], [], 30, [held, elsewhere])
        assert judged.verdict.startswith("lost node: Terminating for "), judged.verdict
        assert judged.verdict.endswith("; 1 pods on a lost node (web-0 on lost-1)")
        assert not judged.held and judged.commands == []  # ns --delete cannot end it: the pod's remedy is printed
    stuck = namespaces.judge(obj, 60, [], ["v1.x.io"], 30, [held])  # another reason too: stuck, and it says both
    assert stuck.stuck
    assert stuck.verdict.endswith("APIService v1.x.io unavailable; 1 pods on a lost node (web-0 on lost-1)")
    assert namespaces.judge(obj, 60, [], [], 30, [elsewhere]).stuck  # another namespace's pods: not these
