"""Any resource type by name (issue 17): `TYPE NAME`, `TYPE/NAME`, `TYPE -l SELECTOR`,
TYPE spelled as kubectl spells it, against the real API server. What was freed or
deleted is read back from the cluster; the audit log shows no write outside the
selection; bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import secrets

import pytest
from crs import create, wait_until
from kubernetes.client import CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from test_bad_input import one_line_error

HOLD = "unfinalize.test/hold"
PVC_PROTECTION = "kubernetes.io/pvc-protection"


def _configmap(core, ns, name, finalizers=(HOLD,), labels=None):
    body = {"metadata": {"name": name, "finalizers": list(finalizers), "labels": dict(labels or {})}}
    core.create_namespaced_config_map(ns, body)


def _read(read):
    """The object, or None when it is gone."""
    try:
        return read()
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _touched(audit):
    """(resource, namespace, name) of every write since the mark, reviews left out."""
    return {
        (e["objectRef"].get("resource"), e["objectRef"].get("namespace"), e["objectRef"].get("name"))
        for e in audit.writes()
        if e["objectRef"].get("resource") not in ("selfsubjectaccessreviews", "selfsubjectreviews")
    }


@pytest.mark.core
def test_configmap_name_in_a_namespace(api_client, namespace, cli, audit):
    core = CoreV1Api(api_client)
    _configmap(core, namespace, "stuck")
    _configmap(core, namespace, "bystander")
    audit.mark()

    result = cli("configmap", "stuck", "-n", namespace)
    assert result.returncode == 0, result.stderr
    assert f"configmap/stuck unfinalized (namespace {namespace}; removed {HOLD})" in result.stdout
    assert core.read_namespaced_config_map("stuck", namespace).metadata.finalizers is None
    assert core.read_namespaced_config_map("bystander", namespace).metadata.finalizers == [HOLD]
    assert _touched(audit) == {("configmaps", namespace, "stuck")}


def test_the_kubeconfig_namespace_is_the_default_and_a_missing_name_is_skipped(
    api_client, namespace, cli, kubeconfig, tmp_path
):
    """kubectl's rule: without -n, the kubeconfig context's namespace."""
    import yaml

    config = yaml.safe_load(open(kubeconfig, encoding="utf-8"))
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    core = CoreV1Api(api_client)
    _configmap(core, namespace, "here")

    result = cli("cm", "here", "nowhere", "--kubeconfig", path)
    assert result.returncode == 0, result.stderr
    assert f"configmap/here unfinalized (namespace {namespace}" in result.stdout
    assert "configmap/nowhere" in result.stdout + result.stderr and "not found" in result.stdout + result.stderr
    assert core.read_namespaced_config_map("here", namespace).metadata.finalizers is None


@pytest.mark.core
def test_pvc_protection_stays_unless_named(api_client, namespace, cli, audit):
    """The test control plane runs the PVC protection controller: it keeps a claim's
    protection while a (scheduled) pod uses it, puts it back on a live claim, and removes
    it from a deleted claim nothing uses."""
    core = CoreV1Api(api_client)
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    for name in ("data", "logs"):
        core.create_namespaced_persistent_volume_claim(
            namespace, {"metadata": {"name": name, "finalizers": [PVC_PROTECTION, HOLD]}, "spec": claim}
        )
    pod = {
        "metadata": {"name": "user"},
        "spec": {
            "nodeName": "unfinalize-test-node",  # scheduled: the controller counts it as using the claim
            "automountServiceAccountToken": False,
            "containers": [{"name": "c", "image": "registry.invalid/none"}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    wait_until(
        "the namespace's default service account",
        lambda: _read(lambda: core.read_namespaced_service_account("default", namespace)),
    )
    core.create_namespaced_pod(namespace, pod)
    core.delete_namespaced_persistent_volume_claim("data", namespace)
    audit.mark()

    result = cli("pvc/data", "-n", namespace)
    assert result.returncode == 0, result.stderr
    assert f"persistentvolumeclaim/data unfinalized (namespace {namespace}; removed {HOLD})" in result.stdout, result
    read = core.read_namespaced_persistent_volume_claim
    assert read("data", namespace).metadata.finalizers == [PVC_PROTECTION]
    assert _touched(audit) == {("persistentvolumeclaims", namespace, "data")}

    named = cli("persistentvolumeclaims/data", "-n", namespace, "--finalizer", PVC_PROTECTION)
    assert named.returncode == 0, named.stderr
    assert f"removed {PVC_PROTECTION}" in named.stdout
    wait_until("the claim gone", lambda: _read(lambda: read("data", namespace)) is None)

    # --delete: the claim's own controller removes the protection of a claim nothing uses.
    deleted = cli("pvc", "logs", "-n", namespace, "--delete", "--timeout", "60s")
    assert deleted.returncode == 0, deleted.stderr
    assert _read(lambda: read("logs", namespace)) is None


@pytest.mark.core
def test_a_custom_type_by_plural_group(api_client, make_crd, namespace, cli, audit):
    crd = make_crd(kind="Application", group="argoproj.io", short_names=("app",))
    create(api_client, crd, "guestbook", namespace, finalizers=[HOLD])
    create(api_client, crd, "other", namespace, finalizers=[HOLD])
    audit.mark()

    result = cli("applications.argoproj.io", "guestbook", "-n", namespace, "--delete", "--timeout", "30s")
    assert result.returncode == 0, result.stderr
    assert "application.argoproj.io/guestbook deleted" in result.stdout
    custom = CustomObjectsApi(api_client)
    get = custom.get_namespaced_custom_object
    assert _read(lambda: get(crd.group, crd.version, namespace, crd.plural, "guestbook")) is None
    assert get(crd.group, crd.version, namespace, crd.plural, "other")["metadata"]["finalizers"] == [HOLD]
    assert _touched(audit) == {("applications", namespace, "guestbook")}


@pytest.mark.core
def test_a_selector_with_delete_across_namespaces(api_client, namespace, kubectl, cli, audit):
    core = CoreV1Api(api_client)
    other = namespace + "-b"
    kubectl("create", "namespace", other)
    label = f"sel-{secrets.token_hex(3)}"
    try:
        for ns in (namespace, other):
            _configmap(core, ns, "held", labels={"app": label})
            _configmap(core, ns, "plain", finalizers=(), labels={"app": label})
            _configmap(core, ns, "unlabelled")
        audit.mark()

        result = cli("configmaps", "-l", f"app={label}", "-A", "--delete", "--timeout", "30s")
        assert result.returncode == 0, result.stderr
        for ns in (namespace, other):
            for name in ("held", "plain"):
                assert _read(lambda ns=ns, name=name: core.read_namespaced_config_map(name, ns)) is None
            assert core.read_namespaced_config_map("unlabelled", ns).metadata.finalizers == [HOLD]
        selected = {("configmaps", ns, n) for ns in (namespace, other) for n in ("held", "plain")}
        assert _touched(audit) == selected
    finally:
        kubectl("delete", "namespace", other, "--wait=false")


def test_a_selector_stays_in_one_namespace_without_a_and_dry_runs_change_nothing(
    api_client, namespace, kubectl, cli, audit
):
    core = CoreV1Api(api_client)
    other = namespace + "-c"
    kubectl("create", "namespace", other)
    label = f"sel-{secrets.token_hex(3)}"
    try:
        for ns in (namespace, other):
            _configmap(core, ns, "held", labels={"app": label})
        audit.mark()
        client = cli("cm", "-l", f"app={label}", "-n", namespace, "--delete", "--dry-run=client", "-o", "name")
        assert client.returncode == 0, client.stderr
        assert not _touched(audit)
        result = cli("cm", "-l", f"app={label}", "-n", namespace, "--dry-run=server", "-o", "name")
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["configmap/held"]
        assert all("dryRun=All" in e["requestURI"] for e in audit.writes() if e["verb"] == "patch")
        assert core.read_namespaced_config_map("held", namespace).metadata.finalizers == [HOLD]
        result = cli("cm", "-l", f"app={label}", "-n", namespace)
        assert result.returncode == 0, result.stderr
        assert core.read_namespaced_config_map("held", namespace).metadata.finalizers is None
        assert core.read_namespaced_config_map("held", other).metadata.finalizers == [HOLD]
    finally:
        kubectl("delete", "namespace", other, "--wait=false")


def test_only_terminating_leaves_a_live_named_object(api_client, namespace, cli):
    core = CoreV1Api(api_client)
    _configmap(core, namespace, "live")
    _configmap(core, namespace, "going")
    core.delete_namespaced_config_map("going", namespace)
    result = cli("cm", "live", "going", "-n", namespace, "--only-terminating")
    assert result.returncode == 0, result.stderr
    assert core.read_namespaced_config_map("live", namespace).metadata.finalizers == [HOLD]
    wait_until(
        "the terminating one gone", lambda: _read(lambda: core.read_namespaced_config_map("going", namespace)) is None
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        (["nosuchthings", "x"], "the server has no resource type 'nosuchthings'"),
        (["configmapz", "x"], "did you mean configmap"),
        (["configmaps"], "configmaps needs NAME..., -l SELECTOR or --field-selector"),
        (["cm", "x", "-A"], "-A cannot be combined with NAME"),
    ],
)
def test_bad_type_input_is_one_line_and_writes_nothing(api_client, namespace, cli, audit, args, needle):
    CoreV1Api(api_client).create_namespaced_config_map(namespace, {"metadata": {"name": "x", "finalizers": [HOLD]}})
    audit.mark()
    one_line_error(cli(*args, "-n", namespace) if "-A" not in args else cli(*args), 2, needle)
    assert not _touched(audit)
    assert CoreV1Api(api_client).read_namespaced_config_map("x", namespace).metadata.finalizers == [HOLD]


@pytest.mark.core
def test_an_ambiguous_type_lists_the_candidates(api_client, make_crd, namespace, cli, audit):
    first = make_crd(kind="Gizmo")
    second = make_crd(kind="Gizmo")
    create(api_client, first, "g", namespace, finalizers=[HOLD])
    audit.mark()
    err = one_line_error(cli("gizmos", "g", "-n", namespace), 2, "ambiguous")
    assert first.name in err and second.name in err
    assert not _touched(audit)
    assert cli("gizmos." + first.group, "g", "-n", namespace).returncode == 0


def test_the_python_api_takes_a_type_with_names_or_a_selector(api_client, namespace, kubeconfig):
    from kubectl_unfinalize import unfinalize

    core = CoreV1Api(api_client)
    _configmap(core, namespace, "a")
    _configmap(core, namespace, "b", labels={"app": "api"})
    _configmap(core, namespace, "c")
    report = unfinalize(resource="configmaps", names=["a"], namespace=namespace, kubeconfig=kubeconfig)
    assert [(o.name, o.action.value) for o in report.outcomes] == [("a", "unfinalized")]
    report = unfinalize(
        resource="cm", selector="app=api", namespace=namespace, delete=True, timeout=30, kubeconfig=kubeconfig
    )
    report.raise_for_failure()
    assert _read(lambda: core.read_namespaced_config_map("b", namespace)) is None
    unfinalize(objects=["configmap/c"], namespace=namespace, kubeconfig=kubeconfig).raise_for_failure()
    assert core.read_namespaced_config_map("a", namespace).metadata.finalizers is None
    assert core.read_namespaced_config_map("c", namespace).metadata.finalizers is None


def test_a_type_meaning_crds_keeps_the_meaning_of_crd_name(api_client, make_crd, namespace, cli, audit):
    """customresourcedefinition/NAME frees the CRD's instances, as `crd NAME` does; the
    CRD object itself is not unfinalized (its cleanup finalizer is never touched)."""
    crd = make_crd(kind="Kept")
    create(api_client, crd, "x", namespace, finalizers=[HOLD])
    audit.mark()
    result = cli("customresourcedefinitions.apiextensions.k8s.io/" + crd.name)
    assert result.returncode == 0, result.stderr
    assert f"kept.{crd.group}/x unfinalized (namespace {namespace}; removed {HOLD})" in result.stdout
    assert _touched(audit) == {("kepts", namespace, "x")}
