"""``make_crd``: an Established CRD in a unique group for a test, gone after it.

Named by tests/integration/conftest.py beside the cluster fixtures it builds on.
"""

from __future__ import annotations

import contextlib
import secrets
import time

import pytest
from crdinfo import CrdInfo
from waiting import wait_until

MERGE_PATCH = "application/merge-patch+json"


@pytest.fixture
def make_crd(api_client):
    """Factory creating an Established CRD in a unique group; ``make(...)`` returns its CrdInfo.

    At teardown the objects of each CRD lose their finalizers and the CRD is deleted
    (best effort). The CRD's own cleanup finalizer is never touched.
    """
    from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi

    ext = ApiextensionsV1Api(api_client)
    custom = CustomObjectsApi(api_client)
    created: list[CrdInfo] = []

    def make(
        kind="Widget",
        plural=None,
        scope="Namespaced",
        short_names=(),
        group=None,
        versions=("v1",),
        labels=None,
        categories=(),
    ) -> CrdInfo:
        singular = kind.lower()
        plural = plural or singular + "s"
        group = group or f"t{secrets.token_hex(4)}.unfinalize.test"
        versions = [versions] if isinstance(versions, str) else list(versions)
        name = f"{plural}.{group}"
        schema = {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        }
        names = {"plural": plural, "singular": singular, "kind": kind, "listKind": kind + "List"}
        if short_names:
            names["shortNames"] = list(short_names)
        if categories:
            names["categories"] = list(categories)
        body = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {
                "group": group,
                "scope": scope,
                "names": names,
                "versions": [
                    {
                        "name": v,
                        "served": True,
                        "storage": i == 0,
                        "schema": schema,
                        "subresources": {"status": {}},
                    }
                    for i, v in enumerate(versions)
                ],
            },
        }
        ext.create_custom_resource_definition(body)
        info = CrdInfo(name, group, plural, kind, tuple(versions), scope)
        created.append(info)

        def established():
            crd = ext.read_custom_resource_definition(name)
            conditions = (crd.status and crd.status.conditions) or []
            return any(c.type == "Established" and c.status == "True" for c in conditions)

        wait_until(f"CRD {name} to be Established", established)
        for v in versions:  # and served in discovery
            wait_until(
                f"{group}/{v} discovery to list {plural}",
                lambda v=v: _discovery_lists(custom, group, v, plural),
            )
        return info

    yield make
    # Not unfinalize(..., delete=True): the product's bug in teardown would go unseen and leave CRDs behind.
    for info in reversed(created):
        _delete_crd(ext, custom, info)


def _discovery_lists(custom, group: str, version: str, plural: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        resources = custom.get_api_resources(group, version).resources
    except ApiException:
        return False
    return any(r.name == plural for r in resources or ())


def _strip_finalizers(custom, info: CrdInfo) -> None:
    """Merge-patch finalizers away from every object of the CRD (all namespaces)."""
    from kubernetes.client.exceptions import ApiException

    group, version, plural = info.group, info.version, info.plural
    try:
        items = custom.list_cluster_custom_object(group, version, plural)["items"]
    except ApiException:
        return
    patch = {"metadata": {"finalizers": None}}
    for obj in items:
        meta = obj.get("metadata", {})
        if not meta.get("finalizers"):
            continue
        with contextlib.suppress(ApiException):
            if meta.get("namespace"):
                custom.patch_namespaced_custom_object(
                    group, version, meta["namespace"], plural, meta["name"], patch, _content_type=MERGE_PATCH
                )
            else:
                custom.patch_cluster_custom_object(
                    group, version, plural, meta["name"], patch, _content_type=MERGE_PATCH
                )


def _delete_crd(ext, custom, info: CrdInfo, timeout: float = 20.0) -> None:
    from kubernetes.client.exceptions import ApiException

    _strip_finalizers(custom, info)
    try:
        ext.delete_custom_resource_definition(info.name)
    except ApiException as e:
        if e.status == 404:
            return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ext.read_custom_resource_definition(info.name)
        except ApiException as e:
            if e.status == 404:
                return
        _strip_finalizers(custom, info)  # objects created or re-finalized meanwhile
        time.sleep(0.2)
