"""`crd --category NAME`: CRDs selected by spec.names.categories (crossplane's `managed`),
as `kubectl get NAME` selects types; alone and combined with --group and -l."""

from __future__ import annotations

import secrets

from crs import crd_state, create, snapshot, wait_until, writes_outside
from kubernetes.client import ApiextensionsV1Api

HOLD = "unfinalize.test/hold"
MERGE_PATCH = "application/merge-patch+json"


def _categorize(api_client, crd, categories, labels=None):
    body = {"spec": {"names": {"categories": list(categories)}}}
    if labels:
        body["metadata"] = {"labels": labels}
    ApiextensionsV1Api(api_client).patch_custom_resource_definition(crd.name, body, _content_type=MERGE_PATCH)


def test_category_selects_crds_alone_and_with_group_and_labels(api_client, make_crd, namespace, cli, audit):
    category = f"ut{secrets.token_hex(3)}"
    bucket, queue, other = make_crd(kind="Bucket"), make_crd(kind="Queue"), make_crd(kind="Other")
    _categorize(api_client, bucket, [category, "all"], labels={"tier": "storage"})
    _categorize(api_client, queue, ["all", category])
    _categorize(api_client, other, ["unrelated"])
    for crd in (bucket, queue, other):
        create(api_client, crd, "x", namespace, finalizers=[HOLD])

    by_group = cli("crd", "--category", category, "--group", queue.group, "--dry-run=server", "-o", "name")
    assert by_group.returncode == 0, by_group.stderr
    assert by_group.stdout.split() == [f"queue.{queue.group}/x"]
    by_label = cli("crd", "--category", f"nothing,{category}", "-l", "tier=storage", "--dry-run=server", "-o", "name")
    assert by_label.returncode == 0, by_label.stderr
    assert by_label.stdout.split() == [f"bucket.{bucket.group}/x"]

    audit.mark()
    result = cli("crd", "--category", category, "--delete", "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    for crd in (bucket, queue):
        wait_until(f"{crd.name} gone", lambda crd=crd: crd_state(api_client, crd.name) is None, timeout=30)
    assert crd_state(api_client, other.name) is not None
    assert snapshot(api_client, other)[(namespace, "x")][1] == (HOLD,)
    assert writes_outside(audit.writes(), [bucket, queue]) == []


def test_a_category_nothing_lists_selects_nothing(make_crd, cli, audit):
    make_crd()
    audit.mark()
    result = cli("crd", "--category", f"none{secrets.token_hex(3)}")
    assert result.returncode == 0, result.stderr
    assert "nothing to do" in result.stderr
    assert writes_outside(audit.writes(), []) == []
