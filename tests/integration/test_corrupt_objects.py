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
        self.corrupted: list[str] = []  # API paths of the objects made unreadable

    def mend(self) -> None:
        """Delete what a test left unreadable: while one object of a type cannot be read, the
        API server's watch cache of that type cannot start (it relists every second), and
        the controllers that watch the type (kube-controller-manager's) wait with it."""
        for path in self.corrupted:
            self.plane.request("DELETE", f"{path}?ignoreStoreReadErrorWithClusterBreakingPotential=true")
        self.corrupted.clear()

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
            self.corrupted.append(f"/apis/{group}/v1/namespaces/{namespace}/{PLURAL}/{name}")

    def secret(self, namespace: str, name: str, corrupt: bool = False) -> None:
        self.ok("POST", f"/api/v1/namespaces/{namespace}/secrets", {"metadata": {"name": name}})
        if corrupt:
            self.plane.corrupt(f"secrets/{namespace}/{name}")
            self.corrupted.append(f"/api/v1/namespaces/{namespace}/secrets/{name}")


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


@pytest.fixture(autouse=True)
def _mended(request):
    """Each test starts on a cluster without unreadable objects."""
    yield
    for name in ("gated", "ungated"):
        if name in request.fixturenames:
            request.getfixturevalue(name).mend()


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


def _group() -> str:
    return f"c{secrets.token_hex(3)}.unfinalize.test"


def _gone(gated: Broken, path: str, seconds: float = 30) -> bool:
    """Read until `path` answers 404 (True), or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while gated.status(path) != 404:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _good_and_bad(gated: Broken) -> tuple[str, str, str]:
    """(namespace, group, CRD name) of a new CRD with a readable instance and an unreadable one."""
    ns, group = gated.namespace(), _group()
    crd = gated.crd(group)
    gated.widget(ns, "good", group)
    gated.widget(ns, "bad", group, corrupt=True)
    return ns, group, crd


def test_crd_delete_names_the_unreadable_instance_and_the_flag_at_once_and_deletes_nothing(gated):
    ns, group, crd = _good_and_bad(gated)
    mark = gated.plane.audit_mark()
    result, seconds = gated.run("crd", crd, "--delete")
    assert result.returncode == 1, result.stderr
    assert seconds < BOUND and "Traceback" not in result.stderr
    output = result.stdout + result.stderr
    assert f"kubectl unfinalize {crd} bad -n {ns} --unsafe-delete-corrupt" in output
    assert "cannot read it from storage" in output and "run again with --unsafe-delete-corrupt" in output
    writes = [
        (e["verb"], e["objectRef"], e["user"]["username"])
        for e in gated.plane.audit_events(since=mark)
        if e["verb"] in ("delete", "patch", "update") and not e["user"]["username"].startswith("system:")
    ]
    assert writes == [], writes  # nothing changed: not the CRD, not the instance it could not list
    assert gated.status(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}") == 200


def test_with_the_flag_the_unreadable_instance_goes_after_a_warning_and_then_the_crd(gated):
    ns, group, crd = _good_and_bad(gated)
    mark = gated.plane.audit_mark()
    result, _ = gated.run("crd", crd, "--delete", "--unsafe-delete-corrupt")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning: --unsafe-delete-corrupt:" in result.stderr and "may break the cluster" in result.stderr
    assert f"{PLURAL[:-1]}.{group}/bad deleted (namespace {ns}): deleted unreadable from storage" in result.stdout
    assert _gone(gated, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")  # read: gone
    unsafe = [
        e
        for e in gated.plane.audit_events(since=mark)
        if e["verb"] == "delete" and "apiserver.k8s.io/unsafe-delete-ignore-read-error" in (e.get("annotations") or {})
    ]
    assert [e["objectRef"]["name"] for e in unsafe] == ["bad"]  # exactly the one the server named, once
    history = gated.run("history", "--last", "-o", "json")[0]
    assert '"unsafe-delete"' in history.stdout, history.stdout


def test_without_the_rbac_verb_the_user_is_told_which_and_nothing_is_deleted(gated):
    ns, group = gated.namespace(), _group()
    crd = gated.crd(group)
    gated.widget(ns, "bad", group, corrupt=True)
    user = f"no-unsafe-{secrets.token_hex(3)}"
    verbs = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
    gated.ok(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {"metadata": {"name": user}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": verbs}]},
    )
    gated.ok(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    )
    result, _ = gated.run("crd", crd, "--delete", "--unsafe-delete-corrupt", "--as", user)
    assert result.returncode == 1, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert f"the RBAC verb 'unsafe-delete-ignore-read-errors' on {crd} in namespace {ns}" in output
    assert gated.status(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}") == 200
    assert gated.status(f"/apis/{group}/v1/namespaces/{ns}/{PLURAL}/bad") == 500  # still there, still unreadable


def test_a_namespace_holding_an_unreadable_secret_is_named_then_goes_with_the_flag(gated):
    ns = gated.namespace()
    gated.secret(ns, "creds", corrupt=True)
    gated.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "held", "finalizers": [DEAD]}})
    result, seconds = gated.run("ns", ns, "--delete", "--timeout", "90")
    assert result.returncode == 1 and seconds < 60, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert f"kubectl unfinalize secrets creds -n {ns} --unsafe-delete-corrupt" in output
    assert "cannot be read from storage" in output and "is kube-controller-manager running" not in output
    result, _ = gated.run("ns", ns, "--delete", "--unsafe-delete-corrupt", "--timeout", "40")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _gone(gated, f"/api/v1/namespaces/{ns}")


def test_the_command_scan_prints_removes_the_object(gated):
    ns = gated.namespace()
    gated.secret(ns, "printed", corrupt=True)
    scanned, _ = gated.run("scan", "-n", ns)
    assert scanned.returncode == 1
    (command,) = [
        line.split("remove: ", 1)[1] for line in scanned.stdout.splitlines() if "remove:" in line and "printed" in line
    ]
    words = command.split()
    assert words[:2] == ["kubectl", "unfinalize"]
    result, _ = gated.run(*words[2:])
    assert result.returncode == 0, result.stdout + result.stderr
    assert gated.status(f"/api/v1/namespaces/{ns}/secrets/printed") == 404
    assert gated.run("scan", "-n", ns)[0].returncode == 0


@pytest.fixture(scope="module")
def ungated(cli):
    """The gate off (the default up to 1.36; 1.29-1.31 have no such gate): the server names nothing."""
    with _plane(False) as plane:
        yield Broken(plane, cli)


@pytest.mark.core
def test_without_the_gate_scan_names_the_type_and_the_gate_and_fails(ungated):
    ns = ungated.namespace()
    ungated.secret(ns, "creds", corrupt=True)
    result, seconds = ungated.run("scan")
    assert result.returncode == 1, result.stdout + result.stderr
    line = next(line for line in result.stderr.splitlines() if line.startswith("not scanned: secrets:"))
    assert "AllowUnsafeMalformedObjectDeletion=true" in line and "Traceback" not in result.stderr
    assert "1 not read" in result.stderr and seconds < BOUND
    document = json.loads(ungated.run("scan", "-o", "json")[0].stdout)
    assert document["ok"] is False and [f.split(":")[0] for f in document["failing"]] == ["secrets"]


@pytest.mark.core
def test_without_the_gate_the_flag_deletes_nothing_and_says_which_gate(ungated):
    ns = ungated.namespace()
    ungated.secret(ns, "keys", corrupt=True)
    mark = ungated.plane.audit_mark()
    result, _ = ungated.run("secrets", "keys", "-n", ns, "--unsafe-delete-corrupt")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "AllowUnsafeMalformedObjectDeletion=true" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    deletes = [e for e in ungated.plane.audit_events(since=mark) if e["verb"] == "delete"]
    assert deletes == [], deletes  # a server without the gate would take the option as a plain delete


def test_scan_free_frees_the_stuck_and_never_deletes_what_it_cannot_read(gated):
    ns, group = gated.namespace(), _group()
    gated.crd(group)
    gated.widget(ns, "stuck", group)
    gated.ok("DELETE", f"/apis/{group}/v1/namespaces/{ns}/{PLURAL}/stuck")
    gated.secret(ns, "creds", corrupt=True)
    mark = gated.plane.audit_mark()
    result, _ = gated.run("scan", "-n", ns, "--free", "--wait", "--timeout", "90s")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"kubectl unfinalize secrets creds -n {ns} --unsafe-delete-corrupt" in result.stdout
    events = gated.plane.audit_events(since=mark)
    assert not [e for e in events if "apiserver.k8s.io/unsafe-delete-ignore-read-error" in (e.get("annotations") or {})]
    assert gated.status(f"/apis/{group}/v1/namespaces/{ns}/{PLURAL}/stuck") == 404  # freed, and gone
    assert gated.status(f"/api/v1/namespaces/{ns}/secrets/creds") == 500  # left as it was


def test_manifests_name_the_unreadable_object_and_delete_it_with_the_flag(gated, tmp_path):
    ns, group = gated.namespace(), _group()
    crd = gated.crd(group)
    gated.widget(ns, "bad", group, corrupt=True)
    documents = [
        crd_body(group),
        {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "bad", "namespace": ns}},
    ]
    (tmp_path / "app.yaml").write_text("".join(f"---\n{json.dumps(d)}\n" for d in documents))
    result, seconds = gated.run("-f", tmp_path / "app.yaml", "--delete")
    assert result.returncode == 1 and seconds < BOUND, result.stdout + result.stderr
    assert f"kubectl unfinalize {crd} bad -n {ns} --unsafe-delete-corrupt" in result.stdout
    result, _ = gated.run("-f", tmp_path / "app.yaml", "--delete", "--unsafe-delete-corrupt")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _gone(gated, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
