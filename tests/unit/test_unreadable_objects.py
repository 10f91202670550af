"""Objects the API server cannot read from storage (KEP-3926): a list of their type fails
whole, a read or a write of one fails, and asking again changes nothing. The run names
each one with the command that deletes it, ends at once instead of waiting for its
deadline, and deletes one unreadable only with --unsafe-delete-corrupt, after a warning,
recorded as what undo cannot bring back."""

from __future__ import annotations

import time

from fakecluster import CONFIGMAPS, WIDGET_CRD, WIDGETS, FakeCluster, MemoryJournal

from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.engine import Engine
from kubectl_unfinalize.model import CRD_RESOURCE, NAMESPACE_RESOURCE, Action, ObjectRef, Report, Targets
from kubectl_unfinalize.options import Options

DEAD = "example.com/dead"
BAD = ObjectRef(WIDGETS, "bad", "ns")


def _cluster() -> FakeCluster:
    cluster = FakeCluster()
    cluster.add_crd()
    cluster.add("good", [DEAD])
    cluster.add("bad", [DEAD])
    cluster.corrupt.add(BAD)
    return cluster


def _run(cluster: FakeCluster, targets: Targets | None = None, **options) -> tuple[Report, list[str], MemoryJournal]:
    warnings: list[str] = []
    journal = MemoryJournal()
    opts = Options(settle=0, poll=0.01, timeout=60, **options)
    engine = Engine(cluster, opts, Deadline(opts.deadline_seconds), on_warning=warnings.append, journal=journal)
    return engine.run(targets or Targets(crds=[WIDGET_CRD])), warnings, journal


def _by_name(report: Report) -> dict[str, object]:
    return {o.name: o for o in report.outcomes}


def test_a_crd_whose_list_fails_on_an_unreadable_object_names_it_and_ends_at_once():
    cluster = _cluster()
    started = time.monotonic()
    report, warnings, journal = _run(cluster, delete=True)
    assert time.monotonic() - started < 10  # not the deadline (60 s)
    by_name = _by_name(report)
    bad = by_name["bad"]
    assert bad.action is Action.FAILED and "cannot read it from storage (object not decodable)" in bad.message
    assert "`kubectl unfinalize widgets.example.com bad -n ns --unsafe-delete-corrupt`" in bad.message
    crd = by_name[WIDGET_CRD.name]
    assert crd.action is Action.FAILED and "run again with --unsafe-delete-corrupt" in crd.message
    assert "the CRD was not deleted" in crd.message
    assert not report.ok and cluster.stored(WIDGET_CRD.name, CRD_RESOURCE).terminating is False
    assert ("unsafe_delete", "bad") not in cluster.calls and warnings == [] and journal.writes == []
    assert cluster.stored("good").finalizers == [DEAD]  # its list never came: nothing is changed blind
    assert [o for o in report.outcomes if o.name == "bad"] == [bad]  # named once, not once per pass


def test_with_the_flag_it_is_deleted_unreadable_after_one_warning_then_the_rest_goes_as_usual():
    cluster = _cluster()
    warned_first: list[bool] = []
    cluster.hooks.append(lambda verb, ref: verb == "unsafe_delete" and warned_first.append(bool(warnings)))
    warnings: list[str] = []
    opts = Options(settle=0, poll=0.01, timeout=60, delete=True, unsafe_delete_corrupt=True)
    journal = MemoryJournal()
    engine = Engine(cluster, opts, Deadline(60), on_warning=warnings.append, journal=journal)
    report = engine.run(Targets(crds=[WIDGET_CRD]))
    assert warned_first == [True]
    by_name = _by_name(report)
    assert by_name["bad"].action is Action.DELETED and "deleted unreadable" in by_name["bad"].message
    assert "undo cannot bring it back" in by_name["bad"].message
    assert report.ok, report.failed
    assert cluster.stored("good") is None and cluster.stored(WIDGET_CRD.name, CRD_RESOURCE) is None
    [warning] = warnings
    assert "skips" in warning or "without running its finalizers" in warning
    unsafe = [w for w in journal.writes if w.op == "unsafe-delete"]
    assert [(w.ref, w.message) for w in unsafe] == [(BAD, "unreadable from storage: object not decodable")]
    assert cluster.calls.count(("unsafe_delete", "bad")) == 1


def test_without_the_rbac_verb_it_says_which_and_nothing_is_deleted():
    cluster = _cluster()
    cluster.unsafe_denied = True
    report, _, journal = _run(cluster, delete=True, unsafe_delete_corrupt=True)
    bad = _by_name(report)["bad"]
    assert bad.action is Action.FAILED
    assert "the RBAC verb 'unsafe-delete-ignore-read-errors' on widgets.example.com in namespace ns" in bad.message
    assert not report.ok and cluster.stored(WIDGET_CRD.name, CRD_RESOURCE).terminating is False
    assert cluster.stored("bad") is not None and cluster.stored("good") is not None
    assert [w.op for w in journal.writes if w.outcome == "ok"] == []


def test_a_dry_run_sends_no_unsafe_delete():
    cluster = _cluster()
    report, _, _ = _run(cluster, delete=True, unsafe_delete_corrupt=True, dry_run="server")
    assert "would be deleted unsafely" in _by_name(report)["bad"].message
    assert ("unsafe_delete", "bad") not in cluster.calls and cluster.stored("bad") is not None


def test_a_named_object_the_server_cannot_read():
    cluster = _cluster()
    secret = ObjectRef(CONFIGMAPS, "cm", "ns")
    cluster.add("cm", [DEAD], resource=CONFIGMAPS)
    cluster.corrupt.add(secret)
    report, _, _ = _run(cluster, Targets(objects=[secret]))
    named = _by_name(report)["cm"]
    assert named.action is Action.FAILED and "--unsafe-delete-corrupt" in named.message
    assert not report.ok and cluster.stored("cm", CONFIGMAPS) is not None
    report, _, _ = _run(cluster, Targets(objects=[secret]), unsafe_delete_corrupt=True)
    assert _by_name(report)["cm"].action is Action.DELETED and report.ok
    assert cluster.stored("cm", CONFIGMAPS) is None


def test_a_namespace_holding_one_is_named_not_waited_on_and_goes_with_the_flag():
    cluster = FakeCluster()
    cluster.add_namespace("space")
    cluster.add("held", [DEAD], namespace="space", resource=CONFIGMAPS)
    cluster.add("bad", [DEAD], namespace="space", resource=CONFIGMAPS)
    cluster.corrupt.add(ObjectRef(CONFIGMAPS, "bad", "space"))
    started = time.monotonic()
    report, _, _ = _run(cluster, Targets(namespaces=["space"]), delete=True)
    assert time.monotonic() - started < 10
    by_name = _by_name(report)
    assert by_name["bad"].action is Action.FAILED and "cannot read it from storage" in by_name["bad"].message
    assert any(
        o.name == "space" and o.action is Action.BLOCKING and "cannot be read from storage" in o.message
        for o in report.outcomes
    )
    assert not report.ok
    report, _, _ = _run(cluster, Targets(namespaces=["space"]), delete=True, unsafe_delete_corrupt=True)
    assert report.ok, report.failed
    assert cluster.stored("space", NAMESPACE_RESOURCE) is None
