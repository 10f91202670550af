"""Many CRDs as one job, on a control plane of this module's own whose audit log records
the admin user's reads as well as its writes: every object freed and gone, each CRD
deleted once and only after each of its instances was deleted and freed, and the
requests a run sends per CRD (lists, GETs, access reviews) below what a design that
reads each CRD at each poll would send. Also what the API server answers to an access
review of resource "*", which the preflight relies on.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import controlplane
import pytest
from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
EXISTING_KUBECONFIG_ENV = "UNFINALIZE_TEST_KUBECONFIG"
FINALIZER = "example.com/cleanup"
NAMESPACES = ("many-a", "many-b")


@pytest.fixture(scope="module")
def cp():
    """A control plane auditing reads too: the session's records only writes (cheaper)."""
    if os.environ.get(EXISTING_KUBECONFIG_ENV):
        pytest.skip(
            "these tests read the audit log of the project's own control plane (unset UNFINALIZE_TEST_KUBECONFIG)"
        )
    controlplane.find_binaries(controlplane.BINARIES)
    with controlplane.ControlPlane(audit_reads=True) as plane:
        yield plane


@pytest.fixture(scope="module")
def client(cp):
    from kubernetes import config

    api = config.new_client_from_config(config_file=cp.kubeconfig)
    from kubernetes.client import CoreV1Api

    for ns in NAMESPACES:
        CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
    yield api
    with contextlib.suppress(Exception):
        api.close()


@pytest.fixture(scope="module")
def tool(cp, tmp_path_factory):
    """tool(*args, user=None) -> CompletedProcess: the checkout's script (or UNFINALIZE_BINARY
    as a kubectl plugin) against this module's control plane."""
    env = dict(os.environ, KUBECONFIG=cp.kubeconfig, NO_COLOR="1")
    command = [sys.executable, str(ROOT / "kubectl-unfinalize")]
    if os.environ.get("UNFINALIZE_BINARY"):
        plugins = tmp_path_factory.mktemp("plugins")
        shutil.copy2(os.environ["UNFINALIZE_BINARY"], plugins / "kubectl-unfinalize")
        env["PATH"] = os.pathsep.join([str(plugins), cp.bin_dir, env.get("PATH", "")])
        command = [os.path.join(cp.bin_dir, "kubectl"), "unfinalize"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*command, *args], env=env, text=True, capture_output=True, timeout=300)

    return run


def plural(i: int) -> str:
    return f"kind{i:03d}s"


def make_group(client, empty: int, full: int, objects: int) -> tuple[str, list[tuple[str, str, str]]]:
    """A fresh group of `empty` CRDs with no instances, then `full` CRDs with `objects`
    instances each, holding a finalizer: the group, and (plural, namespace, name) of each."""
    from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi

    group = f"g{secrets.token_hex(3)}.many.test"
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    ext, custom = ApiextensionsV1Api(client), CustomObjectsApi(client)

    def crd(i: int) -> None:
        ext.create_custom_resource_definition(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural(i)}.{group}"},
                "spec": {
                    "group": group,
                    "scope": "Namespaced",
                    "names": {"plural": plural(i), "singular": plural(i)[:-1], "kind": f"Kind{i:03d}"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
                },
            }
        )

    def served(i: int) -> bool:
        try:
            custom.list_cluster_custom_object(group, "v1", plural(i), limit=1)
        except Exception:  # noqa: BLE001 - not served yet
            return False
        return True

    def instances(i: int) -> list[tuple[str, str, str]]:
        made = []
        for k in range(objects if i >= empty else 0):
            ns = NAMESPACES[k % len(NAMESPACES)]
            body = {
                "apiVersion": f"{group}/v1",
                "kind": f"Kind{i:03d}",
                "metadata": {"name": f"o{k}", "namespace": ns, "finalizers": [FINALIZER]},
            }
            custom.create_namespaced_custom_object(group, "v1", ns, plural(i), body)
            made.append((plural(i), ns, f"o{k}"))
        return made

    total = empty + full
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(crd, range(total)))
        wait_until("CRDs not served", lambda: all(pool.map(served, range(total))), timeout=120)
        made = [obj for objs in pool.map(instances, range(total)) for obj in objs]
    return group, made


def crds_left(client, group: str) -> list[str]:
    from kubernetes.client import ApiextensionsV1Api

    items = ApiextensionsV1Api(client).list_custom_resource_definition().items
    return [c.metadata.name for c in items if c.spec.group == group]


def tools_requests(cp, since: int) -> list[dict]:
    """The tool's requests since the byte offset, as audited (user agent kubectl-unfinalize)."""
    return [
        e
        for e in cp.audit_events(since)
        if e.get("userAgent", "").startswith("kubectl-unfinalize/") and e.get("stage") == "ResponseComplete"
    ]


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_many_crds_are_freed_and_deleted_in_order_with_a_bounded_number_of_requests_per_crd(cp, client, tool):
    """50 empty CRDs and 50 with 3 finalized objects each, one group, `crd --group G --delete`."""
    empty, full = 50, 50
    group, objects = make_group(client, empty, full, 3)
    assert len(objects) == full * 3
    mark = cp.audit_mark()
    result = tool("crd", "--group", group, "--delete", "--timeout", "3m")
    assert result.returncode == 0, result.stderr[-3000:]
    assert crds_left(client, group) == []

    events = tools_requests(cp, mark)
    crds = [e for e in events if e["objectRef"].get("resource") == "customresourcedefinitions"]
    deletes = Counter(e["objectRef"]["name"] for e in crds if e["verb"] == "delete")
    assert sorted(deletes) == sorted(f"{plural(i)}.{group}" for i in range(empty + full))
    assert set(deletes.values()) == {1}, "a CRD was deleted more than once"

    # The order rule, from the API server's own timestamps: each instance's DELETE and
    # finalizer PATCH had completed before its CRD's DELETE was received.
    crd_deleted = {e["objectRef"]["name"]: when(e["requestReceivedTimestamp"]) for e in crds if e["verb"] == "delete"}
    instance_writes: dict[tuple[str, str, str], dict[str, datetime]] = {}
    for e in events:
        ref = e["objectRef"]
        if ref.get("apiGroup") == group and e["verb"] in ("delete", "patch") and ref.get("name"):
            key = (ref["resource"], ref["namespace"], ref["name"])
            instance_writes.setdefault(key, {})[e["verb"]] = when(e["stageTimestamp"])
    assert sorted(instance_writes) == sorted(objects)
    for (resource, ns, name), writes in instance_writes.items():
        assert set(writes) == {"delete", "patch"}, (resource, ns, name, writes)
        assert writes["delete"] <= writes["patch"] <= crd_deleted[f"{resource}.{group}"], (resource, ns, name)
    # The common path reads no instance one by one: each is seen in its CRD's list, and
    # written to twice (the outcome checks that confirm a 404 or a gone namespace run
    # only when the server answers one).
    instance_gets = [e["objectRef"] for e in events if e["objectRef"].get("apiGroup") == group and e["verb"] == "get"]
    assert instance_gets == [], instance_gets[:5]

    # Requests per CRD. A design that reads each CRD at each poll, lists each CRD's
    # instances again at each poll, and asks 3 access reviews per CRD exceeds these.
    count = empty + full
    reviews = [e for e in events if e["objectRef"].get("resource") == "selfsubjectaccessreviews"]
    crd_gets = [e for e in crds if e["verb"] == "get" and e["objectRef"].get("name")]
    crd_lists = [e for e in crds if e["verb"] == "list"]
    instance_lists = Counter(
        e["objectRef"]["resource"] for e in events if e["verb"] == "list" and e["objectRef"].get("apiGroup") == group
    )
    print(
        f"\n{count} CRDs: {len(reviews)} access reviews, {len(crd_gets)} CRD GETs, {len(crd_lists)} lists of CRDs,"
        f" {sum(instance_lists.values())} instance lists ({max(instance_lists.values())} at most for one CRD)"
    )
    assert len(reviews) <= 8, f"{len(reviews)} access reviews for {count} CRDs of one group"
    assert len(crd_gets) <= count // 10, f"{len(crd_gets)} GETs of CRDs for {count} CRDs"
    assert sum(instance_lists.values()) <= count * 1.5, instance_lists
    assert sorted(instance_lists) == sorted(plural(i) for i in range(count))
    assert len(crd_lists) <= 60, f"{len(crd_lists)} lists of CRDs"


def test_an_access_review_of_resource_star_stands_for_a_group_only_when_a_rule_grants_every_resource(cp, client, tool):
    """The real API server's answers the preflight relies on, and its fallback: granted
    every resource of the group ("*"), the limited user's run succeeds with a few reviews;
    granted all but one, the run stops before its first write and names that one (the
    group-wide review of list is allowed and stands for the four; that of patch is
    refused and each is asked about)."""
    from kubernetes.client import AuthorizationV1Api, RbacAuthorizationV1Api

    group, objects = make_group(client, 0, 4, 1)
    rbac = RbacAuthorizationV1Api(client)
    user = f"limited-{secrets.token_hex(3)}"
    crd_rule = {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "list", "delete"],
    }

    def grant(resources: list[str]) -> None:
        """list on every resource of the group; patch and delete on `resources`."""
        rules = [
            crd_rule,
            {"apiGroups": [group], "resources": ["*"], "verbs": ["list"]},
            {"apiGroups": [group], "resources": resources, "verbs": ["patch", "delete"]},
        ]
        role = {"metadata": {"name": user}, "rules": rules}
        with contextlib.suppress(Exception):
            rbac.delete_cluster_role(user)
        rbac.create_cluster_role(role)

    def review(resource: str, as_user: str | None) -> bool:
        spec = {"resourceAttributes": {"verb": "patch", "group": group, "resource": resource}}
        if as_user is None:
            body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec}
            return bool(AuthorizationV1Api(client).create_self_subject_access_review(body).status.allowed)
        spec = dict(spec, user=as_user)
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        return bool(AuthorizationV1Api(client).create_subject_access_review(body).status.allowed)

    binding = {
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
    }
    rbac.create_cluster_role_binding(binding)
    try:
        assert review("*", None), "the admin (system:masters) is allowed resource *"
        grant([plural(i) for i in range(3)])  # not the fourth
        wait_until("the role did not take effect", lambda: review(plural(0), user), timeout=30)
        assert not review("*", user), "a rule naming resources must not allow resource *"

        mark = cp.audit_mark()
        denied = tool("crd", "--group", group, "--delete", "--as", user)
        assert denied.returncode == 1, denied.stderr
        assert f"cannot patch {plural(3)}.{group}" in denied.stderr and "nothing was changed" in denied.stderr
        writes = [e for e in tools_requests(cp, mark) if e["verb"] in ("patch", "delete")]
        assert writes == [], "a write before the missing permission was reported"

        grant(["*"])
        wait_until("the role did not take effect", lambda: review("*", user), timeout=30)
        mark = cp.audit_mark()
        allowed = tool("crd", "--group", group, "--delete", "--as", user)
        assert allowed.returncode == 0, allowed.stderr
        assert crds_left(client, group) == []
        reviews = [e for e in tools_requests(cp, mark) if e["objectRef"].get("resource") == "selfsubjectaccessreviews"]
        assert len(reviews) <= 4, f"{len(reviews)} reviews: resource * did not stand for the group's 4 CRDs"
        assert len(objects) == 4
    finally:
        with contextlib.suppress(Exception):
            rbac.delete_cluster_role_binding(user)
        with contextlib.suppress(Exception):
            rbac.delete_cluster_role(user)


def test_a_timeout_too_short_for_the_crds_to_delete_is_said_before_the_run(cp, client, tool):
    """The API server removes deleted CRDs one after another (crds.CLEANUP_SECONDS
    each): a provider's thousands outlast the default 5 minutes, and the run says so first."""
    group, _ = make_group(client, 10, 0, 0)
    result = tool("crd", "--group", group, "--delete", "--timeout", "2s")
    first = result.stderr.splitlines()[0]
    assert first.startswith("warning: deleting 10 CRDs takes the API server about 1m"), result.stderr
    assert "--timeout 2.0s may end first" in first
    wait_until("CRDs gone", lambda: not crds_left(client, group), timeout=120)
    quiet = tool("crd", "--group", make_group(client, 3, 0, 0)[0], "--delete")
    assert quiet.returncode == 0 and "warning:" not in quiet.stderr, quiet.stderr
