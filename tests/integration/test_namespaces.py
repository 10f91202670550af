"""`kubectl unfinalize ns NAME` against the real control plane: the namespace controller
(kube-controller-manager) deletes what is inside, the tool frees what blocks it."""

from __future__ import annotations

import contextlib
import json
import secrets
import time

import pytest
import yaml
from crs import create, down_apiservice, snapshot, wait_until
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException
from test_operator import crd_dir, operator, populate  # noqa: F401 - fixtures for the kopf test

HOLD = "unfinalize.test/hold"
KOPF = "kopf.zalando.org/KopfFinalizerMarker"


def namespace_state(api_client, name: str):
    """The Namespace object, or None once it is gone."""
    try:
        return CoreV1Api(api_client).read_namespace(name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def gone(api_client, name: str, timeout: float = 60.0) -> None:
    wait_until(f"namespace {name} to be gone", lambda: namespace_state(api_client, name) is None, timeout=timeout)


def configmap(api_client, namespace: str, name: str = "cm", finalizers=(HOLD,)) -> None:
    body = {"metadata": {"name": name, "finalizers": list(finalizers)}, "data": {"k": "v"}}
    CoreV1Api(api_client).create_namespaced_config_map(namespace, body)


def configmap_finalizers(api_client, namespace: str, name: str = "cm"):
    try:
        return tuple(CoreV1Api(api_client).read_namespaced_config_map(name, namespace).metadata.finalizers or ())
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def terminating(api_client, name: str) -> bool:
    ns = namespace_state(api_client, name)
    return bool(ns and ns.metadata.deletion_timestamp)


@pytest.fixture
def make_namespace(api_client, kubectl):
    """make_namespace(finalizers=()) -> a fresh namespace's name; at teardown anything
    left is freed by hand (merge patches) and the namespace deleted, never waited on."""
    core = CoreV1Api(api_client)
    made: list[str] = []

    def make(finalizers=()) -> str:
        name = f"uns-{secrets.token_hex(4)}"
        core.create_namespace({"metadata": {"name": name, "finalizers": list(finalizers)}})
        made.append(name)
        return name

    yield make
    for name in made:
        if namespace_state(api_client, name) is None:
            continue
        with contextlib.suppress(Exception):
            kubectl("patch", "namespace", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
            kubectl("patch", "configmap", "--all", "-n", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
            kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found")


@pytest.fixture
def stuck(api_client, make_crd, make_namespace, kubectl):
    """A namespace holding objects of two CRDs and a ConfigMap, all with finalizers, and
    the same CRDs' objects in a bystander namespace."""
    alpha, beta = make_crd(kind="Alpha"), make_crd(kind="Beta")
    target, bystander = make_namespace(), make_namespace()
    for crd in (alpha, beta):
        for ns in (target, bystander):
            create(api_client, crd, "one", ns, finalizers=[HOLD])
            create(api_client, crd, "two", ns, finalizers=[HOLD, "other.test/keep"])
    configmap(api_client, target)
    return {"name": target, "bystander": bystander, "crds": (alpha, beta)}


def stick(kubectl, api_client, name: str) -> None:
    """What a test suite's teardown does: delete without waiting; it stays Terminating."""
    kubectl("delete", "namespace", name, "--wait=false")
    wait_until(f"namespace {name} terminating", lambda: terminating(api_client, name))


REVIEWS = ("selfsubjectaccessreviews", "selfsubjectreviews", "selfsubjectrulesreviews")


def changes(events) -> list[dict]:
    """Audit write events that could change something: not the permission reviews (creates that store nothing)."""
    return [e for e in events if (e.get("objectRef") or {}).get("resource") not in REVIEWS]


def writes_outside_namespace(events, name: str) -> list[dict]:
    outside = []
    for event in changes(events):
        ref = event.get("objectRef") or {}
        if ref.get("namespace") == name or (ref.get("resource") == "namespaces" and ref.get("name") == name):
            continue
        outside.append(event)
    return outside


# ----------------------------------------------------------------------------- 1


@pytest.mark.core
def test_a_stuck_namespace_is_freed_and_goes_and_other_namespaces_keep_theirs(stuck, api_client, kubectl, cli):
    name, bystander = stuck["name"], stuck["bystander"]
    before = {
        crd.name: {k: v for k, v in snapshot(api_client, crd).items() if k[0] == bystander} for crd in stuck["crds"]
    }
    stick(kubectl, api_client, name)
    result = cli("ns", name)
    assert result.returncode == 0, result.stderr
    assert f"configmap/cm unfinalized (namespace {name}; removed {HOLD})" in result.stdout, result.stdout
    for crd in stuck["crds"]:
        assert f"{crd.kind.lower()}.{crd.group}/two unfinalized (namespace {name}" in result.stdout
    assert result.stdout.count("unfinalized") == 5, result.stdout
    gone(api_client, name)
    for crd in stuck["crds"]:  # the same CRDs' objects elsewhere are untouched
        after = {k: v for k, v in snapshot(api_client, crd).items() if k[0] == bystander}
        assert after == before[crd.name]


# ----------------------------------------------------------------------------- 2


@pytest.mark.core
def test_delete_an_active_namespace_deletes_it_frees_it_and_waits_until_it_is_gone(stuck, api_client, cli):
    name = stuck["name"]
    started = time.monotonic()
    result = cli("namespace", name, "--delete", "--timeout", "90s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"namespace/{name} deleted" in result.stdout
    assert result.stdout.count("unfinalized") == 5, result.stdout
    assert namespace_state(api_client, name) is None  # it waited: gone when it returned
    assert time.monotonic() - started < 90


def test_python_api_deletes_and_frees_a_namespace(stuck, api_client, kube_env):
    from kubectl_unfinalize import unfinalize

    report = unfinalize(namespaces=[stuck["name"]], delete=True, timeout=90, kubeconfig=kube_env["KUBECONFIG"])
    report.raise_for_failure()
    assert report.count("unfinalized") == 5
    assert namespace_state(api_client, stuck["name"]) is None


def test_delete_wins_over_a_running_kopf_operator_that_puts_finalizers_back(
    api_client,
    crd_dir,  # noqa: F811 - the fixture imported from test_operator
    operator,  # noqa: F811
    make_namespace,
    cli,
):
    """The operator keeps running: objects freed before the namespace controller marks
    them get kopf's finalizer back, and are freed again once they are being deleted."""
    group, _ = crd_dir
    name = make_namespace()
    populate(api_client, group, [name])
    result = cli("ns", name, "--delete", "--timeout", "90s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert namespace_state(api_client, name) is None
    assert operator.poll() is None  # it ran the whole time


# ----------------------------------------------------------------------------- 3


@pytest.fixture
def broken_apiservice(kubectl):
    """An APIService whose service does not exist: its group cannot be discovered, so
    the namespace controller cannot finish any namespace while it is there."""
    group = f"t{secrets.token_hex(4)}.unfinalize.test"
    body = down_apiservice(group)
    name = body["metadata"]["name"]
    kubectl("apply", "-f", "-", input=yaml.safe_dump(body))
    try:
        wait_until(
            f"APIService {name} Available=False",
            lambda: '"False"' in kubectl("get", "apiservice", name, "-o", "jsonpath={.status.conditions}").stdout,
        )
        yield {"name": name, "group": group, "service": body["spec"]["service"]}
    finally:  # never leave it: it would block every other test's namespace deletion
        kubectl("delete", "apiservice", name, "--ignore-not-found")


@pytest.mark.core
def test_an_unavailable_apiservice_is_named_and_a_second_run_completes_once_it_is_gone(
    api_client, make_namespace, kubectl, cli, broken_apiservice
):
    name = make_namespace()
    configmap(api_client, name)
    stick(kubectl, api_client, name)
    started = time.monotonic()
    result = cli("ns", name, "--delete", "--timeout", "6s")
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stdout + result.stderr
    assert elapsed < 6 + 5 + 5, elapsed  # the deadline, the diagnosis grace, start-up
    service = broken_apiservice["service"]
    line = next(line for line in result.stdout.splitlines() if broken_apiservice["name"] in line)
    assert "still blocking" in line and f"service {service['namespace']}/{service['name']}" in line, line
    assert "Available=False" in line and "is not present" in line, line
    assert f"skipped: {broken_apiservice['group']}/v1beta1 unavailable" in result.stderr
    assert "NamespaceDeletionDiscoveryFailure" in result.stdout  # the namespace controller's condition
    assert configmap_finalizers(api_client, name) is None  # what could be freed was
    assert namespace_state(api_client, name) is not None
    kubectl("delete", "apiservice", broken_apiservice["name"])
    # The namespace controller retries a failed namespace with a backoff (up to a minute).
    again = cli("ns", name, "--delete", "--timeout", "100s", timeout=150)
    assert again.returncode == 0, again.stdout + again.stderr
    assert namespace_state(api_client, name) is None


# ----------------------------------------------------------------------------- 4


@pytest.mark.parametrize("mode", ["client", "server"])
def test_dry_runs_change_nothing_and_list_every_object_that_would_change(stuck, api_client, cli, audit, mode):
    name = stuck["name"]
    before = [snapshot(api_client, crd) for crd in stuck["crds"]]
    audit.mark()
    result = cli("ns", name, "--delete", f"--dry-run={mode}", "-o", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dryRun"] == mode
    changed = sorted((i["resource"], i["name"], i["action"]) for i in report["items"])
    kinds = sorted(f"{crd.kind.lower()}.{crd.group}" for crd in stuck["crds"])
    expected = [("configmap", "cm", "unfinalized"), ("namespace", name, "deleted")]
    expected += [(kind, obj, "unfinalized") for kind in kinds for obj in ("one", "two")]
    assert changed == sorted(expected)
    assert all(i["namespace"] == name for i in report["items"] if i["resource"] != "namespace")
    assert [snapshot(api_client, crd) for crd in stuck["crds"]] == before
    assert configmap_finalizers(api_client, name) == (HOLD,)
    assert not terminating(api_client, name)
    writes = changes(audit.writes())
    if mode == "client":
        assert writes == []
    else:
        assert writes and all("dryRun=All" in e["requestURI"] for e in writes), writes


# ----------------------------------------------------------------------------- 5


def test_the_namespaces_own_finalizer_is_freed_never_its_spec_or_finalize(
    api_client, make_namespace, kubectl, cli, audit
):
    name = make_namespace(finalizers=[KOPF])
    stick(kubectl, api_client, name)
    # The namespace controller empties it and removes its own 'kubernetes' finalizer; the
    # operator's marker keeps it.
    wait_until(
        "the namespace controller to finish its part",
        lambda: not (namespace_state(api_client, name).spec.finalizers or []),
        timeout=60,
    )
    audit.mark()
    result = cli("ns", name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"namespace/{name} unfinalized (removed {KOPF})" in result.stdout, result.stdout
    gone(api_client, name, timeout=30)
    writes = changes(audit.writes())
    assert [(e["verb"], e["objectRef"]["resource"], e["objectRef"].get("name")) for e in writes] == [
        ("patch", "namespaces", name)
    ], writes
    assert not any(e["objectRef"].get("subresource") for e in writes)  # never /finalize, never /status


# ----------------------------------------------------------------------------- 6


def test_a_namespace_that_does_not_exist_is_skipped_in_one_line(cli, audit):
    name = f"uns-missing-{secrets.token_hex(3)}"
    audit.mark()
    for args in (("ns", name), ("ns", name, "--delete")):
        result = cli(*args)
        assert result.returncode == 0, result.stderr
        assert f"namespace/{name} not found (skipped)" in result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""
    assert changes(audit.writes()) == []


def test_an_active_namespace_without_delete_is_freed_and_stays(stuck, api_client, cli, audit):
    name = stuck["name"]
    audit.mark()
    result = cli("ns", name)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("unfinalized") == 5
    state = namespace_state(api_client, name)
    assert state is not None and state.metadata.deletion_timestamp is None and state.status.phase == "Active"
    assert configmap_finalizers(api_client, name) == ()
    for crd in stuck["crds"]:
        inside = {k: v for k, v in snapshot(api_client, crd).items() if k[0] == name}
        assert inside and all(fin == () for _, fin, _ in inside.values())
    assert writes_outside_namespace(audit.writes(), name) == []


def test_resource_types_the_user_may_not_list_are_reported_in_one_line(stuck, api_client, kubectl, cli, audit):
    name = stuck["name"]
    alpha, _ = stuck["crds"]
    user = f"limited-{secrets.token_hex(3)}"
    role = f"{name}-limited"
    rules = [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "patch"]},
        {"apiGroups": [alpha.group], "resources": [alpha.plural], "verbs": ["list", "patch"]},
    ]
    objects = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
        },
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": role}, "rules": rules},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
        },
    ]
    kubectl("apply", "-n", name, "-f", "-", input=yaml.safe_dump_all(objects))
    try:
        audit.mark()
        result = cli("ns", name, "--as", user)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        denied = [line for line in result.stdout.splitlines() if "cannot list" in line]
        assert len(denied) == 1, result.stdout
        assert f"forbidden: user '{user}' cannot list" in denied[0] and "secrets" in denied[0], denied
        assert f"{stuck['crds'][1].plural}.{stuck['crds'][1].group}" in denied[0]
        assert f"{alpha.plural}.{alpha.group}" not in denied[0]
        # What the user may touch is freed; the rest is left as it was.
        assert configmap_finalizers(api_client, name) == ()
        assert result.stdout.count("unfinalized") == 3, result.stdout
        assert writes_outside_namespace(audit.writes(), name) == []
        # Without the right to delete the namespace: refused before any change, in one line.
        audit.mark()
        refused = cli("ns", name, "--delete", "--as", user)
        assert refused.returncode == 1
        assert f"cannot delete namespaces/{name}" in refused.stderr and "nothing was changed" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert changes(audit.writes()) == []
    finally:
        kubectl("delete", "clusterrole,clusterrolebinding", role, "--ignore-not-found")
