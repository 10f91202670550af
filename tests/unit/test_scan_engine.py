"""The scan engine over a fake cluster of plain pages: grouping, what cannot be read,
-n, Terminating CRDs and namespaces; and the -o json document against its schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from fakecluster import DISCOVERY, FakeScanCluster

from kubectl_unfinalize.cli.scan_output import render
from kubectl_unfinalize.scanning.model import State
from kubectl_unfinalize.scanning.options import ScanOptions
from kubectl_unfinalize.scanning.survey import scan
from kubectl_unfinalize.scanning.tally import rfc3339

NOW = 1_800_000_000.0
SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "scan.schema.json").read_text())
DEAD = "dead.example.com/cleanup"
KOPF = "kopf.zalando.org/KopfFinalizerMarker"


def md(name, namespace=None, deleted=None, finalizers=(DEAD,), manager=("op", 3600)):
    meta = {"name": name, "finalizers": list(finalizers)}
    if namespace:
        meta["namespace"] = namespace
    if deleted is not None:
        meta["deletionTimestamp"] = rfc3339(NOW - deleted)
    if manager:
        meta["managedFields"] = [
            {"manager": manager[0], "time": rfc3339(NOW - manager[1]), "fieldsV1": {"f:metadata": {"f:finalizers": {}}}}
        ]
    return meta


def cluster():
    stalls = [md(f"s{i}", f"ns{i % 3}", deleted=600, finalizers=(KOPF,), manager=("kopf", 700)) for i in range(200)]
    stalls.append(md("live", "ns0", finalizers=(KOPF,), manager=("kopf", 650)))  # before the deletions
    objects = {
        "configmaps": [md("cm", "ns0", deleted=120), md("cm2", "ns1", deleted=5), md("plain", "ns0", finalizers=())],
        "stalls": stalls,
        "nodes2": [md("n1", deleted=900, finalizers=("g.example.com/protect",))],
        "customresourcedefinitions": [
            md("stalls.g.example.com", finalizers=("customresourcecleanup.apiextensions.k8s.io",), manager=None),
            md("relics.x.io", deleted=300, finalizers=("customresourcecleanup.apiextensions.k8s.io",), manager=None),
        ],
        "namespaces": [md("gone", deleted=400, finalizers=(), manager=None)],
    }
    full = {
        "apiservices": [
            {
                "metadata": {"name": "v1beta1.metrics.acme.io"},
                "spec": {"service": {"namespace": "default", "name": "missing"}},
                "status": {"conditions": [{"type": "Available", "status": "False"}]},
            }
        ],
        "leases": [],
        "namespaces": [
            {
                "metadata": {"name": "gone", "deletionTimestamp": rfc3339(NOW - 400)},
                "status": {
                    "conditions": [
                        {"type": "NamespaceDeletionDiscoveryFailure", "status": "True", "message": "metrics down"}
                    ]
                },
            }
        ],
        "customresourcedefinitions": [
            {"metadata": {"name": "relics.x.io"}, "spec": {"conversion": {"strategy": "None"}}},
        ],
    }
    return FakeScanCluster(objects, forbidden={"secrets"}, full=full, discovery=DISCOVERY)


def by_key(report):
    return {(g.finalizer, g.resource): g for g in report.groups}


def test_groups_per_finalizer_and_type_with_counts_namespaces_and_verdicts():
    fake = cluster()
    report = scan(fake, ScanOptions(chunk_size=50), clock=lambda: NOW)
    groups = by_key(report)
    stalls = groups[(KOPF, "stalls.g.example.com")]
    assert stalls.count == 200 and stalls.namespaces == ["ns0", "ns1", "ns2"] and stalls.stuck
    assert stalls.verdict == "stuck: no controller seen for 10m"
    assert stalls.owner_kind == "manager" and "a kopf operator" in stalls.owner
    assert stalls.commands == [f"kubectl unfinalize crd stalls.g.example.com --only-terminating --finalizer {KOPF}"]
    configmaps = groups[(DEAD, "configmaps")]
    assert configmaps.count == 2 and configmaps.stuck  # the oldest waited 2m, its manager wrote 1h ago
    assert configmaps.commands == [
        f"kubectl unfinalize configmaps cm -n ns0 --finalizer {DEAD}",
        f"kubectl unfinalize configmaps cm2 -n ns1 --finalizer {DEAD}",
    ]
    cluster_scoped = groups[("g.example.com/protect", "nodes2.g.example.com")]
    assert cluster_scoped.owner_kind == "crd" and cluster_scoped.commands == [
        "kubectl unfinalize nodes2.g.example.com n1 --finalizer g.example.com/protect"
    ]
    assert not any(g.finalizer == "customresourcecleanup.apiextensions.k8s.io" for g in report.groups)
    # one version per type (the preferred one), types without list are not listed
    assert ("stalls", "v1beta1", None) not in fake.listed and not any(p == "bindings" for p, _, _ in fake.listed)
    assert report.not_scanned == [
        "metrics.acme.io/v1beta1: unavailable in discovery; its objects were not scanned",
        "secrets: forbidden: cannot list secrets cluster-wide (RBAC)",
    ]
    assert report.objects == 3 + 201 + 1 + 2 + 4 and not report.ok  # namespaces: gone and the 3 the objects are in


def test_terminating_crds_and_namespaces():
    report = scan(cluster(), ScanOptions(), clock=lambda: NOW)
    (crd,) = report.crds
    assert crd.name == "relics.x.io" and crd.instances == 0 and crd.conversion == "None" and crd.stuck
    assert crd.commands == ["kubectl unfinalize crd relics.x.io --delete"]
    (ns,) = report.namespaces
    assert ns.stuck and ns.apiservices == ["v1beta1.metrics.acme.io"]
    assert ns.conditions == ["NamespaceDeletionDiscoveryFailure: metrics down"]
    assert ns.commands == ["kubectl delete apiservice v1beta1.metrics.acme.io", "kubectl unfinalize ns gone --delete"]


def test_all_adds_held_groups_and_older_than_leaves_out_the_young():
    report = scan(cluster(), ScanOptions(include_live=True, older_than=60), clock=lambda: NOW)
    groups = {(g.finalizer, g.resource, g.terminating): g for g in report.groups}
    held = groups[(KOPF, "stalls.g.example.com", False)]
    assert held.state is State.HELD and held.count == 1 and not held.stuck and not held.commands
    assert groups[(DEAD, "configmaps", True)].count == 1  # cm2, deleted 5s ago, is younger than 60s
    assert (DEAD, "configmaps", False) not in groups  # "plain" has no finalizers


def test_namespace_narrows_to_namespaced_types_and_that_namespace():
    fake = cluster()
    report = scan(fake, ScanOptions(namespace="ns1"), clock=lambda: NOW)
    assert {p for p, _, ns in fake.listed} == {"configmaps", "secrets", "stalls", "customresourcedefinitions"}
    assert all(ns == ("ns1" if p != "customresourcedefinitions" else None) for p, _, ns in fake.listed)
    assert by_key(report)[(KOPF, "stalls.g.example.com")].count == 67
    assert report.crds == [] and report.namespaces == []
    assert by_key(report)[(KOPF, "stalls.g.example.com")].commands[0].endswith(" -n ns1")
    assert "secrets: forbidden: cannot list secrets in namespace ns1 (RBAC)" in report.not_scanned


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_the_document_validates_against_the_schema(output):
    import yaml

    report = scan(cluster(), ScanOptions(include_live=True), clock=lambda: NOW)
    text = render(report, output)
    document = json.loads(text) if output == "json" else yaml.safe_load(text)
    jsonschema.validate(document, SCHEMA)
    assert document["stuck"] == len(report.stuck) and document["ok"] is False


def test_the_schema_catches_a_renamed_field():
    document = scan(cluster(), ScanOptions(), clock=lambda: NOW).to_dict()
    document["groups"][0]["counted"] = document["groups"][0].pop("count")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)


def test_text_groups_under_their_finalizer_with_the_commands():
    text = render(scan(cluster(), ScanOptions(), clock=lambda: NOW), "text")
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(KOPF)))
    assert lines[start + 1].split()[:4] == ["stalls.g.example.com", "200", "10m", "ns0,"]
    assert (
        lines[start + 2].strip()
        == f"free: kubectl unfinalize crd stalls.g.example.com --only-terminating --finalizer {KOPF}"
    )
    assert any(line.startswith("relics.x.io") and "stuck" in line for line in lines)
    assert "free: kubectl delete apiservice v1beta1.metrics.acme.io" in text
    wide = render(scan(cluster(), ScanOptions(), clock=lambda: NOW), "wide")
    assert "evidence: last write by kopf 11m ago (before the deletion)" in wide


def test_nothing_to_report():
    fake = FakeScanCluster({})
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    assert report.ok and render(report, "text").startswith("nothing is stuck")
    report.raise_for_failure()


def test_evidence_that_cannot_be_read_is_said_and_never_guessed():
    fake = cluster()
    fake.forbidden |= {"apiservices", "leases"}
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    evidence_lines = [line for line in report.not_scanned if line.startswith("evidence: ")]
    assert evidence_lines == [
        "evidence: cannot list apiservices.apiregistration.k8s.io: forbidden",
        "evidence: cannot list leases.coordination.k8s.io: forbidden",
    ]
    (ns,) = report.namespaces
    assert ns.apiservices == [] and ns.stuck  # still stuck from its own condition, no APIService named


def test_kopf_peering_is_read_also_when_the_scan_is_narrowed_to_a_namespace():
    fake = cluster()
    peering = {"resource": "clusterkopfpeerings", "scope": "Cluster", "responseKind": {"kind": "P"}, "verbs": ["list"]}
    fake.api_discovery = lambda: [
        *DISCOVERY,
        {"metadata": {"name": "kopf.dev"}, "versions": [{"version": "v1", "resources": [peering]}]},
    ]
    seen = rfc3339(NOW - 2)
    fake.full["clusterkopfpeerings"] = [
        {"metadata": {"name": "default"}, "status": {"me@1": {"lifetime": 60, "lastseen": seen}}}
    ]
    report = scan(fake, ScanOptions(namespace="ns1"), clock=lambda: NOW)
    stalls = by_key(report)[(KOPF, "stalls.g.example.com")]
    assert (
        stalls.state is State.ALIVE and "kopf peer me@1 in ClusterKopfPeering default, seen 2s ago" in stalls.evidence
    )


def test_credentials_rejected_for_good_end_the_scan_with_their_error_not_a_line_per_type():
    """The transport raises Unauthorized only once a renewed credential was refused too, and
    then for every request after it: each type's "not scanned" line would say the same."""
    from kubectl_unfinalize.errors import Unauthorized

    fake = cluster()
    listed = fake.list_metadata

    def revoked(resource, query):
        if resource.plural == "stalls":
            raise Unauthorized(401, "Unauthorized", "Unauthorized")
        return listed(resource, query)

    fake.list_metadata = revoked
    with pytest.raises(Unauthorized):
        scan(fake, ScanOptions())
