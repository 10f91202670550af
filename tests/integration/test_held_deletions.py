"""What holds a deletion besides a dead operator's finalizer (issue 40), on a control plane of
this module's own: its scans and `scan --free` read the whole cluster, and the shared one
holds other tests' stuck objects.

- A VolumeAttachment held by the CSI driver's external-attacher (`external-attacher/<driver>`,
  the disk is still attached): scan calls it a storage sidecar's, `scan --free` leaves it,
  only `--finalizer` naming it frees it, and the line says what may leak.
- A controller with a fresh Lease, silent on the object it holds for longer than
  ALIVE_PATIENCE (made short here, in this process): held, but neither `scan(free=True)`
  nor the pytest plugin's free mode frees it; scan prints its command with a warning, and
  the command, run by a person, frees it.
- An owner deleted with propagationPolicy=Foreground whose dependent (blockOwnerDeletion)
  is held by a dead finalizer: scan names the dependent on the owner's group, and the
  command it prints there ends the chain (the garbage collector then lets the owner go);
  `crd OWNERS` exits 1 naming the dependent, what holds it and the command that frees it.
- A pod bound to a Node whose Ready has been Unknown for two days (no kubelet), deleted past
  its grace period: scan names the pod and the node and fails the gate; a pod on a Ready node
  is not named; `ns NS --delete` exits 1 naming them; the remedy both print (the
  out-of-service taint), run, lets the pod garbage collector force-delete it. The module's
  kube-controller-manager runs that collector.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import controlplane
import pytest
from kubernetes.client.exceptions import ApiException

ROOT = Path(__file__).resolve().parents[2]
DRIVER = "hostpath.csi.k8s.io"
ATTACHER = "external-attacher/hostpath-csi-k8s-io"


@pytest.fixture(scope="module")
def plane():
    if os.environ.get("UNFINALIZE_TEST_KUBECONFIG"):
        pytest.skip("these tests scan a whole cluster of their own (unset UNFINALIZE_TEST_KUBECONFIG)")
    controlplane.find_binaries(controlplane.BINARIES)
    controllers = (*controlplane.CONTROLLERS, "pod-garbage-collector-controller")
    with controlplane.ControlPlane(audit=True, controllers=controllers) as cp:
        yield cp


@pytest.fixture(scope="module")
def api(plane):
    from kubernetes import config

    client = config.new_client_from_config(config_file=plane.kubeconfig)
    yield client
    client.close()


@pytest.fixture
def api_client(api):
    """make_crd's client: this module's control plane."""
    return api


@pytest.fixture(scope="module")
def tool(plane):
    env = dict(os.environ, KUBECONFIG=plane.kubeconfig, NO_COLOR="1")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "kubectl-unfinalize"), *args],
            env=env,
            text=True,
            capture_output=True,
            timeout=120,
        )

    return run


def tool_writes(plane, since: int, resource: str) -> list[tuple[str, str]]:
    return [
        (e["verb"], e["objectRef"].get("name", ""))
        for e in plane.audit_events(since)
        if e["verb"] in ("patch", "update", "delete")
        and e["objectRef"].get("resource") == resource
        and (e.get("userAgent") or "").startswith("kubectl-unfinalize/")
    ]


def test_a_volume_attachment_held_by_its_attacher_is_the_sidecars_and_freed_only_when_named(plane, api, tool):
    from kubernetes.client import StorageV1Api

    storage = StorageV1Api(api)
    storage.create_volume_attachment(
        {
            "metadata": {"name": "va-1", "finalizers": [ATTACHER]},
            "spec": {"attacher": DRIVER, "nodeName": "node-gone", "source": {"persistentVolumeName": "pv-1"}},
        }
    )
    storage.delete_volume_attachment("va-1")

    scan = tool("scan", "-o", "json")
    assert scan.returncode in (0, 3), scan.stderr
    groups = [g for g in json.loads(scan.stdout)["groups"] if g["resource"].startswith("volumeattachments")]
    assert len(groups) == 1, groups
    assert groups[0]["state"] == "built-in" and groups[0]["finalizer"] == ATTACHER
    assert groups[0]["verdict"].startswith("storage sidecar: waits for the volume to be detached"), groups[0]

    mark = plane.audit_mark()
    free = tool("scan", "--free")
    assert free.returncode in (0, 3), free.stdout + free.stderr
    assert tool_writes(plane, mark, "volumeattachments") == []
    assert storage.read_volume_attachment("va-1").metadata.finalizers == [ATTACHER]

    named = tool("volumeattachments", "va-1", "--finalizer", ATTACHER)
    assert named.returncode == 0, named.stdout + named.stderr
    assert f"removed {ATTACHER}; may leak: an attached disk (volume pv-1 on node node-gone, CSI driver {DRIVER})" in (
        named.stdout
    ), named.stdout
    with pytest.raises(ApiException) as gone:
        storage.read_volume_attachment("va-1")
    assert gone.value.status == 404


def _renewed_lease(api, ns: str, name: str) -> None:
    from kubernetes.client import CoordinationV1Api

    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    body = {"metadata": {"name": name}, "spec": {"holderIdentity": f"{name}-0", "leaseDurationSeconds": 15}}
    body["spec"]["renewTime"] = now
    leases = CoordinationV1Api(api)
    try:
        leases.patch_namespaced_lease(name, ns, body)
    except ApiException as exc:
        if exc.status != 404:
            raise
        leases.create_namespaced_lease(ns, body)


def test_a_live_controller_silent_past_its_patience_is_left_by_every_unattended_free(
    plane, api, tool, monkeypatch, capsys
):
    from kubernetes.client import CoreV1Api

    import kubectl_unfinalize
    from kubectl_unfinalize.cli.main import main
    from kubectl_unfinalize.pytest_plugin.settings import Settings
    from kubectl_unfinalize.pytest_plugin.teardown import Ledger, look
    from kubectl_unfinalize.scanning import evidence

    ns, finalizer, held = "alive", "widgets.unfinalize.test/cleanup", {"metadata": {"name": "held"}}
    core = CoreV1Api(api)
    core.create_namespace({"metadata": {"name": ns}})
    held["metadata"]["finalizers"] = [finalizer]
    core.create_namespaced_config_map(ns, held, field_manager="widget-operator")
    core.delete_namespaced_config_map("held", ns)
    _renewed_lease(api, ns, "widget-operator")
    monkeypatch.setattr(evidence, "ALIVE_PATIENCE", 2.0)
    monkeypatch.setenv("KUBECONFIG", plane.kubeconfig)
    time.sleep(3)
    _renewed_lease(api, ns, "widget-operator")

    mark = plane.audit_mark()
    report = kubectl_unfinalize.scan(kubeconfig=plane.kubeconfig, grace=0, free=True)
    [group] = [g for g in report.groups if g.finalizer == finalizer]
    assert group.state is kubectl_unfinalize.State.ALIVE and group.stuck, group
    assert group.verdict.startswith("alive: Lease renewed") and "but silent here for" in group.verdict, group
    assert report.exit_status == 1 and not report.freed, report.freed  # held: the gate fails; nothing freed
    ledger = Ledger()
    assert look(Settings(mode="free", grace=0.0), ledger, "teardown", free=True) is not None
    assert ledger.objects_freed() == 0 and not ledger.failures, ledger
    assert tool_writes(plane, mark, "configmaps") == []
    assert core.read_namespaced_config_map("held", ns).metadata.finalizers == [finalizer]

    assert main(["scan", "-n", ns]) == 1
    out = capsys.readouterr().out
    assert "warning: its controller shows a sign of life: scan --free leaves it" in out, out
    [command] = [line.split("free: ", 1)[1] for line in out.splitlines() if line.strip().startswith("free: ")]
    assert command == f"kubectl unfinalize configmaps held -n {ns} --finalizer {finalizer}", out
    decided = tool(*shlex.split(command)[2:])  # a person decides: the printed command frees it
    assert decided.returncode == 0, decided.stdout + decided.stderr
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("held", ns)
    assert gone.value.status == 404


def _wait(what: str, done, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _gone(read) -> bool:
    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def test_an_owner_held_by_foreground_deletion_names_its_dependent_and_the_command_ends_the_chain(plane, api, tool):
    from kubernetes.client import CoreV1Api, V1DeleteOptions

    ns, dead = "chain", "dead.unfinalize.test/cleanup"
    core = CoreV1Api(api)
    core.create_namespace({"metadata": {"name": ns}})
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    reference["blockOwnerDeletion"] = True
    child = {"metadata": {"name": "child", "finalizers": [dead], "ownerReferences": [reference]}}
    core.create_namespaced_config_map(ns, child)
    core.delete_namespaced_config_map("owner", ns, body=V1DeleteOptions(propagation_policy="Foreground"))
    _wait(
        "the collector to delete the dependent",
        lambda: core.read_namespaced_config_map("child", ns).metadata.deletion_timestamp,
    )

    scan = tool("scan", "-n", ns, "-o", "json")
    assert scan.returncode in (1, 3), scan.stdout + scan.stderr
    groups = {g["finalizer"]: g for g in json.loads(scan.stdout)["groups"]}
    chain = groups["foregroundDeletion"]
    assert chain["sample"] == [f"{ns}/owner"], chain
    [dependent] = chain["dependents"]
    assert (dependent["resource"], dependent["namespace"], dependent["name"]) == ("configmaps", ns, "child")
    assert dependent["finalizers"] == [dead] and dependent["state"] in ("pending", "stuck"), dependent
    assert f"held by 1 dependent with blockOwnerDeletion: configmaps {ns}/child ({dead}: " in chain["verdict"]
    [command] = chain["commands"]
    assert command == groups[dead]["commands"][0], (command, groups[dead]["commands"])

    freed = tool(*shlex.split(command)[2:])
    assert freed.returncode == 0, freed.stdout + freed.stderr
    _wait("the owner to go", lambda: _gone(lambda: core.read_namespaced_config_map("owner", ns)))
    assert _gone(lambda: core.read_namespaced_config_map("child", ns))


def test_a_run_that_selects_an_owner_held_by_its_dependent_names_it_and_exits_1(plane, api, tool, make_crd):
    from crs import create
    from kubernetes.client import CoreV1Api, CustomObjectsApi

    holders, ns, dead = make_crd(kind="Holder"), "chain-crd", "dead.unfinalize.test/cleanup"
    core = CoreV1Api(api)
    core.create_namespace({"metadata": {"name": ns}})
    owner = create(api, holders, "owner", ns)
    reference = {"apiVersion": f"{holders.group}/v1", "kind": "Holder", "name": "owner"}
    reference |= {"uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
    core.create_namespaced_config_map(
        ns, {"metadata": {"name": "child", "finalizers": [dead], "ownerReferences": [reference]}}
    )
    custom = CustomObjectsApi(api)
    custom.delete_namespaced_custom_object(
        holders.group, "v1", ns, holders.plural, "owner", body={"propagationPolicy": "Foreground"}
    )

    result = tool("crd", holders.name)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    line = next(line for line in result.stdout.splitlines() if "/owner " in line)
    assert "still blocking" in line and f"configmaps {ns}/child (finalizers {dead})" in line, line
    command = line.rsplit("free them: ", 1)[1].rstrip(")")
    assert command == f"kubectl unfinalize configmaps child -n {ns}", line

    freed = tool(*shlex.split(command)[2:])
    assert freed.returncode == 0, freed.stdout + freed.stderr
    read = lambda: custom.get_namespaced_custom_object(holders.group, "v1", ns, holders.plural, "owner")  # noqa: E731
    _wait("the collector to let the owner go", lambda: _gone(read), seconds=90)
    assert _gone(lambda: core.read_namespaced_config_map("child", ns))


def _node(api, name: str, ready: str, ago: float) -> None:
    from kubernetes.client import CoreV1Api

    core = CoreV1Api(api)
    core.create_node({"metadata": {"name": name}})
    when = datetime.fromtimestamp(time.time() - ago, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {"type": "Ready", "status": ready, "reason": "Test", "message": "set by the test"}
    condition |= {"lastHeartbeatTime": when, "lastTransitionTime": when}
    core.patch_node_status(name, {"status": {"conditions": [condition]}})


def _bound_pod(api, ns: str, name: str, node: str, delete: bool = True) -> None:
    from kubernetes.client import CoreV1Api

    core = CoreV1Api(api)
    spec = {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [{"name": "c", "image": "pause"}]}
    body = {"metadata": {"name": name}, "spec": spec}
    for _ in range(100):  # the namespace's default ServiceAccount comes from its controller
        try:
            core.create_namespaced_pod(ns, body)
            break
        except ApiException as exc:
            if exc.status != 403 or "serviceaccount" not in (exc.body or ""):
                raise
            time.sleep(0.1)
    if delete:
        core.delete_namespaced_pod(name, ns, grace_period_seconds=1)


def test_a_pod_on_a_node_silent_for_two_days_is_named_and_the_taint_remedy_ends_it(plane, api, tool):
    from kubernetes.client import CoreV1Api

    core, ns = CoreV1Api(api), "lost"
    core.create_namespace({"metadata": {"name": ns}})
    _node(api, "lost-node", "Unknown", 2 * 86400)
    _node(api, "ready-node", "True", 0)
    _bound_pod(api, ns, "web-0", "lost-node")
    _bound_pod(api, ns, "web-1", "ready-node")
    time.sleep(2)  # past their grace period (1 s)

    scan = tool("scan", "-n", ns, "-o", "json")
    assert scan.returncode == 1, scan.stdout + scan.stderr
    [held] = json.loads(scan.stdout)["lostPods"]
    assert (held["namespace"], held["name"], held["node"]) == (ns, "web-0", "lost-node"), held
    assert held["silentSeconds"] >= 2 * 86400 and "kubelet has been silent for 2d" in held["reason"]
    remedy, force = held["commands"]
    assert force == f"kubectl unfinalize pods web-0 -n {ns} --force-lost-pods"  # test_force_lost_pods_... runs one
    assert remedy == "kubectl taint nodes lost-node node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
    text = tool("scan", "-n", ns)
    assert f"remedy, once the node is known to be down: {remedy}" in text.stdout, text.stdout

    freeing = tool("ns", ns, "--delete", "--timeout", "10s")
    assert freeing.returncode == 1, freeing.stdout + freeing.stderr
    said = freeing.stdout + freeing.stderr
    assert "pod web-0 on a lost node" in said and "on node lost-node, whose kubelet has been silent" in said, said
    assert f"remedy, once the node is known to be down: {remedy}" in said and "web-1" not in said, said
    [space] = json.loads(tool("scan", "-n", ns, "-o", "json").stdout)["namespaces"]
    assert space["verdict"].startswith("lost node: ") and "web-0 on lost-node" in space["verdict"], space
    assert space["commands"] == [] and not space["stuck"], space  # its --delete cannot end it

    kubectl = [f"{plane.bin_dir}/kubectl", "--kubeconfig", plane.kubeconfig]
    subprocess.run([*kubectl, *shlex.split(remedy)[1:]], check=True, capture_output=True, timeout=30)
    _wait(
        "the pod garbage collector to force-delete it", lambda: _gone(lambda: core.read_namespaced_pod("web-0", ns)), 90
    )
    assert core.read_namespaced_pod("web-1", ns).metadata.deletion_timestamp  # on a Ready node: left to its kubelet


def _pod_gone(api, ns: str, name: str) -> bool:
    from kubernetes.client import CoreV1Api

    return _gone(lambda: CoreV1Api(api).read_namespaced_pod(name, ns))


def test_force_lost_pods_ends_what_a_lost_node_holds_and_never_touches_a_pod_on_a_ready_node(plane, api, tool):
    from kubernetes.client import CoreV1Api

    core = CoreV1Api(api)
    _node(api, "down-1", "Unknown", 2 * 86400)
    _node(api, "up-1", "True", 0)
    spaces = (("held-a", "down-1"), ("held-b", "up-1"), ("held-c", "down-1"), ("held-d", "up-1"), ("held-e", "down-1"))
    for ns, node in spaces:
        core.create_namespace({"metadata": {"name": ns}})
        _bound_pod(api, ns, f"{ns}-0", node, delete=ns not in ("held-a", "held-b"))
    mark = plane.audit_mark()

    freed = tool("ns", "held-a", "--delete", "--force-lost-pods", "--timeout", "60s")
    said = freed.stdout + freed.stderr
    assert freed.returncode == 0, said
    assert "warning: --force-lost-pods: force-deleting pods whose node is lost" in said, said
    assert "pod/held-a-0 deleted (namespace held-a): forced (gracePeriodSeconds=0): being deleted" in said, said
    assert "undo cannot bring it back" in said, said
    assert _gone(lambda: core.read_namespace("held-a")), "the namespace the lost node held is gone"

    ready = tool("ns", "held-b", "--delete", "--force-lost-pods", "--timeout", "8s")
    assert ready.returncode == 1 and "forced" not in ready.stdout + ready.stderr, ready.stdout + ready.stderr
    assert not _pod_gone(api, "held-b", "held-b-0")  # on a Ready node: left to its kubelet
    time.sleep(1)  # the other three past their grace period

    [printed] = [p["commands"][1] for p in json.loads(tool("scan", "-n", "held-c", "-o", "json").stdout)["lostPods"]]
    named = tool(*shlex.split(printed)[2:])  # the command scan printed for it
    assert _pod_gone(api, "held-c", "held-c-0"), named.stdout + named.stderr
    history = tool("history", "--last")
    assert "force-deleted" in history.stdout, history.stdout + history.stderr
    undo = tool("undo", "--last")
    assert "force-deleted on a lost node" in undo.stdout + undo.stderr, undo.stdout + undo.stderr

    scan = tool("scan", "--free", "--force-lost-pods", "-o", "json")
    document = json.loads(scan.stdout)
    assert _pod_gone(api, "held-e", "held-e-0") and document["lostPods"] == [], scan.stdout + scan.stderr
    assert not _pod_gone(api, "held-d", "held-d-0")  # scan --free frees only what a lost node holds
    forced = [
        (e["objectRef"]["namespace"], e["objectRef"]["name"])
        for e in plane.audit_events(mark)
        if e["verb"] == "delete"
        and e["objectRef"].get("resource") == "pods"
        and (e.get("userAgent") or "").startswith("kubectl-unfinalize/")
    ]
    assert sorted(forced) == [("held-a", "held-a-0"), ("held-c", "held-c-0"), ("held-e", "held-e-0")], forced


def test_with_dependents_frees_a_dead_controllers_dependent_and_the_owner_goes_never_a_live_ones(
    plane, api, tool, make_crd
):
    from crs import create
    from kubernetes.client import CoreV1Api, CustomObjectsApi

    keepers, guards, ns = make_crd(kind="Keeper"), make_crd(kind="Guard"), "chain-deps"
    dead, live = "dead.unfinalize.test/cleanup", "live.unfinalize.test/cleanup"
    core, custom = CoreV1Api(api), CustomObjectsApi(api)
    core.create_namespace({"metadata": {"name": ns}})
    for crd, child, finalizer, manager in (
        (keepers, "child", dead, "dead-operator"),
        (guards, "kept", live, "live-operator"),
    ):
        owner = create(api, crd, "owner", ns)
        reference = {"apiVersion": f"{crd.group}/v1", "kind": crd.kind, "name": "owner"}
        reference |= {"uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
        body = {"metadata": {"name": child, "finalizers": [finalizer], "ownerReferences": [reference]}}
        core.create_namespaced_config_map(ns, body, field_manager=manager)
        custom.delete_namespaced_custom_object(
            crd.group, "v1", ns, crd.plural, "owner", body={"propagationPolicy": "Foreground"}
        )
    for child in ("child", "kept"):
        _wait(
            f"the collector to delete {child}",
            lambda child=child: core.read_namespaced_config_map(child, ns).metadata.deletion_timestamp,
        )
    read = lambda crd: lambda: custom.get_namespaced_custom_object(crd.group, "v1", ns, crd.plural, "owner")  # noqa: E731

    freed = tool("crd", keepers.name, "--with-dependents", "--timeout", "100s")
    said = freed.stdout + freed.stderr
    assert freed.returncode == 0, said
    assert f"configmap/child unfinalized (namespace {ns}; removed {dead})" in said, said
    assert f"keeper.{keepers.group}/owner gone (namespace {ns}): deleted by the garbage collector" in said, said
    assert _gone(read(keepers)) and _gone(lambda: core.read_namespaced_config_map("child", ns))
    undo = tool("history", "--last")
    assert "configmap/child" in undo.stdout and "unfinalized" in undo.stdout, undo.stdout + undo.stderr

    _renewed_lease(api, ns, "live-operator")  # its controller shows a sign of life
    left = tool(guards.plural, "owner", "-n", ns, "--with-dependents", "--timeout", "30s")
    said = left.stdout + left.stderr
    assert left.returncode == 1, said
    expected = (
        f"configmap/kept still blocking (namespace {ns}; finalizers {live}): blocks an owner's foregroundDeletion;"
        f" --with-dependents leaves it: {live}: alive: Lease renewed"
    )
    assert expected in said, said
    assert core.read_namespaced_config_map("kept", ns).metadata.finalizers == [live]
    assert not _gone(read(guards))


def _orphaned_owner(api, ns: str) -> None:
    from kubernetes.client import CoreV1Api, V1DeleteOptions

    core = CoreV1Api(api)
    core.create_namespace({"metadata": {"name": ns}})
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(ns, {"metadata": {"name": "child", "ownerReferences": [reference]}})
    core.delete_namespaced_config_map("owner", ns, body=V1DeleteOptions(propagation_policy="Orphan"))


def test_an_owner_held_by_orphan_is_waited_on_and_named_when_the_collector_cannot_finish(plane, api, tool):
    from kubernetes.client import AdmissionregistrationV1Api, CoreV1Api

    core, admission = CoreV1Api(api), AdmissionregistrationV1Api(api)
    _orphaned_owner(api, "orphan-ok")
    done = tool("configmaps", "owner", "-n", "orphan-ok", "--timeout", "30s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _gone(lambda: core.read_namespaced_config_map("owner", "orphan-ok"))
    assert not core.read_namespaced_config_map("child", "orphan-ok").metadata.owner_references  # orphaned, kept

    refused = {  # the collector's update of the dependent is refused: a webhook whose backend is gone
        "name": "refuse.unfinalize.test",
        "clientConfig": {"url": "https://127.0.0.1:1/refuse"},
        "rules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "orphan-stalled"}},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 1,
    }
    webhook = {"metadata": {"name": "refuse-orphaning"}, "webhooks": [refused]}
    admission.create_validating_webhook_configuration(webhook)
    try:
        _orphaned_owner(api, "orphan-stalled")
        held = tool("configmaps", "owner", "-n", "orphan-stalled", "--timeout", "30s")
        said = held.stdout + held.stderr
        assert held.returncode == 1, said
        assert "configmap/owner still blocking (namespace orphan-stalled; finalizers orphan): held by orphan" in said
        assert "is the garbage collector running, and may it update the dependents" in said, said
        assert core.read_namespaced_config_map("owner", "orphan-stalled").metadata.finalizers == ["orphan"]
    finally:
        admission.delete_validating_webhook_configuration("refuse-orphaning")
    _wait(
        "the collector to finish once it may",
        lambda: _gone(lambda: core.read_namespaced_config_map("owner", "orphan-stalled")),
        120,
    )
