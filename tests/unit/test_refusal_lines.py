"""The line a refused write gets, from the API server's Status: a 422 naming the fields the
object's schema refuses (no validation ratcheting before 1.30), and a refusal by a webhook
or policy configured from files on the API server, which no API lists.

The Status bodies are real servers' answers (tests/integration/test_invalid_objects.py
makes the first on v1.29.15; the ValidatingAdmissionPolicy one is v1.36.3's), names
shortened; the webhook denials follow the API server's wording (admission webhook "NAME"
denied the request: MESSAGE, code 400 unless the webhook sets one)."""

from __future__ import annotations

import pytest

from kubectl_unfinalize.engine.diagnose import explain
from kubectl_unfinalize.errors import ApiError, api_error_class
from kubectl_unfinalize.model import CRD_RESOURCE, Resource

GIZMOS = Resource("t1.unfinalize.test", "v1", "gizmos", "Gizmo", True)
SIZE = 'Invalid value: "string": spec.size in body must be of type integer: "string"'
COLOR = 'Unsupported value: "red": supported values: "blue"'
ONE_FIELD = {  # v1.29.15: a merge patch {"metadata": {"finalizers": null}} after the schema was tightened
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": f'Gizmo.t1.unfinalize.test "big" is invalid: spec.size: {SIZE}',
    "reason": "Invalid",
    "details": {
        "name": "big",
        "group": "t1.unfinalize.test",
        "kind": "Gizmo",
        "causes": [{"reason": "FieldValueTypeInvalid", "message": SIZE, "field": "spec.size"}],
    },
    "code": 422,
}
TWO_FIELDS = dict(  # v1.29.15, the schema tightened on two fields
    ONE_FIELD,
    message=f'Gizmo.t1.unfinalize.test "g" is invalid: [spec.color: {COLOR}, spec.size: {SIZE}]',
    details={
        "name": "g",
        "group": "t1.unfinalize.test",
        "kind": "Gizmo",
        "causes": [
            {"reason": "FieldValueNotSupported", "message": COLOR, "field": "spec.color"},
            {"reason": "FieldValueTypeInvalid", "message": SIZE, "field": "spec.size"},
        ],
    },
)
POLICY_DENIAL = (
    "ValidatingAdmissionPolicy 'deny-531cb1' with binding 'deny-531cb1-b' denied request: finalizers are kept here"
)
POLICY = {  # v1.36.3: a policy (from the API) denying UPDATE on the group
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": f'gizmos.t1.unfinalize.test "h" is forbidden: {POLICY_DENIAL}',
    "reason": "Invalid",
    "details": {"name": "h", "group": "t1.unfinalize.test", "kind": "gizmos", "causes": [{"message": POLICY_DENIAL}]},
    "code": 422,
}
STATIC_POLICY = dict(
    POLICY,
    message=POLICY["message"].replace("deny-531cb1", "deny.static.k8s.io"),
    details={"causes": [{"message": POLICY_DENIAL.replace("deny-531cb1", "deny.static.k8s.io")}]},
)
HOOK_DENIAL = {"code": 400, "message": 'admission webhook "keep.example.com" denied the request: finalizers are kept'}
HOOK_DOWN = {
    "code": 500,
    "reason": "InternalError",
    "message": 'Internal error occurred: failed calling webhook "keep.example.com": failed to call webhook: Post'
    ' "https://127.0.0.1:1/validate?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused',
}


def error(status: dict) -> ApiError:
    """The error the transport raises for that Status (kube.answers.api_error's fields)."""
    code = int(status["code"])
    return api_error_class(code)(
        code, str(status.get("reason") or ""), status["message"], details=status.get("details") or {}
    )


def test_a_422_on_fields_the_schema_refuses_names_them_and_says_why_and_what_to_do():
    line = explain(error(ONE_FIELD), "free", GIZMOS)
    assert line.startswith(f"invalid: the object fails its current schema (spec.size: {SIZE})")
    assert "validation ratcheting (Kubernetes before 1.30" in line
    assert "even one that only removes finalizers" in line
    assert "fix that field on the object, or relax the schema" in line
    assert "admission" not in line


def test_every_failing_field_is_named():
    line = explain(error(TWO_FIELDS), "delete", GIZMOS)
    assert f"(spec.color: {COLOR}; spec.size: {SIZE})" in line
    assert "fix those fields" in line


@pytest.mark.parametrize(
    "causes",
    [
        [{"field": "metadata.finalizers[0]", "message": 'Invalid value: "keep": name is neither a standard'}],
        [{"message": "no field named"}],
        [],
    ],
    ids=["metadata", "no-field", "no-causes"],
)
def test_a_422_that_is_not_the_object_s_schema_keeps_the_admission_line(causes):
    status = dict(ONE_FIELD, details={"causes": causes})
    assert explain(error(status), "free", GIZMOS).startswith("rejected by admission: ")


def test_a_crd_s_own_refusal_is_not_read_as_a_custom_resource_s_schema():
    """The conversion patch on the CRD itself: its fields are the CRD's, not a schema's."""
    status = dict(ONE_FIELD, details={"causes": [{"field": "spec.conversion.webhook", "message": "Required value"}]})
    assert explain(error(status), "patch", CRD_RESOURCE).startswith("rejected by admission: ")


def test_a_policy_the_api_holds_keeps_the_admission_line():
    assert explain(error(POLICY), "free", GIZMOS) == f"rejected by admission: {POLICY['message']}"
