"""What scan --free (and the pytest plugin) frees from one scan (scanning/remedy.py): only stuck
deletions in scope, a built-in controller's finalizer only when named, one call per type
(per namespace when namespaces are narrowed) with every stuck finalizer of the type."""

from __future__ import annotations

from test_plugin_modes import KOPF, arguments, group

from kubectl_unfinalize import ScanReport, State, TerminatingCrd
from kubectl_unfinalize.scanning.remedy import Scope as Narrowing
from kubectl_unfinalize.scanning.remedy import plan

PVC = "kubernetes.io/pvc-protection"
EVERYTHING = Narrowing()


def calls(*groups, narrowing=EVERYTHING, grace=5.0, crds=(), settle=False):
    report = ScanReport(groups=list(groups), crds=list(crds))
    return [arguments(call) for call in plan(report, narrowing, grace, settle)]


def test_only_stuck_deletions_are_freed():
    held = [group(state=state) for state in (State.WORKING, State.ALIVE, State.PENDING, State.HELD)]
    assert calls(*held) == []
    assert calls(group(terminating=False)) == []
    assert calls(group()) == [{"crds": ["children.op.example.com"], "only_terminating": True, "finalizers": [KOPF]}]


def test_every_stuck_finalizer_of_a_type_in_one_call():
    other = group(finalizer="op.example.com/cleanup")
    assert calls(group(), other) == [
        {"crds": ["children.op.example.com"], "only_terminating": True, "finalizers": [KOPF, "op.example.com/cleanup"]}
    ]


def test_other_types_by_name_per_namespace_and_namespaces_by_name():
    maps = group("configmaps", finalizer="dead.example.com/x", namespaces=("b", "a", "b"))
    assert calls(maps) == [
        {"resource": "configmaps", "names": ["obj-1"], "namespace": "a", "only_terminating": True,
         "finalizers": ["dead.example.com/x"]},
        {"resource": "configmaps", "names": ["obj-0", "obj-2"], "namespace": "b", "only_terminating": True,
         "finalizers": ["dead.example.com/x"]},
    ]  # fmt: skip
    spaces = group("namespaces", finalizer="op.example.com/ns", namespaced=False, names=[(None, "test-1")])
    assert calls(spaces) == [{"namespaces": ["test-1"], "only_terminating": True, "finalizers": ["op.example.com/ns"]}]


def test_a_builtin_finalizer_only_when_named_and_past_the_grace():
    claim = group("persistentvolumeclaims", state=State.BUILTIN, finalizer=PVC, oldest_seconds=30.0)
    assert calls(claim) == []
    named = Narrowing(finalizers=(PVC,))
    assert calls(claim, narrowing=named)[0]["finalizers"] == [PVC]
    assert calls(claim, narrowing=named, grace=60.0) == []


def test_narrowing_by_namespace_group_and_finalizer():
    mixed = group(namespaces=("test-1", "prod", "test-2"))
    assert [c["namespace"] for c in calls(mixed, narrowing=Narrowing(namespaces=("test-*",)))] == ["test-1", "test-2"]
    assert calls(mixed, narrowing=Narrowing(namespaces=("dev-*",))) == []
    assert calls(mixed, narrowing=Narrowing(groups=("*.other.org",))) == []
    assert calls(mixed, narrowing=Narrowing(groups=("op.example.com",)))
    assert calls(mixed, narrowing=Narrowing(finalizers=("x/y",))) == []
    cluster_scoped = group("nodes2.op.example.com", namespaced=False, names=[(None, "n1")])
    assert calls(cluster_scoped, narrowing=Narrowing(namespaces=("*",))) == []  # not in any namespace
    core = group("configmaps", namespaces=("a",))  # API group ""
    assert calls(core, narrowing=Narrowing(groups=("*.example.com",))) == []


def test_at_session_start_a_terminating_crd_is_waited_on_until_gone():
    going = [TerminatingCrd("children.op.example.com", 60.0, 1, "None")]
    assert "delete" not in calls(group(), crds=going)[0]
    assert calls(group(), crds=going, settle=True) == [
        {"crds": ["children.op.example.com"], "only_terminating": True, "finalizers": [KOPF], "delete": True}
    ]
    assert calls(group(), settle=True)[0].get("delete") is None  # a CRD that stays is not deleted


def test_blocked_only_when_asked_and_excluded_namespaces_stay_untouched():
    blocked = group("configmaps", state=State.BLOCKED, finalizer="op.example.com/x", namespaces=("a",))
    assert calls(blocked) == []
    report = ScanReport(groups=[blocked])
    assert [list(c.selection.names) for c in plan(report, EVERYTHING, 5.0, include_blocked=True)] == [["obj-0"]]
    spread = group("configmaps", finalizer="dead.example.com/x", namespaces=("kube-system", "app"))
    assert [c["namespace"] for c in calls(spread, narrowing=Narrowing(exclude_namespaces=("kube-*",)))] == ["app"]
    crd = group(namespaces=("kube-system", "app"))
    assert [c["namespace"] for c in calls(crd, narrowing=Narrowing(exclude_namespaces=("kube-system",)))] == ["app"]


def test_a_scan_of_one_namespace_frees_a_crd_type_in_that_namespace_only():
    report = ScanReport(groups=[group()], namespace="ns-a")
    assert [c.namespace for c in plan(report, EVERYTHING, 5.0)] == ["ns-a"]


def test_a_stuck_terminating_crd_no_object_explains_is_deleted_as_its_command_says():
    crd = TerminatingCrd("gone.op.example.com", 60.0, 0, "Webhook", stuck=True)
    assert calls(crds=[crd]) == [{"crds": ["gone.op.example.com"], "delete": True, "only_terminating": True}]
    assert calls(crds=[crd], narrowing=Narrowing(namespaces=("test-*",))) == []


def test_a_stuck_namespace_is_deleted_and_waited_on_only_when_all_it_holds_is_freed():
    from kubectl_unfinalize import TerminatingNamespace

    ns = TerminatingNamespace("test-1", 60.0, [], [], [], stuck=True)
    dead = group("configmaps", finalizer="dead.example.com/x", namespaces=("test-1",))
    report = ScanReport(groups=[dead], namespaces=[ns])
    assert arguments(plan(report, EVERYTHING, 5.0)[-1]) == {
        "namespaces": ["test-1"], "delete": True, "only_terminating": True, "finalizers": ["dead.example.com/x"]
    }  # fmt: skip
    working = group("secrets", state=State.WORKING, finalizer="op.example.com/y", namespaces=("test-1",))
    report = ScanReport(groups=[dead, working], namespaces=[ns])
    assert [c.resource for c in plan(report, EVERYTHING, 5.0)] == ["configmaps"]
    assert plan(ScanReport(groups=[dead], namespaces=[ns]), Narrowing(exclude_namespaces=("test-*",)), 5.0) == []


def test_a_live_controller_silent_past_its_patience_is_never_freed_unattended():
    """Held (the gate fails on it) and given a command, but a sign of life means a person decides."""
    from kubectl_unfinalize import TerminatingNamespace

    silent = group(state=State.ALIVE, stuck=True, oldest_seconds=3600.0)
    assert silent.held
    assert calls(silent) == []
    assert plan(ScanReport(groups=[silent]), EVERYTHING, 5.0, include_blocked=True) == []
    assert calls(silent, narrowing=Narrowing(finalizers=(KOPF,))) == []
    ns = TerminatingNamespace("ns-a", 3600.0, [], [], [], stuck=True)
    assert plan(ScanReport(groups=[silent], namespaces=[ns]), EVERYTHING, 5.0) == []  # nor through its namespace


def _printed(command: str):
    """The Selection and Options the command line builds from a command scan printed."""
    import shlex

    from kubectl_unfinalize.cli.commands import RunCommand, parse

    words = shlex.split(command)
    assert words[:2] == ["kubectl", "unfinalize"], command
    parsed = parse(words[2:])
    assert isinstance(parsed, RunCommand), command
    return parsed.selection, parsed.options


def test_the_printed_fix_and_the_plan_free_the_same_where_they_should():
    """A CRD that stays (its objects being deleted, by the stuck finalizer) and a type's
    objects by name: what scan prints to paste and what scan --free runs select the same
    objects and remove the same finalizers. (A Terminating CRD's printed `--delete` frees
    every finalizer of it on purpose: the plan frees only the stuck one.)"""
    from kubectl_unfinalize.options import DryRun
    from kubectl_unfinalize.scanning.commands import group_commands

    staying = group(finalizer="op.example.com/cleanup", namespaces=("ns-a", "ns-b"))
    maps = group("configmaps", finalizer="dead.example.com/x", namespaces=("b", "a", "b"))
    for held in (staying, maps):
        printed = group_commands(held.finalizer, held.resource, held.crd, False, held.names, None)
        planned = plan(ScanReport(groups=[held]), EVERYTHING, 5.0)
        assert len(printed) == len(planned), (printed, planned)
        for command, call in zip(printed, planned, strict=True):
            selection, options = _printed(command)
            ran = call.options(DryRun.NONE, options.chunk_size)
            assert (selection.crds, selection.resource, selection.names) == (
                call.selection.crds,
                call.selection.resource,
                call.selection.names,
            ), command
            assert (options.finalizers, options.namespace, options.delete) == (
                ran.finalizers,
                ran.namespace,
                ran.delete,
            ), command
            assert options.only_terminating or not held.crd  # a type's objects are named: they are the held ones


def test_pods_on_a_lost_node_are_force_deleted_by_name_only_when_asked_and_in_scope():
    from kubectl_unfinalize.options import DryRun
    from kubectl_unfinalize.scanning.model import LostPod

    lost = [
        LostPod(ns, name, "node-1", 86400.0, 60.0, "why")
        for ns, name in (("b", "db-0"), ("a", "web-1"), ("a", "web-0"))
    ]
    report = ScanReport(lost_pods=lost)
    assert plan(report, EVERYTHING, 5.0) == []  # never implied
    forced = plan(report, EVERYTHING, 5.0, force_lost_pods=True)
    assert [arguments(c) for c in forced] == [
        {"resource": "pods", "names": ["web-1", "web-0"], "only_terminating": True, "namespace": "a"},
        {"resource": "pods", "names": ["db-0"], "only_terminating": True, "namespace": "b"},
    ]
    assert all(c.force_lost_pods and c.options(DryRun.NONE, 500).force_lost_pods for c in forced)
    assert [c.namespace for c in plan(report, Narrowing(exclude_namespaces=("a",)), 5.0, force_lost_pods=True)] == ["b"]
    for narrowing in (Narrowing(groups=("example.com",)), Narrowing(finalizers=(KOPF,))):  # no finalizer holds them
        assert plan(report, narrowing, 5.0, force_lost_pods=True) == []
