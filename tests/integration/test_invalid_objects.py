"""A custom resource its CRD's tightened schema no longer accepts, on a real API server.

Before Kubernetes 1.30 there is no validation ratcheting: the API server refuses every
write to an object that fails the CRD's current schema, even a patch that only removes
finalizers, with a 422 whose causes name the failing fields. From 1.30 unchanged fields
are not validated again, and the same patch frees the object. The run's line must name
the field and say what to do, not report a generic admission refusal.
"""

from __future__ import annotations

import json

import pytest
from crs import create, snapshot, wait_until
from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

HOLD = "unfinalize.test/hold"
JSON_PATCH = "application/json-patch+json"
STRICT = {
    "openAPIV3Schema": {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
}
OPEN = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def set_schema(api_client, crd, schema) -> None:
    ops = [{"op": "replace", "path": "/spec/versions/0/schema", "value": schema}]
    ApiextensionsV1Api(api_client).patch_custom_resource_definition(crd.name, ops, _content_type=JSON_PATCH)


def refuses_a_string_size(api_client, crd, namespace) -> bool:
    """The API server validates against the new schema (its CRD handler is rebuilt a
    moment after the update): a server-side dry-run create of a string size is refused."""
    body = {"apiVersion": f"{crd.group}/{crd.version}", "kind": crd.kind, "metadata": {"name": "probe"}}
    try:
        CustomObjectsApi(api_client).create_namespaced_custom_object(
            crd.group, crd.version, namespace, crd.plural, dict(body, spec={"size": "big"}), dry_run="All"
        )
    except ApiException as exc:
        return exc.status == 422
    return False


@pytest.mark.core
def test_an_object_the_tightened_schema_refuses(api_client, make_crd, namespace, cli, server_minor):
    crd = make_crd(kind="Gizmo")
    obj = create(api_client, crd, "big", namespace, finalizers=[HOLD])
    ops = [{"op": "replace", "path": "/spec/size", "value": "big"}]
    CustomObjectsApi(api_client).patch_namespaced_custom_object(
        crd.group, crd.version, namespace, crd.plural, obj["metadata"]["name"], ops, _content_type=JSON_PATCH
    )
    set_schema(api_client, crd, STRICT)
    wait_until("the tightened schema to be enforced", lambda: refuses_a_string_size(api_client, crd, namespace))
    try:
        result = cli("crd", crd.name, "--timeout", "20s")
        if server_minor >= 30:  # validation ratcheting: the unchanged spec.size is not validated again
            assert result.returncode == 0, result.stdout + result.stderr
            assert snapshot(api_client, crd)[(namespace, "big")][1] == ()
            return
        assert result.returncode == 1, result.stdout + result.stderr
        line = next(line for line in result.stdout.splitlines() if f"gizmo.{crd.group}/big" in line)
        assert "spec.size" in line and "must be of type integer" in line, line
        assert "validation ratcheting" in line and "1.30" in line, line
        assert "relax" in line and "rejected by admission" not in line, line
        assert snapshot(api_client, crd)[(namespace, "big")][1] == (HOLD,)
    finally:
        set_schema(api_client, crd, OPEN)  # so that make_crd's teardown can strip the finalizer


@pytest.mark.core  # it runs where it applies: on the oldest supported release (make test-version)
def test_the_refusal_status_names_the_field(api_client, make_crd, namespace, server_minor):
    """What the unit tests of the line take as the server's answer (tests/unit/test_refusal_lines.py)."""
    if server_minor >= 30:
        pytest.skip("validation ratcheting (1.30+) accepts the patch")
    crd = make_crd(kind="Gizmo")
    create(api_client, crd, "big", namespace, finalizers=[HOLD])
    custom = CustomObjectsApi(api_client)
    ops = [{"op": "replace", "path": "/spec/size", "value": "big"}]
    custom.patch_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural, "big", ops,
                                          _content_type=JSON_PATCH)  # fmt: skip
    set_schema(api_client, crd, STRICT)
    wait_until("the tightened schema to be enforced", lambda: refuses_a_string_size(api_client, crd, namespace))
    try:
        with pytest.raises(ApiException) as refused:
            custom.patch_namespaced_custom_object(
                crd.group, crd.version, namespace, crd.plural, "big", {"metadata": {"finalizers": None}},
                _content_type="application/merge-patch+json",
            )  # fmt: skip
        status = json.loads(refused.value.body)
        assert (status["code"], status["reason"]) == (422, "Invalid")
        assert {c.get("field") for c in status["details"]["causes"]} == {"spec.size"}
    finally:
        set_schema(api_client, crd, OPEN)
