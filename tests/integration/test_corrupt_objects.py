"""Objects the API server cannot read from storage (KEP-3926: a lost encryption key, a KMS
outage, bytes that do not decode), made here by writing bytes over their etcd keys. With
kube-apiserver's feature gate AllowUnsafeMalformedObjectDeletion on, the server names each
one in the 500 a list of its type fails with; without it, it names none. What the tool says
of them must be what the server said, and it must not wait for an answer that will not
change."""

from __future__ import annotations

import json
import os
import secrets
import time

import pytest
from controlplane import K8S_VERSION, ControlPlane
from controlplane.releases import MALFORMED_DELETION_SINCE

GROUP = "corrupt.unfinalize.test"
PLURAL = "widgets"
CRD_NAME = f"{PLURAL}.{GROUP}"
DEAD = "unfinalize.test/dead"
BOUND = 30.0  # seconds: far below the run's deadline; the point is that nothing is waited for
GATE_KNOWN = int(K8S_VERSION.split(".")[1]) >= MALFORMED_DELETION_SINCE


def crd_body(group: str = GROUP) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


class Broken:
    """A control plane of this module's own, and what a test made corrupt on it."""

    def __init__(self, plane: ControlPlane, cli) -> None:
        self.plane = plane
        self._cli = cli

    def run(self, *args, timeout: float = 120):
        """The tool against this control plane: (result, seconds)."""
        started = time.monotonic()
        result = self._cli(*args, env={"KUBECONFIG": self.plane.kubeconfig}, timeout=timeout)
        return result, time.monotonic() - started

    def ok(self, method: str, path: str, body=None) -> dict:
        status, text = self.plane.request(method, path, body)
        assert status < 300, f"{method} {path}: {status} {text}"
        return json.loads(text)

    def status(self, path: str) -> int:
        return self.plane.request("GET", path)[0]

    def crd(self, group: str = GROUP) -> str:
        """A CRD of widgets in `group`, established; its name."""
        self.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd_body(group))
        deadline = time.monotonic() + 30
        while self.status(f"/apis/{group}/v1/{PLURAL}") != 200:
            assert time.monotonic() < deadline, f"{PLURAL}.{group} never served"
            time.sleep(0.2)
        return f"{PLURAL}.{group}"

    def namespace(self) -> str:
        name = f"corrupt-{secrets.token_hex(4)}"
        self.ok("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        return name

    def widget(self, namespace: str, name: str, group: str = GROUP, corrupt: bool = False) -> None:
        body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name, "finalizers": [DEAD]}}
        self.ok("POST", f"/apis/{group}/v1/namespaces/{namespace}/{PLURAL}", body)
        if corrupt:
            self.plane.corrupt(f"{group}/{PLURAL}/{namespace}/{name}")

    def secret(self, namespace: str, name: str, corrupt: bool = False) -> None:
        self.ok("POST", f"/api/v1/namespaces/{namespace}/secrets", {"metadata": {"name": name}})
        if corrupt:
            self.plane.corrupt(f"secrets/{namespace}/{name}")


def _plane(malformed_deletion: bool) -> ControlPlane:
    if os.environ.get("UNFINALIZE_TEST_KUBECONFIG"):
        pytest.skip(
            "corrupt objects are made in etcd: a control plane of the project's own (unset UNFINALIZE_TEST_KUBECONFIG)"
        )
    return ControlPlane(malformed_deletion=malformed_deletion, audit=True)


@pytest.fixture(scope="module")
def gated(cli):
    """The gate on: the server names what it cannot read."""
    if not GATE_KNOWN:
        pytest.skip(
            f"AllowUnsafeMalformedObjectDeletion is in Kubernetes 1.{MALFORMED_DELETION_SINCE} on,"
            f" this is {K8S_VERSION}"
        )
    with _plane(True) as plane:
        yield Broken(plane, cli)


def test_scan_names_each_object_the_server_cannot_read_and_fails(gated):
    ns = gated.namespace()
    gated.crd()
    gated.widget(ns, "good")
    gated.widget(ns, "bad", corrupt=True)
    gated.secret(ns, "creds", corrupt=True)
    result, _ = gated.run("scan")
    assert result.returncode == 1, result.stderr
    assert "CORRUPT (unreadable)" in result.stdout
    for resource, name in ((CRD_NAME, "bad"), ("secrets", "creds")):
        line = next(line for line in result.stdout.splitlines() if line.startswith(resource) and f" {name} " in line)
        assert ns in line and "object not decodable" in line
        assert f"remove: kubectl unfinalize {resource} {name} -n {ns} --unsafe-delete-corrupt" in result.stdout
    assert "2 corrupt" in result.stderr and "Traceback" not in result.stderr
