"""Pending is never "clean" (issue 26): what was deleted moments ago and is held gets its
commands and its own exit code (3), and scan --wait looks again until it is judged."""

from __future__ import annotations

import json

import jsonschema
import pytest
from fakecluster import FakeScanCluster
from test_scan_engine import DEAD, NOW, SCHEMA, md

from kubectl_unfinalize import scan_api
from kubectl_unfinalize.cli.main import main
from kubectl_unfinalize.errors import IncompleteError
from kubectl_unfinalize.scanning.model import State
from kubectl_unfinalize.scanning.options import ScanOptions
from kubectl_unfinalize.scanning.report import ScanReport
from kubectl_unfinalize.scanning.settle import POLL, settle
from kubectl_unfinalize.scanning.survey import scan


def young_world(deleted: float = 5, namespace: bool = True) -> FakeScanCluster:
    """One ConfigMap held by a dead operator's finalizer, deleted `deleted` seconds before
    NOW, a CRD Terminating as long with nothing left of its objects, and a namespace
    whose content the namespace controller reports as remaining."""
    going = {
        "metadata": {"name": "ns-going", "deletionTimestamp": md("x", deleted=deleted)["deletionTimestamp"]},
        "status": {"conditions": [{"type": "NamespaceContentRemaining", "status": "True", "message": "1 left"}]},
    }
    return FakeScanCluster(
        {
            "configmaps": [md("cm", "ns0", deleted=deleted, manager=None)],
            "customresourcedefinitions": [
                md("relics.x.io", deleted=deleted, finalizers=("customresourcecleanup.apiextensions.k8s.io",))
            ],
        },
        full={
            "customresourcedefinitions": [{"metadata": {"name": "relics.x.io"}, "spec": {}}],
            "namespaces": [going] if namespace else [],
        },
    )


def test_pending_groups_crds_and_namespaces_get_their_commands_and_are_not_ok():
    report = scan(young_world(), ScanOptions(), clock=lambda: NOW)
    (group,) = report.groups
    assert group.state is State.PENDING and group.pending and not group.stuck
    assert group.commands == [f"kubectl unfinalize configmaps cm -n ns0 --finalizer {DEAD}"]
    assert group.names == [("ns0", "cm")]
    (crd,) = report.crds
    assert crd.pending and not crd.stuck and crd.commands == ["kubectl unfinalize crd relics.x.io --delete"]
    (namespace,) = report.namespaces
    assert namespace.pending and namespace.commands == ["kubectl unfinalize ns ns-going --delete"]
    assert report.stuck == [] and len(report.pending) == 3 and not report.ok
    with pytest.raises(IncompleteError, match="pending: deleted 5s ago"):
        report.raise_for_failure()
    document = report.to_dict()
    jsonschema.validate(document, SCHEMA)
    assert (document["ok"], document["stuck"], document["pending"], document["waitedSeconds"]) == (False, 0, 3, 0)
    assert document["crds"][0]["pending"] and document["namespaces"][0]["pending"]


def test_judged_entries_are_not_pending():
    report = scan(young_world(deleted=60), ScanOptions(), clock=lambda: NOW)
    assert report.pending == [] and report.groups[0].stuck and report.crds[0].stuck
    assert not report.crds[0].pending and not report.namespaces[0].pending


class Clock:
    """NOW moving only when the wait pauses: each look sees how old the deletions are then."""

    def __init__(self) -> None:
        self.now = NOW
        self.pauses: list[float] = []

    def pause(self, seconds: float) -> bool:
        self.pauses.append(seconds)
        self.now += seconds
        return False


def test_wait_looks_again_until_the_pending_group_is_judged_stuck():
    fake, clock = young_world(), Clock()
    ages = []

    def survey() -> ScanReport:
        ages.append(round(clock.now - NOW + 5, 1))
        return scan(fake, ScanOptions(), clock=lambda: clock.now)

    report = settle(survey, 30.0, lambda: 1000.0, clock.pause)
    assert report.pending == [] and report.groups[0].stuck and not report.ok
    # every POLL seconds, and the last look just past the grace, not a whole POLL later
    assert ages == [5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 30.1]
    assert max(clock.pauses) == POLL


def test_wait_ends_when_what_was_pending_is_gone():
    fake, clock = young_world(), Clock()

    def survey() -> ScanReport:
        if clock.pauses:  # a live controller removed its finalizer meanwhile
            fake.objects = {}
            fake.full = {}
        return scan(fake, ScanOptions(), clock=lambda: clock.now)

    report = settle(survey, 30.0, lambda: 1000.0, clock.pause)
    assert report.ok and clock.pauses == [POLL]


def test_wait_stops_when_no_time_is_left_or_interrupted_and_says_pending():
    clock = Clock()
    report = settle(lambda: scan(young_world(), ScanOptions(), clock=lambda: NOW), 30.0, lambda: 1.0, clock.pause)
    assert len(report.pending) == 3 and clock.pauses == []
    report = settle(lambda: scan(young_world(), ScanOptions(), clock=lambda: NOW), 30.0, lambda: 1000.0, lambda s: True)
    assert len(report.pending) == 3


@pytest.mark.parametrize(
    ("deleted", "argv", "status", "verdict"),
    [
        (5, ["scan"], 3, "3 pending"),
        (60, ["scan"], 1, "3 stuck"),
        (5, ["scan", "--wait", "-o", "json"], 3, "3 pending"),
    ],
)
def test_exit_codes_tell_stuck_from_pending(deleted, argv, status, verdict, monkeypatch, capsys):
    asked = {}

    def fake_run_scan(options, connection, interrupt=None):
        asked["options"] = options
        return scan(young_world(deleted), ScanOptions(), clock=lambda: NOW)

    monkeypatch.setattr(scan_api, "run_scan", fake_run_scan)
    assert main(argv) == status
    out, err = capsys.readouterr()
    assert asked["options"].wait is ("--wait" in argv)
    assert verdict in err
    if "json" in argv:
        assert json.loads(out)["pending"] == 3
        assert "--timeout ran out before they were judged (exit 3)" in err
    elif status == 3:
        assert f"free: kubectl unfinalize configmaps cm -n ns0 --finalizer {DEAD}" in out
        assert "scan --wait waits for the verdict (exit 3)" in err


def test_nothing_held_exits_0(monkeypatch, capsys):
    monkeypatch.setattr(
        scan_api, "run_scan", lambda *args, **kwargs: scan(FakeScanCluster({}), ScanOptions(), clock=NOW.__float__)
    )
    assert main(["scan"]) == 0
    assert "nothing held" in capsys.readouterr().err
