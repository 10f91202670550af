"""A CRD whose conversion webhook is gone, on the real API server (issue 16, cases 1 and 5).

The CRD serves v1 and v2; objects are stored in both (v1 first, then the storage version
is switched to v2), and its conversion webhook points at a closed port on 127.0.0.1, so
the API server fails every list of them with a 500. With --delete the tool switches the
webhook off and the CRD goes; without it nothing is written, the webhook is named and
the run ends at once. The only traffic is to 127.0.0.1: the webhook is a URL at a port
nothing listens on, never a Service.

The audit policy of the test control plane records writes only, so the lists the tool
sent are counted from the API server's own apiserver_request_total metric."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import secrets
import socket
import time

import pytest
import yaml
from crdinfo import CrdInfo
from crs import crd_state, create, create_many, wait_until
from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

HOLD = "unfinalize.test/hold"
PER_VERSION = 40
SCHEMA = {
    "openAPIV3Schema": {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
}


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cluster_ca(kubeconfig: str) -> str:
    config = yaml.safe_load(open(kubeconfig))
    data = (config["clusters"][0]["cluster"] or {}).get("certificate-authority-data")
    if not data:
        pytest.skip("the test kubeconfig has no certificate-authority-data to use as a caBundle")
    return str(data)


def list_fails(custom: CustomObjectsApi, crd: CrdInfo, version: str) -> bool:
    try:
        custom.list_cluster_custom_object(crd.group, version, crd.plural, limit=1000)
    except ApiException as exc:
        return exc.status == 500 and "conversion webhook" in str(exc.body)
    return False


@dataclasses.dataclass
class DeadConversion:
    crd: CrdInfo
    url: str
    keys: list[tuple[str, str]]


@pytest.fixture
def dead_conversion(api_client, kubeconfig, namespace):
    """A two-version CRD with objects (finalized) stored as v1 and v2, its conversion
    webhook at a closed port. Teardown: conversion None, finalizers off, CRD deleted."""
    ext, custom = ApiextensionsV1Api(api_client), CustomObjectsApi(api_client)
    group = f"t{secrets.token_hex(4)}.unfinalize.test"
    crd = CrdInfo.of(group, "Convertible", versions=("v1", "v2"))
    versions = [{"name": v, "served": True, "storage": v == "v1", "schema": SCHEMA} for v in crd.versions]
    names = {"plural": crd.plural, "singular": "convertible", "kind": crd.kind, "listKind": crd.kind + "List"}
    spec = {"group": group, "scope": "Namespaced", "names": names, "versions": versions}
    ext.create_custom_resource_definition({"metadata": {"name": crd.name}, "spec": spec})
    try:
        wait_until(f"{crd.name} to serve v1", lambda: _creates(api_client, crd, namespace))
        keys = create_many(api_client, crd, PER_VERSION, [namespace], finalizers=[HOLD], prefix="one")
        url = f"https://127.0.0.1:{closed_port()}/convert"
        webhook = {"conversionReviewVersions": ["v1"], "clientConfig": {"url": url, "caBundle": cluster_ca(kubeconfig)}}
        ops = [
            {"op": "replace", "path": "/spec/versions/0/storage", "value": False},
            {"op": "replace", "path": "/spec/versions/1/storage", "value": True},
            {"op": "add", "path": "/spec/conversion", "value": {"strategy": "Webhook", "webhook": webhook}},
        ]
        ext.patch_custom_resource_definition(crd.name, ops)
        as_v2 = dataclasses.replace(crd, versions=("v2", "v1"))
        keys += create_many(api_client, as_v2, PER_VERSION, [namespace], finalizers=[HOLD], prefix="two")
        late = iter(range(1000))

        def stored_in_both() -> bool:
            # Until the API server serves the new storage version, a create may still store v1.
            if list_fails(custom, crd, "v1") and list_fails(custom, crd, "v2"):
                return True
            keys.append((namespace, f"late{next(late)}"))
            create(api_client, as_v2, keys[-1][1], namespace, finalizers=[HOLD])
            return False

        wait_until("objects stored as v1 and v2, lists failing on the webhook", stored_in_both)
        yield DeadConversion(crd, url, keys)
    finally:
        _teardown(ext, custom, crd, namespace)


def _creates(api_client, crd: CrdInfo, namespace: str) -> bool:
    try:
        create(api_client, crd, "probe", namespace)
    except ApiException:
        return False
    return True


def _teardown(ext: ApiextensionsV1Api, custom: CustomObjectsApi, crd: CrdInfo, namespace: str) -> None:
    with contextlib.suppress(ApiException):
        ext.patch_custom_resource_definition(crd.name, {"spec": {"conversion": {"strategy": "None", "webhook": None}}})
    deadline = time.monotonic() + 20
    with contextlib.suppress(ApiException):
        ext.delete_custom_resource_definition(crd.name)
    while time.monotonic() < deadline:
        try:
            items = custom.list_namespaced_custom_object(crd.group, "v2", namespace, crd.plural)["items"]
            for obj in items:
                if obj["metadata"].get("finalizers"):
                    custom.patch_namespaced_custom_object(
                        crd.group,
                        "v2",
                        namespace,
                        crd.plural,
                        obj["metadata"]["name"],
                        {"metadata": {"finalizers": None}},
                    )
            ext.read_custom_resource_definition(crd.name)
        except ApiException as exc:
            if exc.status == 404:
                return
        time.sleep(0.2)


def lists_of(kubectl, crd: CrdInfo) -> int:
    """LIST requests of the CRD's resource the API server has answered (any code), from its metrics."""
    text = kubectl("get", "--raw", "/metrics").stdout
    total = 0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'verb="LIST"' in line:
            if f'group="{crd.group}"' in line and f'resource="{crd.plural}"' in line:
                total += int(float(line.rsplit(" ", 1)[1]))
    return total


@pytest.mark.parametrize("output", ["text", "json"])
def test_delete_switches_the_dead_webhook_off_and_the_crd_goes(dead_conversion, api_client, cli, audit, output):
    crd = dead_conversion.crd
    audit.mark()
    started = time.monotonic()
    result = cli("crd", crd.name, "--delete", "--timeout", "60s", "-o", output)
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    assert crd_state(api_client, crd.name) is None
    if output == "json":
        document = json.loads(result.stdout)
        (changed,) = [i for i in document["items"] if i["action"] == "reconfigured"]
        assert changed["name"] == crd.name and changed["resource"] == "customresourcedefinition.apiextensions.k8s.io"
        message = changed["message"]
        assert document["summary"]["reconfigured"] == 1 and document["summary"]["failed"] == 0
        assert sum(1 for i in document["items"] if i["action"] == "unfinalized") == len(dead_conversion.keys)
    else:
        (line,) = [line for line in result.stdout.splitlines() if " reconfigured" in line]
        assert line.startswith(f"customresourcedefinition.apiextensions.k8s.io/{crd.name} reconfigured: ")
        message = line
    assert "set spec.conversion to {strategy: None}, was {" in message
    assert '"strategy":"Webhook"' in message and f'"url":"{dead_conversion.url}"' in message
    assert f"{dead_conversion.url} is unreachable (connection refused)" in message
    assert "stored versions v1, v2" in message
    crd_writes = [e for e in audit.writes() if e["objectRef"]["resource"] == "customresourcedefinitions"]
    assert [e["verb"] for e in crd_writes] == ["patch", "delete"], crd_writes
    assert all(e["objectRef"]["name"] == crd.name for e in crd_writes)
    print(f"--delete -o {output}: exit 0 in {seconds:.1f}s, {len(audit.writes())} writes")


def test_without_delete_nothing_is_written_and_it_says_what_finishes_the_job(dead_conversion, cli, audit, kubectl):
    crd = dead_conversion.crd
    before = lists_of(kubectl, crd)
    audit.mark()
    started = time.monotonic()
    result = cli("crd", crd.name, "--timeout", "60s")
    seconds = time.monotonic() - started
    lists = lists_of(kubectl, crd) - before
    assert result.returncode == 1, result.stdout + result.stderr
    assert seconds < 20, seconds
    writes = [e for e in audit.writes() if not e["objectRef"]["resource"].startswith("selfsubject")]
    assert writes == []
    assert lists < 20, lists
    (line,) = [line for line in result.stdout.splitlines() if crd.name in line]
    assert line.startswith(f"customresourcedefinition.apiextensions.k8s.io/{crd.name} failed: cannot list ")
    assert f"conversion webhook {dead_conversion.url} is unreachable (connection refused)" in line
    assert f"run `kubectl unfinalize crd {crd.name} --delete`" in line
    assert re.search(r"\b1 failed\b", result.stderr + result.stdout), result.stderr
    print(f"without --delete: exit 1 in {seconds:.1f}s, {lists} lists, {len(writes)} writes")


def test_a_delete_whose_remedy_is_forbidden_ends_at_once_with_one_failure(dead_conversion, cli, audit, kubectl):
    """The remedy cannot be applied (no RBAC patch on CRDs): --delete must not re-list
    the failing CRD until the deadline either."""
    crd = dead_conversion.crd
    user = f"conversion-{secrets.token_hex(4)}"
    rules = [
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["get", "list", "delete"],
        },
        {"apiGroups": [crd.group], "resources": [crd.plural], "verbs": ["get", "list", "patch", "delete"]},
    ]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": user},
        "rules": rules,
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
    }
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([role, binding]))
    try:
        before = lists_of(kubectl, crd)
        audit.mark()
        started = time.monotonic()
        result = cli("crd", crd.name, "--delete", "--timeout", "60s", "--as", user)
        seconds = time.monotonic() - started
        lists = lists_of(kubectl, crd) - before
    finally:
        kubectl("delete", "clusterrole,clusterrolebinding", user, "--ignore-not-found")
    assert result.returncode == 1, result.stdout + result.stderr
    assert seconds < 20, seconds
    assert lists < 20, lists
    applied = [
        e
        for e in audit.writes()
        if e["responseStatus"]["code"] < 300 and e["objectRef"]["resource"] in (crd.plural, "customresourcedefinitions")
    ]
    assert applied == []
    (line,) = [line for line in result.stdout.splitlines() if crd.name in line]
    assert " failed: cannot list " in line and "cannot set spec.conversion.strategy to None: forbidden" in line
    assert re.search(r"\b1 failed\b", result.stderr + result.stdout), result.stderr
    print(f"--delete, remedy forbidden: exit 1 in {seconds:.1f}s, {lists} lists, no write applied")


@pytest.fixture
def dead_from_the_start(api_client, kubeconfig, namespace):
    """A two-version CRD whose conversion webhook (a closed port) is there before its one
    object, stored as v1: the garbage collector's metadata informer, which lists the
    preferred version v2, never syncs. Teardown: conversion None, the CRD deleted."""
    ext, custom = ApiextensionsV1Api(api_client), CustomObjectsApi(api_client)
    group = f"t{secrets.token_hex(4)}.unfinalize.test"
    crd = CrdInfo.of(group, "Stalling", versions=("v1", "v2"))
    versions = [{"name": v, "served": True, "storage": v == "v1", "schema": SCHEMA} for v in crd.versions]
    url = f"https://127.0.0.1:{closed_port()}/convert"
    webhook = {"conversionReviewVersions": ["v1"], "clientConfig": {"url": url, "caBundle": cluster_ca(kubeconfig)}}
    names = {"plural": crd.plural, "singular": "stalling", "kind": crd.kind, "listKind": crd.kind + "List"}
    spec = {"group": group, "scope": "Namespaced", "names": names, "versions": versions}
    spec["conversion"] = {"strategy": "Webhook", "webhook": webhook}
    ext.create_custom_resource_definition({"metadata": {"name": crd.name}, "spec": spec})
    try:
        wait_until(f"{crd.name} to serve v1", lambda: _creates(api_client, crd, namespace))
        wait_until("lists of v2 to fail on the webhook", lambda: list_fails(custom, crd, "v2"))
        yield crd
    finally:
        _teardown(ext, custom, crd, namespace)


def _orphan(core, namespace: str, name: str) -> None:
    from kubernetes.client import V1DeleteOptions

    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": owner.metadata.uid}
    body = {"metadata": {"name": f"{name}-child", "ownerReferences": [reference]}}
    core.create_namespaced_config_map(namespace, body)
    core.delete_namespaced_config_map(name, namespace, body=V1DeleteOptions(propagation_policy="Orphan"))


def _still_there(core, namespace: str, name: str) -> bool:
    try:
        core.read_namespaced_config_map(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@pytest.mark.core
def test_the_garbage_collector_goes_on_beside_a_type_it_cannot_list_on_every_supported_release(
    dead_from_the_start, control_plane, api_client, namespace
):
    """kubernetes/kubernetes#101078: a collector that started while a CRD's conversion
    webhook failed its lists used to wait for that type's informer before it processed
    anything, for good. On the releases the tool supports (this runs on the oldest too:
    make test-version) it goes on: v1.36.3 waits 30 s ("not all resource monitors could be
    synced, proceeding anyways"), v1.29.15 not at all. So the tool claims no stall of the
    collector, and an owner that stays is named with the collector itself (owners.py)."""
    from kubernetes.client import CoreV1Api

    core = CoreV1Api(api_client)
    control_plane.restart_controller_manager()
    time.sleep(2)  # its garbage collector started, with the type it cannot list
    _orphan(core, namespace, "owner")
    wait_until("the collector to let the orphaned owner go", lambda: not _still_there(core, namespace, "owner"), 90)
    assert core.read_namespaced_config_map("owner-child", namespace).metadata.owner_references is None
