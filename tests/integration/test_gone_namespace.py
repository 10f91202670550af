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
from kubernetes.client import ApiextensionsV1Api, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

DEAD = "unfinalize.test/dead"
REAL_SIZE = {"unfinalize.test/notes": "x" * 4096}  # objects of a real size: a few KiB of annotations
OTHER = "unfinalize.test/other"


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
    create(api_client, crd, "left", gone_ns, finalizers=[DEAD], annotations=REAL_SIZE)
    create(api_client, crd, "bystander", namespace, finalizers=[DEAD], annotations=REAL_SIZE)
    removed_namespace(gone_ns)
    assert _finalizers(api_client, crd, gone_ns, "left") == [DEAD]  # it stands, readable
    return crd, gone_ns


@pytest.fixture
def orphans_and_a_configmap(api_client, make_crd, removed_namespace):
    """The same, with a ConfigMap held by a dead finalizer beside it: not the CRD's."""
    crd = make_crd(kind="Orphan")
    gone_ns = f"ut-gone-{secrets.token_hex(3)}"
    core = CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": gone_ns}})
    create(api_client, crd, "left", gone_ns, finalizers=[DEAD])
    core.create_namespaced_config_map(gone_ns, {"metadata": {"name": "held", "finalizers": [OTHER]}})
    removed_namespace(gone_ns)
    return crd, gone_ns


def _namespace_uid(api_client, name: str):
    try:
        return CoreV1Api(api_client).read_namespace(name).metadata.uid
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _ok(event: dict) -> bool:
    return event.get("responseStatus", {}).get("code", 0) < 300


def _line(stdout: str, part: str) -> str:
    return next(line for line in stdout.splitlines() if part in line)


def test_an_object_in_a_removed_namespace_is_freed_by_creating_the_namespace_again(
    cli, api_client, namespace, orphans, audit
):
    crd, gone_ns = orphans
    audit.mark()
    result = cli("crd", crd.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "already gone" not in _line(result.stdout, "/left ")
    assert f"namespace {gone_ns} was removed while objects in it were held" in result.stderr
    assert "deleted again, gone" in _line(result.stdout, f"namespace/{gone_ns}")
    # What it said is what is read: the object and the namespace are gone, the bystander freed.
    assert _finalizers(api_client, crd, gone_ns, "left") is None
    assert _namespace_uid(api_client, gone_ns) is None
    assert _finalizers(api_client, crd, namespace, "bystander") == []
    # Nothing outside the selection written, nothing written twice: the namespace created and
    # deleted once each, each object patched once with success (the orphan's first patch is
    # refused with the 404 naming its namespace, which is what sends the tool to create it).
    events = audit.writes()
    writes = [(e["verb"], e["objectRef"]["resource"], e["objectRef"].get("name")) for e in events]
    # (a create's objectRef names the object on newer servers only)
    assert sorted(w[0] for w in writes if w[1] == "namespaces") == ["create", "delete"], writes
    assert {w[2] for w in writes if w[1] == crd.plural} == {"left", "bystander"}, writes
    applied = [e["objectRef"]["name"] for e in events if e["objectRef"]["resource"] == crd.plural and _ok(e)]
    assert sorted(applied) == ["bystander", "left"], writes
    refused = [e for e in events if e["objectRef"]["resource"] == crd.plural and not _ok(e)]
    assert refused and all(e["objectRef"]["name"] == "left" and e["responseStatus"]["code"] == 404 for e in refused)
    # The record holds the namespace's two writes; undo says why it leaves it gone.
    record = json.loads(cli("history", "--last", "-o", "json").stdout)
    ops = [(w["op"], w["resource"]["plural"]) for w in record["writes"] if w.get("name") == gone_ns]
    assert ops == [("recreate", "namespaces"), ("delete", "namespaces")], record["writes"]
    undone = cli("undo", "--last")
    assert f"namespace/{gone_ns} object not put back (left gone: it was gone before this run" in undone.stdout


@pytest.mark.core
def test_crd_delete_ends_with_the_crd_and_the_namespace_gone(cli, api_client, orphans):
    crd, gone_ns = orphans
    result = cli("crd", crd.name, "--delete", "--timeout", "120")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "timed out" not in result.stdout + result.stderr
    assert (
        ApiextensionsV1Api(api_client).list_custom_resource_definition(field_selector=f"metadata.name={crd.name}").items
        == []
    )
    assert _namespace_uid(api_client, gone_ns) is None


def test_what_else_was_left_in_the_namespace_created_again_is_freed_so_that_it_goes(
    cli, api_client, orphans_and_a_configmap
):
    crd, gone_ns = orphans_and_a_configmap
    result = cli("crd", crd.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "deleted again, gone" in _line(result.stdout, f"namespace/{gone_ns}")
    assert _finalizers(api_client, crd, gone_ns, "left") is None and _namespace_uid(api_client, gone_ns) is None


def test_with_a_finalizer_named_what_else_holds_it_is_named_and_the_printed_command_frees_it(
    cli, api_client, orphans_and_a_configmap
):
    crd, gone_ns = orphans_and_a_configmap
    result = cli("crd", crd.name, "--finalizer", DEAD, "--timeout", "5")
    line = _line(result.stdout, f"namespace/{gone_ns}")
    assert result.returncode == 1 and "not gone yet" in line, result.stdout + result.stderr
    assert _finalizers(api_client, crd, gone_ns, "left") is None  # the CRD's own: freed, gone
    command = f"kubectl unfinalize ns {gone_ns} --delete"
    assert command in line
    freed = cli(*command.split()[2:])
    assert freed.returncode == 0, freed.stdout + freed.stderr
    assert _namespace_uid(api_client, gone_ns) is None


@pytest.mark.parametrize("how", ["ns --delete", "TYPE NAME -n NS"])
def test_the_other_freeing_commands_free_them_and_leave_no_namespace(cli, api_client, orphans, how):
    crd, gone_ns = orphans
    if how == "ns --delete":
        result = cli("ns", gone_ns, "--delete", "--timeout", "120")
    else:
        result = cli(f"{crd.kind.lower()}.{crd.group}", "left", "-n", gone_ns)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not found (skipped)" not in result.stderr and "already gone" not in result.stdout
    assert f"namespace {gone_ns} was removed while objects in it were held" in result.stderr
    assert _finalizers(api_client, crd, gone_ns, "left") is None
    assert _namespace_uid(api_client, gone_ns) is None


@pytest.fixture
def deleted_orphan(api_client, make_crd, removed_namespace):
    """An object being deleted, held by a dead finalizer, in a namespace that is gone."""
    crd = make_crd(kind="Orphan")
    gone_ns = f"ut-gone-{secrets.token_hex(3)}"
    CoreV1Api(api_client).create_namespace({"metadata": {"name": gone_ns}})
    create(api_client, crd, "left", gone_ns, finalizers=[DEAD])
    CustomObjectsApi(api_client).delete_namespaced_custom_object(crd.group, crd.version, gone_ns, crd.plural, "left")
    removed_namespace(gone_ns)
    return crd, gone_ns


def _orphaned(document: dict, crd) -> list[dict]:
    return [g for g in document["groups"] if g["state"] == "orphaned" and g["resource"] == f"{crd.plural}.{crd.group}"]


@pytest.mark.core
@pytest.mark.parametrize("scope", [(), ("-n", "GONE")], ids=["cluster-wide", "the namespace"])
def test_scan_calls_them_orphaned_fails_and_its_command_frees_them(cli, api_client, deleted_orphan, scope):
    crd, gone_ns = deleted_orphan
    scope = tuple(gone_ns if word == "GONE" else word for word in scope)
    result = cli("scan", *scope, "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    [group] = _orphaned(json.loads(result.stdout), crd)
    assert group["namespaces"] == [gone_ns] and group["stuck"] and f"namespace {gone_ns} is gone" in group["verdict"]
    [command] = group["commands"]
    assert command == f"kubectl unfinalize ns {gone_ns} --delete"
    freed = cli(*command.split()[2:])
    assert freed.returncode == 0, freed.stdout + freed.stderr
    assert _finalizers(api_client, crd, gone_ns, "left") is None and _namespace_uid(api_client, gone_ns) is None
    after = cli("scan", *scope, "-o", "json")
    assert _orphaned(json.loads(after.stdout), crd) == []


def test_scan_free_frees_them_and_leaves_no_namespace(cli, api_client, deleted_orphan):
    crd, gone_ns = deleted_orphan
    result = cli("scan", "--free", "-n", gone_ns)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _finalizers(api_client, crd, gone_ns, "left") is None and _namespace_uid(api_client, gone_ns) is None
