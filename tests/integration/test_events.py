"""scan --free --events (issue 42): one events.k8s.io Event per freed group and
namespace, on one of its objects, with the finalizers, the verdict and the record's ID, as
`kubectl events` shows it; without the permission to create Events the frees still
happen and one warning says why none was written."""

from __future__ import annotations

import json
import re

import pytest
from kubernetes.client import CoreV1Api

DEAD = "shop.example.com/cleanup"


HELD = (("configmap", "cart"), ("configmap", "basket"), ("secret", "token"))


@pytest.fixture
def held(api_client, namespace, kubectl):
    """Two ConfigMaps and a Secret deleted and held by a finalizer nothing removes; let go
    afterwards, whatever the test did, so the namespace can go."""
    core = CoreV1Api(api_client)
    for kind, name in HELD:
        body = {"metadata": {"name": name, "finalizers": [DEAD]}}
        if kind == "configmap":
            core.create_namespaced_config_map(namespace, body)
            core.delete_namespaced_config_map(name, namespace)
        else:
            core.create_namespaced_secret(namespace, body)
            core.delete_namespaced_secret(name, namespace)
    yield core
    for kind, name in HELD:
        kubectl("patch", kind, name, "-n", namespace, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                check=False)  # fmt: skip


def all_gone(core: CoreV1Api, namespace: str) -> bool:
    left = core.list_namespaced_config_map(namespace).items + core.list_namespaced_secret(namespace).items
    return not [o for o in left if o.metadata.finalizers]


@pytest.mark.timeout(180)
def test_one_event_per_freed_group_with_the_record_s_id(held, namespace, cli, kubectl):
    core = held
    result = cli("scan", "--free", "--events", "-n", namespace, "--wait", "--timeout", "90s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert all_gone(core, namespace)
    record = re.search(r"record: \S+/(\S+)\.jsonl", result.stderr).group(1)
    listed = json.loads(kubectl("get", "events.events.k8s.io", "-n", namespace, "-o", "json").stdout)["items"]
    ours = sorted(
        (e for e in listed if e.get("reportingController") == "kubectl-unfinalize"),
        key=lambda e: e["regarding"]["kind"],
    )
    assert [(e["regarding"]["kind"], e["reason"], e["type"], e["action"]) for e in ours] == [
        ("ConfigMap", "FinalizersRemoved", "Normal", "RemoveFinalizers"),
        ("Secret", "FinalizersRemoved", "Normal", "RemoveFinalizers"),
    ]
    configmaps, secret = ours
    assert configmaps["regarding"]["name"] in ("cart", "basket") and configmaps["regarding"]["namespace"] == namespace
    assert configmaps["note"].startswith(f"removed {DEAD} from 2 configmaps (record {record}): stuck: ")
    assert secret["note"].startswith(f"removed {DEAD} from secrets token (record {record}): stuck: ")
    shown = kubectl("events", "-n", namespace).stdout
    assert shown.count("FinalizersRemoved") == 2 and record in shown


@pytest.mark.timeout(180)
def test_without_create_on_events_the_frees_happen_and_one_warning_says_why(held, namespace, cli, kubectl):
    """As a user with the janitor's verbs and nothing else (no create)."""
    user = f"no-events-{namespace}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": user},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch", "patch", "delete"]}],
    }
    kubectl("apply", "-f", "-", input=json.dumps(role))
    kubectl("create", "clusterrolebinding", user, f"--clusterrole={user}", f"--user={user}")
    try:
        core = held
        result = cli("scan", "--free", "--events", "-n", namespace, "--wait", "--timeout", "90s", "--as", user)
        assert result.returncode == 0, result.stdout + result.stderr
        assert all_gone(core, namespace)  # read back as the admin
        warnings = [line for line in result.stderr.splitlines() if "no Event written" in line]
        assert warnings == [
            f"warning: no Event written: this user may not create events.k8s.io events in namespace {namespace};"
            " the frees are done"
        ]
        listed = json.loads(kubectl("get", "events.events.k8s.io", "-n", namespace, "-o", "json").stdout)["items"]
        assert not [e for e in listed if e.get("reportingController") == "kubectl-unfinalize"]
    finally:
        kubectl("delete", "clusterrolebinding", user, check=False)
        kubectl("delete", "clusterrole", user, check=False)
