"""The line a refused write gets, from the API server's Status: a 422 naming the fields the
object's schema refuses (no validation ratcheting before 1.30), and a refusal by a webhook
or policy configured from files on the API server, which no API lists.

The Status bodies are real servers' answers (tests/integration/test_invalid_objects.py
makes the first on v1.29.15; the ValidatingAdmissionPolicy one is v1.36.3's), names
shortened; the webhook denials follow the API server's wording (admission webhook "NAME"
denied the request: MESSAGE, code 400 unless the webhook sets one)."""

from __future__ import annotations

import pytest
from fakecluster import WIDGETS, FakeCluster, run_engine

from kubectl_unfinalize.engine.admission import MUTATING, VALIDATING
from kubectl_unfinalize.engine.diagnose import explain
from kubectl_unfinalize.errors import ApiError, Unreachable, api_error_class
from kubectl_unfinalize.model import CRD_RESOURCE, Action, ObjectRef, Resource

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


def test_a_policy_loaded_from_files_is_said_to_be_invisible_and_quoted():
    line = explain(error(STATIC_POLICY), "free", GIZMOS)
    assert line.startswith("refused by ValidatingAdmissionPolicy 'deny.static.k8s.io', which is configured from files")
    assert "(its name ends in .static.k8s.io, which the API refuses)" in line
    assert line.endswith(f'The API server said: "{STATIC_POLICY["message"]}"')


@pytest.mark.parametrize("status", [HOOK_DENIAL, HOOK_DOWN], ids=["denied", "dead"])
def test_a_webhook_no_listed_configuration_holds_is_said_to_be_invisible(status):
    line = explain(error(status), "free", GIZMOS, lambda name: name != "keep.example.com")
    assert line.startswith('refused by admission webhook "keep.example.com", which is configured from files')
    assert "(no webhook configuration the API lists holds it)" in line
    assert line.endswith(f'The API server said: "{status["message"]}"')


@pytest.mark.parametrize("listed", [lambda _: True, lambda _: None, None], ids=["listed", "unreadable", "no-run"])
def test_a_webhook_listed_or_not_known_keeps_its_line(listed):
    assert explain(error(HOOK_DENIAL), "free", GIZMOS, listed).startswith("rejected by an admission webhook: ")


def test_when_the_listing_fails_a_static_name_alone_decides():
    def unreachable(_: str) -> bool:
        raise Unreachable("connection refused")

    status = dict(HOOK_DENIAL, message=HOOK_DENIAL["message"].replace("keep.example.com", "keep.static.k8s.io"))
    assert explain(error(status), "free", GIZMOS, unreachable).startswith('refused by admission webhook "keep.static')
    assert explain(error(HOOK_DENIAL), "free", GIZMOS, unreachable).startswith("rejected by an admission webhook")


class FilesWebhookCluster(FakeCluster):
    """A webhook configured from files denies every finalizer patch; the API lists no
    configuration (or `listed` holds one of that name)."""

    def __init__(self, listed: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.listed = listed
        self.hooks.append(self._deny)

    def _deny(self, verb: str, ref: ObjectRef) -> None:
        if verb == "patch" and ref.resource == WIDGETS:
            raise error(HOOK_DENIAL)

    def list_objects(self, resource: Resource, query):
        self.calls.append(("list", resource.plural))
        hook = {"name": "keep.example.com", "rules": []}
        yield [{"metadata": {"name": "c"}, "webhooks": [hook]}] if self.listed and resource == VALIDATING else []


@pytest.mark.parametrize("listed", [False, True], ids=["from-files", "from-the-api"])
def test_the_run_lists_the_configurations_once_to_tell(bulk, listed):
    cluster = FilesWebhookCluster(listed=listed, bulk=bulk)
    cluster.add_crd()
    for i in range(30):
        cluster.add(f"w{i}", ["operator.example.com/cleanup"])
    report = run_engine(cluster, timeout=5)
    failed = [o.message for o in report.outcomes if o.action == Action.FAILED]
    assert len(failed) == 30
    said = "configured from files on the API server" if not listed else "rejected by an admission webhook"
    assert all(said in message for message in failed), failed[0]
    lists = [n for verb, n in cluster.calls if verb == "list" and n in (VALIDATING.plural, MUTATING.plural)]
    assert len(lists) == 2  # both kinds once: the refusals of one webhook do not list them again
