"""scan --free's frees (scan_free.free_stuck) on the engine's port, with no cluster: the plan's
calls resolved and run by the Engine on one cluster, in one record, within --max-objects
counted over every call before the first write."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakecluster import CONFIGMAPS, WIDGET_CRD, FakeCluster
from test_plugin_modes import group

from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.errors import InputError
from kubectl_unfinalize.model import Action
from kubectl_unfinalize.records.reading import load
from kubectl_unfinalize.records.recorded import Header
from kubectl_unfinalize.scan_free import free_stuck
from kubectl_unfinalize.scanning.options import FreeOptions, ScanOptions
from kubectl_unfinalize.scanning.report import ScanReport

DEAD = "dead.example.com/x"
HEADER = Header("kubectl unfinalize scan --free", "ctx", "https://127.0.0.1:6443")


def held(cluster: FakeCluster, name: str, resource=None, finalizers=(DEAD,)) -> None:
    ref = cluster.add(name, list(finalizers), "ns", resource or WIDGET_CRD.resource)
    cluster.objects[ref].terminating = True


@pytest.fixture
def cluster() -> FakeCluster:
    """Three widgets and a ConfigMap being deleted, held by a dead operator's finalizer; a
    widget held by another, live one; the widgets' CRD as its manifest reads."""
    cluster = FakeCluster()
    cluster.add_crd()
    resource = WIDGET_CRD.resource
    cluster.specs[WIDGET_CRD.name] = {
        "spec": {
            "group": resource.group,
            "scope": "Namespaced",
            "names": {"plural": resource.plural, "kind": resource.kind},
            "versions": [{"name": resource.version, "served": True, "storage": True}],
        }
    }
    for name in ("w0", "w1", "w2"):
        held(cluster, name)
    held(cluster, "alive", finalizers=("live.example.com/y",))
    held(cluster, "orphan", CONFIGMAPS)
    return cluster


def scan_report() -> ScanReport:
    widgets = group(WIDGET_CRD.name, finalizer=DEAD, namespaces=("ns", "ns", "ns"))
    maps = group("configmaps", finalizer=DEAD, namespaces=("ns",))
    maps.names[:] = [("ns", "orphan")]
    return ScanReport(groups=[widgets, maps])


def free(cluster: FakeCluster, tmp_path: Path, **options):
    scan = ScanOptions(free=FreeOptions(record=str(tmp_path / "r.jsonl"), **options))
    return free_stuck(cluster, scan_report(), scan, Deadline(30), pytest.fail, HEADER, "default")


def test_every_planned_call_frees_in_one_record(cluster: FakeCluster, tmp_path: Path) -> None:
    freed, record = free(cluster, tmp_path)
    assert [(f.resource, f.finalizers) for f in freed] == [("configmaps", [DEAD]), (WIDGET_CRD.name, [DEAD])]
    assert all(f.report is not None and f.report.ok for f in freed)
    assert {r.name for r, s in cluster.objects.items() if s.finalizers} == {"alive"}  # the live one's kept
    written = load(Path(record))
    assert written.header["command"] == HEADER.command and written.end is not None and written.end["ok"]
    assert sorted(w.ref.name for w in written.writes) == ["orphan", "w0", "w1", "w2"]
    assert written.end["counts"] == {"unfinalized": 4}


def test_max_objects_counts_every_call_together_before_the_first_write(cluster: FakeCluster, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="scan --free would change 4 objects, more than --max-objects 3"):
        free(cluster, tmp_path, max_objects=3)
    assert [verb for verb, _ in cluster.calls if verb in ("patch", "delete")] == []
    assert not (tmp_path / "r.jsonl").exists()
    freed, _ = free(cluster, tmp_path, max_objects=4)
    assert sum(f.report.count(Action.UNFINALIZED) for f in freed if f.report) == 4


def test_a_dry_run_changes_nothing_and_writes_no_record(cluster: FakeCluster, tmp_path: Path) -> None:
    from kubectl_unfinalize.options import DryRun

    freed, record = free(cluster, tmp_path, dry_run=DryRun.CLIENT)
    assert record == "" and len(freed) == 2
    assert sum(1 for s in cluster.objects.values() if s.finalizers == [DEAD]) == 4


def test_a_stuck_namespace_counts_once_against_max_objects(cluster: FakeCluster, tmp_path: Path) -> None:
    """Its delete and the finalizers inside are one call; the namespace is one object more
    than what its groups hold (it was counted twice, and a cap of exactly that refused)."""
    from kubectl_unfinalize import TerminatingNamespace

    del cluster.objects[next(r for r in cluster.objects if r.name == "alive")]  # nothing live holds it
    ref = cluster.add_namespace("ns")
    cluster.objects[ref].terminating = True
    report = scan_report()
    report.namespaces.append(TerminatingNamespace("ns", 60.0, [], [], [], stuck=True))
    scan = ScanOptions(free=FreeOptions(record=str(tmp_path / "r.jsonl"), max_objects=5))
    with pytest.raises(InputError, match="would change 5 objects, more than --max-objects 4"):
        free_stuck(cluster, report, ScanOptions(free=FreeOptions(max_objects=4)), Deadline(30), pytest.fail, HEADER, "")
    freed, _ = free_stuck(cluster, report, scan, Deadline(30), pytest.fail, HEADER, "default")
    assert [f.resource for f in freed] == ["configmaps", WIDGET_CRD.name, "namespaces"]
    assert all(f.report is not None and f.report.ok for f in freed), freed
    assert ref not in cluster.objects  # gone: its delete waited for it
