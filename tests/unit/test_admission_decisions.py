"""Dead admission webhooks on the in-memory cluster: the configuration named once, writes
it refuses not sent again, the run ended early, the opt-in removal, -f configurations
deleted first. The real API server's side is in tests/integration/test_admission.py."""

from __future__ import annotations

import time

import pytest
from fakecluster import WIDGET_CRD, WIDGETS, FakeCluster, run_engine

from kubectl_unfinalize.engine.admission import ENDPOINT_SLICES, MUTATING, SERVICES, VALIDATING, _rule_matches
from kubectl_unfinalize.errors import ApiError
from kubectl_unfinalize.model import CRD_RESOURCE, Action, ObjectRef, Resource, Targets

URL = "https://127.0.0.1:1/validate"
REFUSED = (
    'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: '
    f'Post "{URL}?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused'
)
SERVICE_DOWN = (
    'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: '
    'Post "https://hooks.operator.svc:443/validate?timeout=10s": no endpoints available for service "hooks"'
)
RULE = {"operations": ["UPDATE"], "apiGroups": ["example.com"], "apiVersions": ["*"], "resources": ["*"]}


class WebhookCluster(FakeCluster):
    """A FakeCluster with webhook configurations: while `config` is stored, every UPDATE
    on a resource its rule matches fails as the API server fails it."""

    def __init__(self, client: dict | None = None, message: str = REFUSED, ready: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.config = self.add("operator-hooks", [], None, VALIDATING)
        self.client = client or {"url": URL, "caBundle": "Cg=="}
        self.message = message
        self.ready = ready
        self.hooks.append(self._admit)

    def body(self) -> dict:
        hook = {"name": "check.example.com", "clientConfig": self.client, "rules": [RULE], "failurePolicy": "Fail"}
        return {"metadata": {"name": self.config.name}, "webhooks": [hook]}

    def _admit(self, verb: str, ref: ObjectRef) -> None:
        if verb == "patch" and ref.resource == WIDGETS and self.config in self.objects:
            raise ApiError(500, "InternalError", self.message, "PATCH", ref.resource.path(ref.namespace, ref.name))

    def list_objects(self, resource: Resource, query):
        self.calls.append(("list", resource.plural))
        if resource == VALIDATING and self.config in self.objects:
            yield [self.body()]
        elif resource == ENDPOINT_SLICES and self.ready:
            yield [{"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]}]
        elif resource in (VALIDATING, MUTATING, ENDPOINT_SLICES):
            yield []
        else:
            raise NotImplementedError(resource)

    def get(self, ref: ObjectRef):
        if ref.resource == SERVICES:
            self.calls.append(("get", f"service {ref.name}"))
            return {"metadata": {"name": ref.name}} if self.ready else None
        return super().get(ref)


def lines(report, action):
    return [o for o in report.outcomes if o.action == action]


def patches(cluster):
    return [n for verb, n in cluster.calls if verb == "patch"]


def test_a_dead_webhook_is_named_once_its_refusals_are_not_sent_again_and_the_run_ends_early(bulk):
    cluster = WebhookCluster(bulk=bulk)
    cluster.add_crd()
    for i in range(20):
        cluster.add(f"w{i}", ["operator.example.com/cleanup"])
    started = time.monotonic()
    report = run_engine(cluster, delete=True, timeout=30)
    assert time.monotonic() - started < 5 and not report.timed_out and not report.ok
    (named,) = [o for o in report.outcomes if o.resource.startswith("validatingwebhookconfiguration")]
    assert named.action == Action.BLOCKING and named.name == "operator-hooks"
    assert '"check.example.com" (rule UPDATE on example.com/widgets, failurePolicy Fail)' in named.message
    assert f"calls {URL}, which refuses connections" in named.message and "--remove-dead-webhooks" in named.message
    failed = lines(report, Action.FAILED)
    assert len(failed) == 20 and all("see validatingwebhookconfiguration" in o.message for o in failed)
    assert all(URL not in o.message for o in failed)  # the URL is said once, on the configuration's line
    assert len(patches(cluster)) <= 2 * 20  # each object at most its first patch (and the bulk one)
    assert [n for verb, n in cluster.calls if verb == "list" and n == VALIDATING.plural] == [VALIDATING.plural]
    crd = cluster.stored(WIDGET_CRD.name, CRD_RESOURCE)
    assert crd is not None and not crd.terminating  # never left Terminating over objects not freed
    (crd_line,) = [o for o in report.outcomes if o.resource.startswith("customresourcedefinition")]
    assert "not deleted: 20 of its objects are refused by a dead admission webhook" in crd_line.message
    assert cluster.config in cluster.objects  # nothing removed without the flag


def test_the_opt_in_flag_removes_the_dead_configuration_reports_it_and_frees_everything(bulk):
    cluster = WebhookCluster(bulk=bulk)
    cluster.add_crd()
    for i in range(20):
        cluster.add(f"w{i}", ["operator.example.com/cleanup"])
    report = run_engine(cluster, delete=True, timeout=30, remove_dead_webhooks=True)
    assert report.ok, report.failed
    assert cluster.config not in cluster.objects and not cluster.objects  # the CRD is gone too
    (removed,) = [o for o in report.outcomes if o.resource.startswith("validatingwebhookconfiguration")]
    assert removed.action == Action.DELETED and "which refuses connections" in removed.message
    assert report.count(Action.UNFINALIZED) == 20 and report.failures == 0


def test_a_service_without_ready_endpoints_is_dead_and_named_by_its_service():
    cluster = WebhookCluster(client={"service": {"namespace": "operator", "name": "hooks"}}, message=SERVICE_DOWN)
    cluster.add_crd()
    cluster.add("w", ["x"])
    report = run_engine(cluster, timeout=30)
    (named,) = lines(report, Action.BLOCKING)
    assert "calls Service operator/hooks, which does not exist" in named.message
    assert ("get", "service hooks") in cluster.calls


def test_a_webhook_whose_service_has_ready_endpoints_is_not_taken_for_dead():
    cluster = WebhookCluster(client={"service": {"namespace": "operator", "name": "hooks"}}, message=SERVICE_DOWN)
    cluster.ready = True
    cluster.add_crd()
    cluster.add("w", ["x"])
    report = run_engine(cluster, timeout=30)
    assert not lines(report, Action.BLOCKING)
    (failed,) = lines(report, Action.FAILED)
    assert "failed calling webhook" in failed.message  # the API server's own words, retried as any refusal


def test_a_server_dry_run_removes_nothing_and_says_it_would():
    cluster = WebhookCluster()
    cluster.add_crd()
    cluster.add("w", ["x"])
    report = run_engine(cluster, timeout=30, dry_run="server", remove_dead_webhooks=True)
    assert cluster.config in cluster.objects
    (removed,) = lines(report, Action.DELETED)
    assert removed.name == "operator-hooks" and removed.dry_run.value == "server"
    assert len(lines(report, Action.FAILED)) == 1  # the webhook still refuses: nothing was really removed


def test_manifest_webhook_configurations_are_deleted_before_anything_else():
    cluster = WebhookCluster()
    cluster.add_crd()
    widget = cluster.add("w", ["x"])
    report = run_engine(cluster, Targets(crds=[WIDGET_CRD], objects=[widget, cluster.config]), delete=True, timeout=30)
    assert report.ok, report.failed
    writes = [c for c in cluster.calls if c[0] in ("delete", "patch")]
    assert writes[0] == ("delete", "operator-hooks")
    assert not cluster.objects


@pytest.mark.parametrize(
    ("rule", "operation", "matches"),
    [
        (RULE, "UPDATE", True),
        (RULE, "DELETE", False),
        (dict(RULE, operations=["*"]), "DELETE", True),
        (dict(RULE, apiGroups=["other.com"]), "UPDATE", False),
        (dict(RULE, resources=["widgets/status"]), "UPDATE", False),
        (dict(RULE, resources=["*/*"]), "UPDATE", True),
        (dict(RULE, resources=["widgets"], scope="Cluster"), "UPDATE", False),
        (dict(RULE, apiVersions=["v2"]), "UPDATE", False),
    ],
)
def test_rules_match_as_the_api_server_matches_them(rule, operation, matches):
    assert _rule_matches(rule, WIDGETS, operation) is matches


def test_a_webhook_refusing_deletes_stops_the_deletes_too():
    """A rule on DELETE: the instances' DELETE is refused, and not sent again next pass."""
    cluster = WebhookCluster()
    cluster.body = lambda: {  # type: ignore[method-assign]
        "metadata": {"name": cluster.config.name},
        "webhooks": [
            {
                "name": "check.example.com",
                "clientConfig": cluster.client,
                "rules": [dict(RULE, operations=["UPDATE", "DELETE"])],
            }
        ],
    }

    def refuse_deletes(verb, ref):
        if verb == "delete" and ref.resource == WIDGETS and cluster.config in cluster.objects:
            raise ApiError(500, "InternalError", REFUSED, "DELETE", ref.resource.path(ref.namespace, ref.name))

    cluster.hooks.append(refuse_deletes)
    cluster.add_crd()
    for i in range(5):
        cluster.add(f"w{i}", ["x"])
    report = run_engine(cluster, delete=True, timeout=30)
    assert not report.timed_out
    (named,) = lines(report, Action.BLOCKING)[:1]
    assert "(rule UPDATE,DELETE on example.com/widgets, failurePolicy Fail)" in named.message
    deletes = [n for verb, n in cluster.calls if verb == "delete"]
    assert deletes and len(deletes) == len(set(deletes))  # never the same one twice; once known, none
    assert not cluster.stored(WIDGET_CRD.name, CRD_RESOURCE).terminating


def test_a_namespace_whose_objects_left_are_all_refused_is_reported_and_not_waited_on():
    cluster = WebhookCluster()
    cluster.add_namespace("ns")
    for i in range(3):
        cluster.add(f"w{i}", ["x"])
    started = time.monotonic()
    report = run_engine(cluster, Targets(namespaces=["ns"]), delete=True, timeout=30)
    assert time.monotonic() - started < 5 and not report.timed_out and not report.ok
    (space,) = [o for o in report.outcomes if o.resource == "namespace" and o.action == Action.BLOCKING]
    assert "the 3 objects left inside are refused by a dead admission webhook" in space.message
    assert len(lines(report, Action.FAILED)) == 3


def test_a_namespace_is_freed_once_the_flag_removed_the_dead_configuration():
    cluster = WebhookCluster()
    cluster.add_namespace("ns")
    for i in range(3):
        cluster.add(f"w{i}", ["x"])
    report = run_engine(cluster, Targets(namespaces=["ns"]), delete=True, timeout=30, remove_dead_webhooks=True)
    assert report.ok, report.failed
    assert cluster.config not in cluster.objects and not [r for r in cluster.objects if r.namespace == "ns"]
