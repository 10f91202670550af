"""Objects left in a namespace that another tool removed through /finalize (the most-quoted
fix for a stuck namespace): they stay in etcd with their finalizers, and NamespaceLifecycle
answers every update of them with a 404 that names the namespace. The tool must not call
them gone while they stand, must not wait for them until its deadline, and what it tells
the user to do must work."""

from __future__ import annotations

import contextlib
import json
import secrets

import pytest
from crs import create
from kubernetes.client import CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

DEAD = "unfinalize.test/dead"


def _finalizers(api_client, crd, namespace: str, name: str):
    """The object's finalizers as read now; None once it is gone."""
    try:
        obj = CustomObjectsApi(api_client).get_namespaced_custom_object(
            crd.group, crd.version, namespace, crd.plural, name
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return obj["metadata"].get("finalizers") or []


@pytest.fixture
def removed_namespace(api_client, kubectl, cli):
    """removed(name) deletes the namespace and removes it at once through /finalize, as
    `kubectl get ns X -o json | jq '.spec.finalizers=[]' | kubectl replace --raw .../finalize`
    does, with what is inside left standing. At teardown each is created again, what was
    left in it freed, and deleted: no orphan outlives the test."""
    core = CoreV1Api(api_client)
    removed: list[str] = []

    def remove(name: str) -> None:
        core.delete_namespace(name)
        body = json.loads(kubectl("get", "namespace", name, "-o", "json").stdout)
        body["spec"]["finalizers"] = []
        kubectl("replace", "--raw", f"/api/v1/namespaces/{name}/finalize", "-f", "-", input=json.dumps(body))
        removed.append(name)
        assert kubectl("get", "namespace", name, check=False).returncode != 0  # gone

    yield remove
    for name in removed:
        with contextlib.suppress(ApiException):
            core.create_namespace({"metadata": {"name": name}})
        cli("ns", name, "--delete", "--timeout", "60")


@pytest.fixture
def orphans(api_client, make_crd, namespace, removed_namespace):
    """A custom resource held by a dead finalizer in a namespace that is gone, and a
    bystander of the same CRD in a namespace that exists."""
    crd = make_crd(kind="Orphan")
    gone_ns = f"ut-gone-{secrets.token_hex(3)}"
    CoreV1Api(api_client).create_namespace({"metadata": {"name": gone_ns}})
    create(api_client, crd, "left", gone_ns, finalizers=[DEAD])
    create(api_client, crd, "bystander", namespace, finalizers=[DEAD])
    removed_namespace(gone_ns)
    assert _finalizers(api_client, crd, gone_ns, "left") == [DEAD]  # it stands, readable
    return crd, gone_ns


def test_an_object_in_a_removed_namespace_is_not_called_gone_and_the_printed_fix_works(
    cli, kubectl, api_client, namespace, orphans
):
    crd, gone_ns = orphans
    result = cli("crd", crd.name)
    assert result.returncode == 1, result.stdout + result.stderr
    left = next(line for line in result.stdout.splitlines() if "/left " in line)
    assert "already gone" not in left and f"namespace {gone_ns} is gone" in left, left
    assert _finalizers(api_client, crd, gone_ns, "left") == [DEAD]  # what it said is what was read
    assert _finalizers(api_client, crd, namespace, "bystander") == []
    # The line's command, then the run again, as it says.
    assert f"kubectl create namespace {gone_ns}, then run this again" in left
    kubectl("create", "namespace", gone_ns)
    again = cli("crd", crd.name)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _finalizers(api_client, crd, gone_ns, "left") == []


def test_crd_delete_names_the_instance_in_a_removed_namespace_and_is_not_held_to_the_deadline(cli, api_client, orphans):
    crd, gone_ns = orphans
    result = cli("crd", crd.name, "--delete", "--timeout", "120")
    assert result.returncode == 1, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert "timed out" not in output  # the answer will not change: not waited on until the deadline
    assert "they go on their own" not in output and "every instance" not in output
    crd_line = next(line for line in result.stdout.splitlines() if line.startswith("customresourcedefinition"))
    assert "in a namespace that is gone" in crd_line, crd_line
    left = next(line for line in result.stdout.splitlines() if "/left " in line)
    assert f"namespace {gone_ns} is gone" in left
    assert _finalizers(api_client, crd, gone_ns, "left") == [DEAD]
