"""Small helpers the integration tests share: create custom resources, take snapshots."""

from __future__ import annotations

import time

from crdinfo import CrdInfo
from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from waiting import wait_until  # noqa: F401 - re-exported for the tests

CLEANUP = "customresourcecleanup.apiextensions.k8s.io"


def create(api_client, crd: CrdInfo, name: str, namespace: str | None = None, finalizers=(), **metadata) -> dict:
    body = {
        "apiVersion": f"{crd.group}/{crd.version}",
        "kind": crd.kind,
        "metadata": {"name": name, "finalizers": list(finalizers), **metadata},
        "spec": {"size": 1},
    }
    custom = CustomObjectsApi(api_client)
    for attempt in range(20):
        try:
            if namespace:
                return custom.create_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural, body)
            return custom.create_cluster_custom_object(crd.group, crd.version, crd.plural, body)
        except ApiException as exc:
            # A CRD just Established may still answer 503 for a moment while its storage starts
            # (seen once in CI, in a test's own setup): the test's object, not the tool's doing.
            if exc.status != 503 or attempt == 19:
                raise
            time.sleep(0.25)
    raise AssertionError("unreachable")


def delete(api_client, crd: CrdInfo, name: str, namespace: str | None = None) -> None:
    custom = CustomObjectsApi(api_client)
    if namespace:
        custom.delete_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural, name)
    else:
        custom.delete_cluster_custom_object(crd.group, crd.version, crd.plural, name)


def snapshot(api_client, crd: CrdInfo) -> dict[tuple, tuple]:
    """(namespace, name) -> (resourceVersion, finalizers, terminating) for every object."""
    items = CustomObjectsApi(api_client).list_cluster_custom_object(crd.group, crd.version, crd.plural)
    return {
        (o["metadata"].get("namespace"), o["metadata"]["name"]): (
            o["metadata"]["resourceVersion"],
            tuple(o["metadata"].get("finalizers") or ()),
            bool(o["metadata"].get("deletionTimestamp")),
        )
        for o in items["items"]
    }


def crd_state(api_client, name: str):
    """The CRD object, or None when it is gone."""
    try:
        return ApiextensionsV1Api(api_client).read_custom_resource_definition(name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def assert_cleanup_finalizer_untouched(crd_obj) -> None:
    """No write of ours ever touched a CRD's finalizers: managedFields would show it."""
    if crd_obj is None:
        return
    for entry in crd_obj.metadata.managed_fields or []:
        fields = (entry.fields_v1 or {}).get("f:metadata", {})
        assert not (entry.manager.startswith("kubectl-unfinalize") and "f:finalizers" in fields), entry


def create_many(api_client, crd: CrdInfo, count: int, namespaces: list[str], finalizers=(), prefix="o") -> list[tuple]:
    """`count` objects spread over `namespaces`, created 16 at a time; (namespace, name) each."""
    from concurrent.futures import ThreadPoolExecutor

    keys = [(namespaces[i % len(namespaces)], f"{prefix}{i}") for i in range(count)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda key: create(api_client, crd, key[1], key[0], finalizers=finalizers), keys))
    return keys


def down_apiservice(group: str) -> dict:
    """An APIService for `group`/v1beta1 whose Service does not exist: the API server never
    dials it, and the group version answers 503 (named v1beta1.`group`)."""
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": f"v1beta1.{group}"},
        "spec": {
            "group": group,
            "version": "v1beta1",
            "service": {"namespace": "default", "name": f"missing-{group.split('.')[0]}"},
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
            "insecureSkipTLSVerify": True,
        },
    }


def crd_manifest(crd: CrdInfo) -> dict:
    """The CRD as a manifest document selects it (-f)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd.name},
    }


def writes_outside(events, crds: list[CrdInfo], extra: set[tuple] = frozenset()) -> list[dict]:
    """Audit write events that touched anything but the selected CRDs and their objects
    (or `extra` (resource, name) pairs)."""
    allowed_resources = {c.plural for c in crds}
    allowed_crds = {c.name for c in crds}
    outside = []
    for event in events:
        ref = event.get("objectRef") or {}
        resource, name = ref.get("resource"), ref.get("name")
        if resource in allowed_resources and ref.get("apiGroup") in {c.group for c in crds}:
            continue
        if resource == "customresourcedefinitions" and name in allowed_crds:
            continue
        if resource in ("selfsubjectaccessreviews", "selfsubjectreviews") or (resource, name) in extra:
            continue
        outside.append(event)
    return outside


def priority_level(user: str, shares: int) -> list[dict]:
    """`user` made cluster-admin and put by a FlowSchema on a priority level of its own
    (nominalConcurrencyShares `shares`) that rejects with 429 what does not fit."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": user},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": shares,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        },
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": user},
            "spec": {
                "priorityLevelConfiguration": {"name": user},
                "matchingPrecedence": 100,
                "rules": [
                    {
                        "subjects": [{"kind": "User", "user": {"name": user}}],
                        "resourceRules": [
                            {
                                "verbs": ["*"],
                                "apiGroups": ["*"],
                                "resources": ["*"],
                                "clusterScope": True,
                                "namespaces": ["*"],
                            }
                        ],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    }
                ],
            },
        },
    ]
