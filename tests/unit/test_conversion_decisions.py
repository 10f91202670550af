"""A CRD whose conversion webhook is gone, on the in-memory cluster: with --delete the
webhook is switched off once (spec.conversion only) and the CRD goes; without it nothing
is written, the webhook is named once and the run ends at once; dry runs only say so.
tests/integration/test_conversion.py covers the real API server."""

from __future__ import annotations

import time

from fakecluster import WIDGET_CRD, WIDGETS, FakeCluster, run_engine
from test_engine import GADGET_CRD

from kubectl_unfinalize.cli.output import outcome_line, summary_line
from kubectl_unfinalize.engine import conversion
from kubectl_unfinalize.errors import ApiError, Forbidden
from kubectl_unfinalize.model import CRD_RESOURCE, Action, Targets
from kubectl_unfinalize.options import DryRun

DEAD = 'conversion webhook for example.com/v2, Kind=Widget failed: Post "x": dial tcp: connect: connection refused'


def dead_webhook_cluster() -> FakeCluster:
    cluster = FakeCluster()
    cluster.add_crd()
    cluster.convert_with_webhook()
    for name in "abc":
        cluster.add(name, ["example.com/hold"])
    return cluster


def lists(cluster: FakeCluster) -> int:
    return sum(1 for verb, name in cluster.calls if verb == "list" and name == WIDGETS.plural)


def test_a_conversion_failure_is_told_by_its_status_and_the_converters_words():
    assert conversion.is_failure(ApiError(500, "InternalError", DEAD))
    assert conversion.is_failure(ApiError(500, "Internal Server Error", DEAD))
    assert not conversion.is_failure(ApiError(500, "InternalError", "etcdserver: request timed out"))
    assert not conversion.is_failure(ApiError(503, "ServiceUnavailable", DEAD))
    assert not conversion.is_failure(Forbidden(403, "Forbidden", DEAD))


def test_the_backend_state_comes_from_the_message():
    assert conversion.backend(DEAD) == "connection refused"
    assert conversion.backend('Post "https://w.ns.svc:443/convert": service "w" not found') == "service not found"
    assert conversion.backend('no endpoints available for service "w"') == "no endpoints"
    assert conversion.backend("x509: certificate signed by unknown authority") == ""


def test_a_service_webhook_is_named_by_namespace_name_port_and_path():
    cluster = FakeCluster()
    cluster.add_crd()
    service = {"namespace": "op", "name": "webhook", "port": 9443, "path": "/convert"}
    cluster.specs[WIDGET_CRD.name] = {
        "spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": service}}}},
        "status": {"storedVersions": ["v1beta1", "v1"]},
    }
    hook = conversion.read(cluster, WIDGET_CRD, ApiError(500, "InternalError", 'service "webhook" not found'))
    assert hook is not None
    assert hook.describe() == (
        "the CRD's conversion webhook service op/webhook:9443/convert is unreachable (service not found),"
        " stored versions v1beta1, v1"
    )


def test_with_delete_the_webhook_is_switched_off_once_and_the_crd_goes():
    cluster = dead_webhook_cluster()
    report = run_engine(cluster, delete=True, timeout=10)
    assert report.ok, report.failed
    assert cluster.merge_patches == [(WIDGET_CRD.name, {"spec": {"conversion": conversion.NONE}}, DryRun.NONE)]
    assert not cluster.objects  # instances and CRD gone
    changed = [o for o in report.outcomes if o.action == Action.RECONFIGURED]
    assert len(changed) == 1 and changed[0].name == WIDGET_CRD.name
    assert 'was {"strategy":"Webhook","webhook":{"clientConfig":{"caBundle":"(4 characters)"' in changed[0].message
    assert "https://127.0.0.1:1/convert is unreachable (connection refused)" in changed[0].message
    assert report.to_dict()["summary"]["reconfigured"] == 1
    line = outcome_line(changed[0])
    assert line and line.startswith(f"customresourcedefinition.apiextensions.k8s.io/{WIDGET_CRD.name} reconfigured: ")
    assert lists(cluster) >= 2 and report.count(Action.UNFINALIZED) == 3


def test_without_delete_nothing_is_written_and_the_run_ends_at_once_with_one_failure():
    cluster = dead_webhook_cluster()
    started = time.monotonic()
    report = run_engine(cluster, timeout=30)
    assert time.monotonic() - started < 5
    assert not cluster.merge_patches and not [c for c in cluster.calls if c[0] in ("patch", "delete")]
    assert lists(cluster) == 1
    assert report.failures == 1 and not report.ok and not report.timed_out
    (failure,) = report.failed
    assert failure.name == WIDGET_CRD.name and failure.resource == CRD_RESOURCE.display
    assert "cannot list widgets.example.com: conversion webhook for" in failure.message
    assert "https://127.0.0.1:1/convert is unreachable (connection refused)" in failure.message
    assert "stored versions v1, v2" in failure.message
    assert f"run `kubectl unfinalize crd {WIDGET_CRD.name} --delete`" in failure.message
    assert "1 failed" in summary_line(report)


def test_a_refused_remedy_is_the_crds_one_failure_and_the_run_does_not_wait_for_the_deadline():
    cluster = dead_webhook_cluster()

    def forbid(verb, ref):
        if verb == "merge_patch":
            raise Forbidden(403, "Forbidden", "cannot patch customresourcedefinitions")

    cluster.hooks.append(forbid)
    started = time.monotonic()
    report = run_engine(cluster, delete=True, timeout=30)
    assert time.monotonic() - started < 5
    assert report.failures == 1 and not report.timed_out
    assert "cannot set spec.conversion.strategy to None: forbidden" in report.failed[0].message
    assert lists(cluster) == 1 and cluster.stored(WIDGET_CRD.name, CRD_RESOURCE) is not None
    assert not [c for c in cluster.calls if c[0] in ("patch", "delete")]


def test_a_failure_that_outlasts_the_remedy_is_listed_a_few_times_with_backoff_then_given_up():
    cluster = dead_webhook_cluster()
    cluster.merge_patch = lambda ref, body, dry_run: cluster.merge_patches.append((ref.name, body, dry_run))
    started = time.monotonic()
    report = run_engine(cluster, delete=True, timeout=30)
    assert time.monotonic() - started < 5
    assert lists(cluster) == conversion.LISTS_AFTER_REMEDY + 1 and len(cluster.merge_patches) == 1
    assert report.failures == 1 and not report.timed_out
    assert "still failing 5 lists after spec.conversion.strategy was set to None" in report.failed[0].message


def test_a_client_dry_run_says_it_would_and_sends_nothing():
    cluster = dead_webhook_cluster()
    report = run_engine(cluster, delete=True, dry_run="client")
    assert not cluster.merge_patches and not [c for c in cluster.calls if c[0] in ("patch", "delete")]
    (changed,) = [o for o in report.outcomes if o.action == Action.RECONFIGURED]
    assert changed.message.startswith("would set spec.conversion to {strategy: None}")
    assert outcome_line(changed).endswith("(dry run)")
    assert report.ok


def test_a_server_dry_run_sends_the_patch_with_dry_run_and_changes_nothing():
    cluster = dead_webhook_cluster()
    report = run_engine(cluster, delete=True, dry_run="server")
    assert cluster.merge_patches == [(WIDGET_CRD.name, {"spec": {"conversion": conversion.NONE}}, DryRun.SERVER)]
    assert cluster.specs[WIDGET_CRD.name]["spec"]["conversion"]["strategy"] == "Webhook"
    assert [o.action for o in report.outcomes if o.name == WIDGET_CRD.name].count(Action.RECONFIGURED) == 1


def test_a_run_that_times_out_on_another_crd_still_counts_one_failure_for_the_dead_webhook():
    cluster = dead_webhook_cluster()
    cluster.add_crd(GADGET_CRD)
    cluster.add("g", ["example.com/hold"], resource=GADGET_CRD.resource)

    def slow(verb, ref):
        if verb == "patch" and ref.name == "g":
            time.sleep(1.5)

    cluster.hooks.append(slow)
    report = run_engine(cluster, Targets(crds=[WIDGET_CRD, GADGET_CRD]), timeout=1)
    assert report.timed_out
    assert [o.action for o in report.failed if o.name == WIDGET_CRD.name] == [Action.FAILED]
    assert report.failures == len(report.failed) and WIDGET_CRD.name in report.failed[0].message
