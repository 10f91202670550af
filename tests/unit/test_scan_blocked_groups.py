"""`blocked` in a scan over a fake cluster: a group judged working whose objects say they
cannot finish is blocked, held for the gate (exit 1), with the command that frees it and
the warning that its controller is alive; what it costs in reads."""

from __future__ import annotations

import json

import jsonschema
from fakecluster import FakeScanCluster
from test_scan_engine import NOW, SCHEMA, md
from test_scan_refusals import TERMINATING, condition, core_event

from kubectl_unfinalize import scan_api
from kubectl_unfinalize.cli.main import main
from kubectl_unfinalize.cli.scan_output import render
from kubectl_unfinalize.errors import Forbidden, IncompleteError
from kubectl_unfinalize.scanning.model import State
from kubectl_unfinalize.scanning.options import ScanOptions
from kubectl_unfinalize.scanning.survey import scan
from kubectl_unfinalize.scanning.tally import rfc3339

PROVIDER = "finalizer.managedresource.crossplane.io"
MANAGER = "provider-aws"


class RecordingCluster(FakeScanCluster):
    """Records the whole-object reads: lists (resource, namespace, field selector), GETs."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lists = []
        self.gets = []

    def list_objects(self, resource, query):
        self.lists.append((resource.plural, query.namespace, query.field_selector))
        if resource.plural in self.forbidden:
            raise Forbidden(403, "Forbidden", f"{resource.plural} is forbidden")
        items = [
            o
            for o in self.full.get(resource.plural, [])
            if not query.namespace or (o.get("metadata") or {}).get("namespace") in (None, query.namespace)
        ]
        yield items

    def get(self, ref):
        self.gets.append((ref.resource.plural, ref.namespace, ref.name))
        return super().get(ref)


def whole(meta, *conditions):
    return {"metadata": dict(meta, uid=f"uid-{meta['name']}"), "status": {"conditions": list(conditions)}}


def world(*conditions, events=()):
    """One configmap `cm` in team-a, deleted 10m ago, whose finalizer's manager wrote 2s
    ago; another deleted long ago by a dead operator (stuck, never looked at)."""
    held = md("cm", "team-a", deleted=600, finalizers=(PROVIDER,), manager=(MANAGER, 2))
    dead = md("old", "team-b", deleted=3600, finalizers=("dead.example.com/x",), manager=("op", 7200))
    return RecordingCluster(
        {"configmaps": [held, dead]},
        full={"configmaps": [whole(held, *conditions), whole(dead)], "events": list(events)},
    )


def event_about_cm(message, first, last):
    event = core_event(message, first, last, uid="uid-cm", kind="ConfigMap")
    event["involvedObject"]["name"] = "cm"
    event["metadata"] = {"namespace": "team-a", "name": "cm.1"}
    return event


def group_of(report, finalizer=PROVIDER):
    return next(g for g in report.groups if g.finalizer == finalizer)


def test_a_working_controller_that_keeps_being_refused_is_blocked_and_held():
    fake = world(condition(TERMINATING, changed=480))
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    group = group_of(report)
    assert group.state is State.BLOCKED and not group.stuck and not group.pending
    assert group.verdict.startswith(
        'blocked: the namespace is being deleted; ProviderConfigUsage create refused for 8m ("cannot create'
    )
    assert group.commands == [f"kubectl unfinalize configmaps cm -n team-a --finalizer {PROVIDER}"]
    assert group.evidence[0].startswith('condition Synced=False (ReconcileError) on team-a/cm, for 8m: "cannot')
    assert report.blocked == [group] and group not in report.stuck and not report.ok
    assert [f.finalizer for f in report.fixes] == ["dead.example.com/x"]  # blocked is never freed with the stuck
    document = report.to_dict()
    jsonschema.validate(document, SCHEMA)
    assert document["blocked"] == 1 and document["ok"] is False
    entry = next(g for g in document["groups"] if g["finalizer"] == PROVIDER)
    assert entry["state"] == "blocked" and entry["blocked"]["objects"] == ["team-a/cm"]
    assert entry["blocked"]["action"] == "ProviderConfigUsage create refused" and entry["blocked"]["lookedAt"] == 1


def test_a_warning_event_blocks_it_too():
    fake = world(events=[event_about_cm(TERMINATING, first=500, last=1)])
    group = group_of(scan(fake, ScanOptions(), clock=lambda: NOW))
    assert group.state is State.BLOCKED and "Warning Event CannotCreate" in group.evidence[0]


def test_a_healthy_or_young_refusal_stays_working_and_the_gate_passes():
    for conditions in ([condition("Available", reason="ReconcileSuccess")], [condition(TERMINATING, changed=10)]):
        report = scan(world(*conditions), ScanOptions(), clock=lambda: NOW)
        group = group_of(report)
        assert group.state is State.WORKING and group.verdict == "working: last write 2s ago"
        assert group.commands == [] and report.blocked == []
        assert group_of(report).to_dict()["blocked"] is None


def test_only_working_groups_are_read_once_per_namespace_of_warning_events():
    fake = world(condition(TERMINATING, changed=480))
    scan(fake, ScanOptions(), clock=lambda: NOW)
    assert ("events", "team-a", "type=Warning") in fake.lists
    assert [e for e in fake.lists if e[0] == "events"] == [("events", "team-a", "type=Warning")]
    assert fake.gets == [("configmaps", "team-a", "cm")]  # not the stuck one


def test_nothing_working_reads_no_events():
    fake = world()
    fake.objects["configmaps"] = fake.objects["configmaps"][1:]
    scan(fake, ScanOptions(), clock=lambda: NOW)
    assert [e for e in fake.lists if e[0] == "events"] == [] and fake.gets == []


def test_a_namespace_that_holds_a_blocked_group_says_so():
    fake = world(condition(TERMINATING, changed=480))
    remaining = {"type": "NamespaceFinalizersRemaining", "status": "True", "message": f"{PROVIDER} in 1 resource"}
    fake.full["namespaces"] = [
        {"metadata": {"name": "team-a", "deletionTimestamp": rfc3339(NOW - 120)}, "status": {"conditions": [remaining]}}
    ]
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    assert report.namespaces[0].verdict.startswith("blocked: Terminating for 2m; blocked: the namespace")


def test_scan_exits_1_prints_the_command_after_the_warning_and_raises(monkeypatch, capsys):
    monkeypatch.setattr(
        scan_api, "run_scan", lambda *a, **k: scan(world(condition(TERMINATING)), ScanOptions(), clock=NOW.__float__)
    )
    assert main(["scan", "-n", "team-a"]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    warning = next(i for i, line in enumerate(lines) if line.strip().startswith("warning: its controller is alive"))
    assert lines[warning + 1].strip() == f"free: kubectl unfinalize configmaps cm -n team-a --finalizer {PROVIDER}"
    assert "1 stuck, 1 blocked" in err and "blocked: a controller keeps writing" in err
    report = scan(world(condition(TERMINATING)), ScanOptions(), clock=lambda: NOW)
    assert json.loads(render(report, "json"))["blocked"] == 1
    try:
        report.raise_for_failure()
    except IncompleteError as exc:
        assert f"1 configmaps held by {PROVIDER}: blocked: the namespace is being deleted" in str(exc)
    else:
        raise AssertionError("a blocked group is held")


def test_events_that_cannot_be_read_are_said_and_the_conditions_still_count():
    fake = world(condition(TERMINATING, changed=480))
    fake.forbidden.add("events")
    report = scan(fake, ScanOptions(), clock=lambda: NOW)
    assert group_of(report).state is State.BLOCKED
    assert "evidence: cannot list Warning events in namespace team-a: " in "\n".join(report.not_scanned)
