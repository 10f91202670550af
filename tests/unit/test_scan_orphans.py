"""scan and objects left in a namespace that is gone (removed through /finalize while they
were held): a verdict of their own, a command that frees them, and the gate fails."""

from __future__ import annotations

from fakecluster import FakeScanCluster
from test_scan_engine import NOW, md

from kubectl_unfinalize.options import DryRun
from kubectl_unfinalize.scanning.model import State
from kubectl_unfinalize.scanning.options import ScanOptions
from kubectl_unfinalize.scanning.remedy import Scope, plan
from kubectl_unfinalize.scanning.survey import scan

LEFT = "left.example.com/cleanup"


def _cluster(removed=("orphans",)) -> FakeScanCluster:
    objects = {
        "configmaps": [
            # its manager wrote after the deletion: working, were its namespace there
            md("left", "orphans", deleted=30, finalizers=(LEFT,), manager=("left-op", 20)),
            md("held", "team", deleted=3600),
        ],
    }
    return FakeScanCluster(objects, removed_namespaces=removed)


def test_objects_in_a_namespace_that_is_gone_are_orphaned_and_fail_the_gate():
    report = scan(_cluster(), ScanOptions(), clock=lambda: NOW)
    by_ns = {tuple(g.namespaces): g for g in report.groups}
    orphaned = by_ns[("orphans",)]
    assert orphaned.state is State.ORPHANED and orphaned.stuck and orphaned.held, orphaned
    assert "namespace orphans is gone" in orphaned.verdict and "until it exists again" in orphaned.verdict
    assert orphaned.commands == ["kubectl unfinalize ns orphans --delete"]
    [fix] = [f for f in report.fixes if f.finalizer == orphaned.finalizer]
    assert fix.commands == ["kubectl unfinalize ns orphans --delete"]  # the line scan prints: free: ...
    assert by_ns[("team",)].state is State.STUCK  # the other namespace's: judged as before
    assert not report.ok


def test_the_same_objects_in_a_namespace_that_exists_are_judged_as_ever():
    report = scan(_cluster(removed=()), ScanOptions(), clock=lambda: NOW)
    assert State.ORPHANED not in {g.state for g in report.groups}
    [left] = [g for g in report.groups if g.namespaces == ["orphans"]]
    assert left.state is State.WORKING  # its manager wrote after the deletion, moments ago


def test_scan_free_frees_them_through_the_namespace():
    report = scan(_cluster(), ScanOptions(), clock=lambda: NOW)
    calls = plan(report, Scope(), grace=60)
    [call] = [c for c in calls if c.selection.namespaces == ("orphans",)]
    assert call.delete and call.finalizers == () and not call.options(DryRun.NONE, 500).only_terminating
    assert not [c for c in calls if c.namespace == "orphans"]  # not by type as well


def test_a_scan_narrowed_to_the_gone_namespace_finds_them_too():
    report = scan(_cluster(), ScanOptions(namespace="orphans"), clock=lambda: NOW)
    assert [g.state for g in report.groups] == [State.ORPHANED] and not report.ok


def test_a_namespace_made_while_the_scan_listed_holds_no_orphans_and_nothing_is_lost():
    """Listed before the types, missing; read again after them, there: its objects are
    judged as any others, merged into the group of the same finalizer."""
    fake = _cluster(removed=("orphans",))
    fake.objects["configmaps"].append(md("late", "orphans", deleted=3600))  # DEAD, like "held" in team
    reads = []
    get = fake.get

    def made_meanwhile(ref):
        reads.append(ref.name)
        if ref.resource.plural == "namespaces" and ref.name == "orphans":
            return {"metadata": {"name": "orphans"}}
        return get(ref)

    fake.get = made_meanwhile
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    assert State.ORPHANED not in {g.state for g in report.groups} and "orphans" in reads
    [dead] = [g for g in report.groups if "team" in g.namespaces]
    assert dead.count == 2 and dead.namespaces == ["orphans", "team"]  # merged: none dropped
