"""The cluster scan's integration tests share (test_scan.py): built once per module,
torn down through the Python API."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from controlplane.process import interrupt
from crdinfo import CrdInfo
from crs import crd_state, create, create_many, wait_until
from kubernetes.client import CoreV1Api, CustomObjectsApi

OPERATOR = Path(__file__).parent / "operator" / "scan_operator.py"
KOPF = "kopf.zalando.org/KopfFinalizerMarker"
GRACE = 30  # scan.evidence.GRACE: until then a deletion without evidence is "pending"
STALLS = 200


def start_operator(kube_env, group: str, plural: str, log: Path, delete: str = "") -> subprocess.Popen:
    env = dict(kube_env, OPERATOR_GROUP=group, OPERATOR_PLURAL=plural, OPERATOR_DELETE=delete)
    return subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", str(OPERATOR)],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


stop = interrupt  # the operators of the module


def finalized(api_client, info: CrdInfo, count: int) -> bool:
    items = CustomObjectsApi(api_client).list_cluster_custom_object(info.group, "v1", info.plural)["items"]
    return len(items) == count and all(KOPF in (o["metadata"].get("finalizers") or []) for o in items)


class World:
    """What the module built: names the tests assert on."""

    def __init__(self, tag: str) -> None:
        self.tag = tag  # in every name the module creates
        self.group = f"sc{tag}.unfinalize.test"
        self.relic_group = f"rl{tag}.unfinalize.test"
        self.stalls = CrdInfo.of(self.group, "Stall")
        self.gadgets = CrdInfo.of(self.group, "Gadget")
        self.relics = CrdInfo.of(self.relic_group, "Relic")
        self.namespaces = [f"scan-{tag}-{c}" for c in "abc"]
        self.blocked = f"scan-{tag}-blocked"
        self.quiet = f"scan-{tag}-quiet"  # nothing stuck in it, kept to the end: while the broken
        # APIService is there, no namespace deleted during the module could finish
        self.dead = f"dead.{self.group}/cleanup"
        self.relic_finalizer = f"{self.relic_group}/keep"
        self.apiservice_group = f"as{tag}.unfinalize.test"
        self.apiservice = f"v1beta1.{self.apiservice_group}"
        self.operator: subprocess.Popen | None = None


@pytest.fixture(scope="module")
def world(api_client, kubectl, kube_env, tmp_path_factory):
    logs = tmp_path_factory.mktemp("scan-operators")
    w = World(secrets.token_hex(3))
    core = CoreV1Api(api_client)
    try:
        for name in [*w.namespaces, w.blocked, w.quiet]:
            kubectl("create", "namespace", name)
        crds = [i.manifest(status=True) for i in (w.stalls, w.gadgets, w.relics)]
        kubectl("apply", "-f", "-", input=yaml.safe_dump_all(crds))
        for info in (w.stalls, w.gadgets, w.relics):
            kubectl("wait", "--for=condition=Established", f"crd/{info.name}", "--timeout=30s")

        # 200 objects a kopf operator finalized; it stops, then they are deleted.
        stopped = start_operator(kube_env, w.group, "stalls", logs / "stopped.log")
        try:
            create_many(api_client, w.stalls, STALLS, w.namespaces, prefix="stall-")
            wait_until("kopf to finalize 200 stalls", lambda: finalized(api_client, w.stalls, STALLS), timeout=120)
        finally:
            stop(stopped)
        for ns in w.namespaces:
            kubectl("delete", w.stalls.name, "--all", "-n", ns, "--wait=false")

        # The same group's gadgets under a running operator whose delete handler keeps retrying.
        w.operator = start_operator(kube_env, w.group, "gadgets", logs / "running.log", delete="fail")
        for i in range(3):
            create(api_client, w.gadgets, f"gadget-{i}", w.namespaces[0])
        wait_until("kopf to finalize 3 gadgets", lambda: finalized(api_client, w.gadgets, 3), timeout=60)
        kubectl("delete", w.gadgets.name, "--all", "-n", w.namespaces[0], "--wait=false")

        # A ConfigMap and a PVC with a dead operator's finalizer.
        core.create_namespaced_config_map(
            w.namespaces[0], {"metadata": {"name": "orphaned", "finalizers": [w.dead]}, "data": {"k": "v"}}
        )
        claim = {
            "metadata": {"name": "orphaned", "finalizers": [w.dead]},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}},
        }
        core.create_namespaced_persistent_volume_claim(w.namespaces[0], claim)
        kubectl("delete", "configmap,pvc", "orphaned", "-n", w.namespaces[0], "--wait=false")

        # A Terminating CRD whose two objects a dead controller's finalizer holds.
        for i in range(2):
            create(api_client, w.relics, f"relic-{i}", w.namespaces[1], finalizers=[w.relic_finalizer])
        kubectl("delete", "crd", w.relics.name, "--wait=false")

        # A namespace the namespace controller cannot finish: an APIService without its Service.
        service = {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": w.apiservice},
            "spec": {
                "group": w.apiservice_group,
                "version": "v1beta1",
                "service": {"namespace": "default", "name": f"missing-{w.apiservice_group.split('.')[0]}"},
                "groupPriorityMinimum": 1000,
                "versionPriority": 15,
                "insecureSkipTLSVerify": True,
            },
        }
        kubectl("apply", "-f", "-", input=yaml.safe_dump(service))
        wait_until(
            f"APIService {w.apiservice} Available=False",
            lambda: (
                '"False"' in kubectl("get", "apiservice", w.apiservice, "-o", "jsonpath={.status.conditions}").stdout
            ),
        )
        core.create_namespaced_config_map(w.blocked, {"metadata": {"name": "content"}, "data": {"k": "v"}})
        kubectl("delete", "namespace", w.blocked, "--wait=false")
        deleted_at = time.monotonic()  # the last deletion
        wait_until(
            "the namespace controller to report its discovery failure",
            lambda: (
                "NamespaceDeletionDiscoveryFailure"
                in kubectl("get", "namespace", w.blocked, "-o", "jsonpath={.status.conditions}").stdout
            ),
            timeout=60,
        )
        time.sleep(max(0.0, GRACE + 2 - (time.monotonic() - deleted_at)))  # past the grace of a deletion
        yield w
    finally:
        if w.operator is not None:
            stop(w.operator)
        kubectl("delete", "apiservice", w.apiservice, "--ignore-not-found", check=False)
        from kubectl_unfinalize import unfinalize

        crds = [i.name for i in (w.stalls, w.gadgets, w.relics) if crd_state(api_client, i.name) is not None]
        report = unfinalize(crds=crds, delete=True, timeout=90, kubeconfig=kube_env["KUBECONFIG"])
        for kind in ("configmap", "pvc"):
            kubectl("patch", kind, "orphaned", "-n", w.namespaces[0], "--type=merge", "-p",
                    '{"metadata":{"finalizers":null}}', check=False)  # fmt: skip
        for name in [*w.namespaces, w.blocked, w.quiet]:
            kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)
        report.raise_for_failure()
