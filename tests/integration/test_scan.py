"""`scan` on a real control plane (issue 17, acceptance 1 and 2): 200 terminating custom
resources of a stopped kopf operator in 3 namespaces, the same group's objects under a
running kopf operator whose delete handler keeps retrying, a ConfigMap and a PVC with a
dead operator's finalizer, a namespace blocked by an unavailable APIService and a
Terminating CRD. The cluster is built once for the module; the last test frees it with
the commands scan printed."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
import scan_world
import yaml
from crdinfo import CrdInfo
from crs import wait_until
from kubernetes.client import CoreV1Api
from scan_world import GRACE, KOPF, OPERATOR, STALLS, stop

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "scan.schema.json").read_text())
world = scan_world.world  # the module's cluster, a fixture


def scan_json(cli, *args) -> tuple[dict, subprocess.CompletedProcess]:
    result = cli("scan", "-o", "json", *args)
    assert result.returncode in (0, 1) and result.stdout, result.stderr
    return json.loads(result.stdout), result


def groups(document: dict) -> dict[tuple[str, str], dict]:
    return {(g["finalizer"], g["resource"]): g for g in document["groups"] if g["terminating"]}


@pytest.mark.core
def test_one_group_per_finalizer_and_type_with_counts_evidence_verdicts_and_commands(world, cli):
    w = world
    document, result = scan_json(cli)
    assert result.returncode == 1, result.stderr  # something is stuck: the CI gate fails
    jsonschema.validate(document, SCHEMA)
    found = groups(document)

    stalls = found[(KOPF, w.stalls.name)]
    assert stalls["count"] == STALLS and stalls["namespaces"] == sorted(w.namespaces)
    assert stalls["state"] == "stuck" and stalls["verdict"].startswith("stuck: no controller seen for"), stalls
    assert "kopf" in [m["name"] for m in stalls["managers"]] and "field manager" in stalls["owner"]["name"]
    assert any(e.startswith("last write by kopf") and "before the deletion" in e for e in stalls["evidence"]), stalls
    assert stalls["owner"]["crd"] == w.stalls.name
    assert stalls["commands"] == [f"kubectl unfinalize crd {w.stalls.name} --only-terminating --finalizer {KOPF}"]

    gadgets = found[(KOPF, w.gadgets.name)]
    assert gadgets["count"] == 3 and gadgets["state"] == "working" and not gadgets["stuck"], gadgets
    assert any(e.startswith("last write by kopf") and "after the deletion" in e for e in gadgets["evidence"])
    assert gadgets["commands"] == []

    for resource in ("configmaps", "persistentvolumeclaims"):
        group = found[(w.dead, resource)]
        assert group["count"] == 1 and group["stuck"] and group["namespaces"] == [w.namespaces[0]], group
        assert group["owner"]["kind"] == "crd" and w.group in group["owner"]["name"]  # dead.<group> names it
        assert group["commands"] == [
            f"kubectl unfinalize {resource} orphaned -n {w.namespaces[0]} --finalizer {w.dead}"
        ]

    relics = found[(w.relic_finalizer, w.relics.name)]
    assert relics["count"] == 2 and relics["stuck"]
    assert relics["commands"] == [f"kubectl unfinalize crd {w.relics.name} --delete"]
    (crd,) = [c for c in document["crds"] if c["name"] == w.relics.name]
    assert crd["stuck"] and crd["instances"] == 2 and crd["conversion"] == "None"
    assert crd["commands"] == [f"kubectl unfinalize crd {w.relics.name} --delete"]

    (blocked,) = [n for n in document["namespaces"] if n["name"] == w.blocked]
    assert blocked["stuck"] and w.apiservice in blocked["apiServices"]
    assert any(c.startswith("NamespaceDeletionDiscoveryFailure") for c in blocked["conditions"]), blocked
    assert blocked["commands"] == [
        f"kubectl delete apiservice {w.apiservice}",
        f"kubectl unfinalize ns {w.blocked} --delete",
    ]
    assert (
        f"{w.apiservice_group}/v1beta1: unavailable in discovery; its objects were not scanned"
        in document["notScanned"]
    )

    text = cli("scan")
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    row = next(line for line in lines if line.strip().startswith(w.stalls.name))
    assert row.split()[:2] == [w.stalls.name, str(STALLS)] and "stuck: no controller seen for" in row
    row = next(line for line in lines if line.strip().startswith(w.gadgets.name))
    assert "working: last write" in row, text.stdout
    for command in stalls["commands"] + crd["commands"] + blocked["commands"]:
        assert f"free: {command}" in text.stdout
    assert f"not scanned: {w.apiservice_group}/v1beta1" in text.stderr


@pytest.mark.core
def test_scan_only_reads(world, cli, audit):
    """Audited (the policy records every write): scan sends none, not even a review. The
    same filter sees the tool's writes, here server dry runs on the gadgets."""

    def ours():
        return [e for e in audit.events() if (e.get("userAgent") or "").startswith("kubectl-unfinalize/")]

    audit.mark()
    result = cli("scan", "-o", "wide")
    assert result.returncode == 1, result.stderr
    assert ours() == []
    cli("crd", world.gadgets.name, "--only-terminating", "--finalizer", KOPF, "--dry-run=server")
    assert any(e.get("verb") == "patch" and "dryRun=All" in e.get("requestURI", "") for e in ours())


def test_namespace_narrows_the_scan(world, cli):
    w = world
    document, result = scan_json(cli, "-n", w.namespaces[1])
    assert result.returncode == 1
    jsonschema.validate(document, SCHEMA)
    found = groups(document)
    assert found[(KOPF, w.stalls.name)]["count"] == len(range(1, STALLS, 3))
    assert found[(w.relic_finalizer, w.relics.name)]["count"] == 2
    assert all(g["namespaces"] == [w.namespaces[1]] and g["namespaced"] for g in document["groups"])
    assert (KOPF, w.gadgets.name) not in found and document["crds"] == [] and document["namespaces"] == []
    assert found[(KOPF, w.stalls.name)]["commands"][0].endswith(f" -n {w.namespaces[1]}")


def test_older_than_and_an_empty_namespace_pass_only_what_was_read(world, cli, kubectl):
    """Nothing held in the namespace, but the world's APIService is down: its group
    version may hold anything there, so the gate says so and fails (exit 1)."""
    w = world
    down = f"{w.apiservice_group}/v1beta1: unavailable in discovery"
    young = cli("scan", "-n", w.namespaces[0], "--older-than", "1h")
    assert young.returncode == 1 and young.stdout.startswith("nothing is stuck"), young.stdout + young.stderr
    assert f"not scanned: {down}" in young.stderr and "1 not read" in young.stderr
    result = cli("scan", "-n", w.quiet, "-o", "yaml")
    assert result.returncode == 1, result.stderr
    document = yaml.safe_load(result.stdout)
    jsonschema.validate(document, SCHEMA)
    assert not document["ok"] and document["groups"] == [] and document["namespace"] == w.quiet
    assert [line for line in document["failing"] if line.startswith(down)], document["failing"]


def test_a_fresh_lease_named_after_the_finalizer_is_evidence_of_a_live_controller(world, api_client, cli, kubectl):
    """A controller-runtime style leader Lease, renewed now, named after the finalizer's
    domain: the group is `alive`, not stuck, and the Lease is named as the evidence."""
    from datetime import datetime, timezone

    from kubernetes.client import CoordinationV1Api

    w = world
    ns, finalizer = w.namespaces[2], f"leased.{w.group}/cleanup"
    core = CoreV1Api(api_client)
    core.create_namespaced_config_map(
        ns, {"metadata": {"name": "leased", "finalizers": [finalizer]}, "data": {"k": "v"}}
    )
    kubectl("delete", "configmap", "leased", "-n", ns, "--wait=false")
    lease = {
        "metadata": {"name": "leased-controller-leader"},
        "spec": {
            "holderIdentity": "leased-controller-7d9f_0a1b",
            "leaseDurationSeconds": 15,
            "renewTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }
    CoordinationV1Api(api_client).create_namespaced_lease(ns, lease)
    try:
        time.sleep(GRACE + 1)  # past the grace: without the Lease this would be stuck
        lease["spec"]["renewTime"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        CoordinationV1Api(api_client).patch_namespaced_lease("leased-controller-leader", ns, lease)
        document, _ = scan_json(cli, "-n", ns)
        group = groups(document)[(finalizer, "configmaps")]
        assert group["state"] == "alive" and not group["stuck"] and group["commands"] == [], group
        assert group["verdict"].startswith("alive: Lease renewed"), group
        held = f"Lease {ns}/leased-controller-leader held by leased-controller-7d9f_0a1b, renewed"
        assert any(e.startswith(held) for e in group["evidence"]), group
    finally:
        CoordinationV1Api(api_client).delete_namespaced_lease("leased-controller-leader", ns)
        core.patch_namespaced_config_map("leased", ns, {"metadata": {"finalizers": None}})


def test_a_fresh_kopf_peering_entry_is_evidence_of_a_live_kopf_operator(
    world, api_client, cli, kubectl, kube_env, tmp_path
):
    """With kopf's ClusterKopfPeering CRD present and a kopf operator registered in it,
    objects held by kopf's finalizer that nobody wrote since their deletion read `alive`,
    with the peer named (kopf's peering says some kopf operator is alive, not which)."""
    w = world
    ns = w.quiet
    peering_crd = CrdInfo.of("kopf.dev", "ClusterKopfPeering", scope="Cluster").manifest()
    beacons = CrdInfo.of(w.group, "Beacon").manifest(status=True)
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([peering_crd, beacons]))
    operator = None
    try:
        kubectl("wait", "--for=condition=Established", "crd/clusterkopfpeerings.kopf.dev", f"crd/beacons.{w.group}")
        kubectl(
            "apply",
            "-f",
            "-",
            input=yaml.safe_dump(
                {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "default"}}
            ),
        )
        env = dict(kube_env, OPERATOR_GROUP=w.group, OPERATOR_PLURAL="beacons", OPERATOR_DELETE="")
        operator = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--peering", "default", "--all-namespaces", str(OPERATOR)],
            env=env,
            stdout=(tmp_path / "peer.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        wait_until(
            "kopf to register in ClusterKopfPeering default",
            lambda: (
                kubectl("get", "clusterkopfpeering", "default", "-o", "jsonpath={.status}").stdout not in ("", "{}")
            ),
            timeout=60,
        )
        CoreV1Api(api_client).create_namespaced_config_map(
            ns, {"metadata": {"name": "kopfed", "finalizers": [KOPF]}, "data": {"k": "v"}}
        )
        kubectl("delete", "configmap", "kopfed", "-n", ns, "--wait=false")
        time.sleep(GRACE + 1)
        document, _ = scan_json(cli, "-n", ns)
        group = groups(document)[(KOPF, "configmaps")]
        assert group["state"] == "alive" and not group["stuck"], group
        assert any(e.startswith("kopf peer ") and "in ClusterKopfPeering default, seen" in e for e in group["evidence"])
    finally:
        if operator is not None:
            stop(operator)  # kopf takes its entry out of the peering as it stops
        kubectl(
            "patch",
            "configmap",
            "kopfed",
            "-n",
            ns,
            "--type=merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
            check=False,
        )
        kubectl("delete", "crd", "clusterkopfpeerings.kopf.dev", f"beacons.{w.group}", "--wait=false", check=False)


def listable_except_secrets(kubectl) -> list[dict]:
    names = kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
    by_group: dict[str, list[str]] = {}
    for name in names:
        plural, _, group = name.partition(".")
        if name != "secrets":
            by_group.setdefault(group, []).append(plural)
    return [{"apiGroups": [g], "resources": sorted(p), "verbs": ["get", "list"]} for g, p in by_group.items()]


def test_a_user_who_cannot_list_secrets_gets_one_line_for_them_and_the_rest(world, cli, kubectl, kubeconfig, tmp_path):
    from test_bad_input import granted, token_kubeconfig

    w = world
    ns = w.namespaces[2]
    kubectl("create", "serviceaccount", "scanner", "-n", ns)
    subject = {"kind": "ServiceAccount", "name": "scanner", "namespace": ns}
    with granted(kubectl, f"{ns}-scanner", listable_except_secrets(kubectl), subject):
        limited = token_kubeconfig(kubectl, kubeconfig, ns, "scanner", tmp_path)
        result = cli("scan", "--kubeconfig", limited)
        assert result.returncode == 1, result.stderr
        about_secrets = [line for line in result.stderr.splitlines() if "secrets" in line]
        assert about_secrets == ["not scanned: secrets: forbidden: cannot list secrets cluster-wide (RBAC)"], (
            result.stderr
        )
        assert "Traceback" not in result.stderr
        row = next(line for line in result.stdout.splitlines() if line.strip().startswith(w.stalls.name))
        assert row.split()[1] == str(STALLS)


def test_the_python_api_reports_the_same_and_raises_in_a_final_check(world, kube_env):
    from kubectl_unfinalize import IncompleteError, ScanReport, scan

    report = scan(kubeconfig=kube_env["KUBECONFIG"])
    assert isinstance(report, ScanReport) and not report.ok
    stuck = {(g.finalizer, g.resource) for g in report.groups if g.stuck}
    assert (KOPF, world.stalls.name) in stuck and (KOPF, world.gadgets.name) not in stuck
    with pytest.raises(IncompleteError, match=f"{STALLS} {world.stalls.name} held by {KOPF}"):
        report.raise_for_failure()


def run_printed(command: str, cli, kubectl) -> subprocess.CompletedProcess:
    words = shlex.split(command)
    if words[:2] == ["kubectl", "unfinalize"]:
        return cli(*words[2:], timeout=300)
    assert words[0] == "kubectl", command
    return kubectl(*words[1:], check=False)


@pytest.mark.core
def test_printed_commands_free_everything(world, cli, kubectl):
    """Each command scan printed for this module's objects, run as printed, in order:
    afterwards nothing of them is stuck (the running operator's gadgets are working, not
    stuck, and get no command). The control plane is shared with other test modules, which
    may leave their own stuck objects behind: only this module's names are its business.
    The `TYPE NAME` commands (the ConfigMap and the PVC) need the `kubectl unfinalize TYPE
    NAME` form."""
    before = cli("scan")
    assert before.returncode == 1
    commands = []
    for line in before.stdout.splitlines():
        command = line.strip()[6:]
        if line.strip().startswith("free: ") and world.tag in command and command not in commands:
            commands.append(command)
    assert len(commands) >= 5, before.stdout
    for command in commands:
        result = run_printed(command, cli, kubectl)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    after = cli("scan")
    doc = json.loads(cli("scan", "-o", "json").stdout)
    ours = [
        *(
            g
            for g in doc["groups"]
            if world.tag in g["resource"]
            or world.tag in g["finalizer"]
            or any(world.tag in ns for ns in g["namespaces"])
        ),
        *(c for c in doc["crds"] if world.tag in c["name"]),
        *(n for n in doc["namespaces"] if world.tag in n["name"]),
    ]
    assert not [entry for entry in ours if entry["stuck"]], after.stdout + after.stderr
    assert world.gadgets.name in after.stdout  # still there, still working
