"""scan on a cluster whose storage holds objects the API server cannot read (KEP-3926):
each one named, the gate failing on it; a type the server cannot explain named with the
feature gate that would let it name the objects."""

from __future__ import annotations

import json

import jsonschema
import pytest
from fakecluster import FakeScanCluster
from test_corrupt_answers import LIST_ANSWER, WITHOUT_GATE
from test_scan_engine import SCHEMA

from kubectl_unfinalize.cli.scan_output import render, stderr_lines
from kubectl_unfinalize.errors import ApiError, CorruptObjects, ExitStatus, IncompleteError
from kubectl_unfinalize.scanning.options import ScanOptions
from kubectl_unfinalize.scanning.survey import scan

NOW = 1_800_000_000.0


def corrupt_secrets() -> CorruptObjects:
    details = json.loads(json.dumps(LIST_ANSWER["details"]).replace("example.com/widgets", "secrets"))
    return CorruptObjects(
        500, "StorageReadError", "failed to read one or more secrets from the storage", details=details
    )


def test_each_object_the_server_cannot_read_is_named_with_what_it_said_and_fails_the_gate():
    fake = FakeScanCluster({"configmaps": [{"name": "fine", "namespace": "t"}]}, failing={"secrets": corrupt_secrets()})
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    assert [(c.resource, c.namespace, c.name) for c in report.corrupt] == [("secrets", "t", "a"), ("secrets", "u", "b")]
    assert report.corrupt[0].message == "object not decodable"
    assert report.corrupt[0].commands == ["kubectl unfinalize secrets a -n t --unsafe-delete-corrupt"]
    assert report.exit_status is ExitStatus.FAILED and not report.ok and not report.groups
    (line,) = [n for n in report.not_scanned if n.startswith("secrets:")]
    assert "fails on 2 object(s) the API server cannot read" in line and "other objects were not read" in line
    with pytest.raises(IncompleteError, match="secrets t/a: the API server cannot read it"):
        report.raise_for_failure()
    document = report.to_dict()
    jsonschema.validate(document, SCHEMA)
    assert document["corrupt"][1] == {
        "resource": "secrets",
        "namespace": "u",
        "name": "b",
        "message": "object not decodable",
        "commands": ["kubectl unfinalize secrets b -n u --unsafe-delete-corrupt"],
    }
    text = render(report, "text")
    assert (
        "CORRUPT (unreadable)" in text and "remove: kubectl unfinalize secrets a -n t --unsafe-delete-corrupt" in text
    )
    summary = list(stderr_lines(report))
    assert "2 corrupt, 1 not read" in summary[-3] and summary[-2].startswith("corrupt: the API server cannot read")


def test_without_the_feature_gate_the_type_is_named_with_the_gate_that_names_its_objects():
    failing = ApiError(500, "Internal Server Error", WITHOUT_GATE["message"])
    report = scan(FakeScanCluster({}, failing={"secrets": failing}), ScanOptions(), clock=lambda: NOW)
    (line,) = [n for n in report.not_scanned if n.startswith("secrets:")]
    assert "illegal base64 data" in line and "AllowUnsafeMalformedObjectDeletion=true" in line
    assert not report.corrupt and report.failing == [line]
    assert report.exit_status is ExitStatus.FAILED and not report.ok  # it may hold anything
    with pytest.raises(IncompleteError, match="not read: secrets: cannot list"):
        report.raise_for_failure()
    jsonschema.validate(report.to_dict(), SCHEMA)
    assert list(stderr_lines(report))[-1].startswith("not read: a type whose list failed")


def test_a_type_the_user_may_not_list_is_named_and_does_not_fail_the_gate():
    report = scan(FakeScanCluster({}, forbidden={"secrets"}), ScanOptions(), clock=lambda: NOW)
    assert report.not_scanned == ["secrets: forbidden: cannot list secrets cluster-wide (RBAC)"]
    assert report.failing == [] and report.ok and report.exit_status is ExitStatus.OK


def test_a_group_version_unavailable_in_discovery_fails_the_gate():
    from fakecluster import DISCOVERY

    report = scan(FakeScanCluster({}, discovery=DISCOVERY), ScanOptions(), clock=lambda: NOW)
    assert report.failing == ["metrics.acme.io/v1beta1: unavailable in discovery; its objects were not scanned"]
    assert report.exit_status is ExitStatus.FAILED
