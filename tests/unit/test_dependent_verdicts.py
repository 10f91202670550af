"""--with-dependents frees only what scan judges a dead controller's (issue 40): a stuck
group's finalizer goes; a live controller's stays, with scan's verdict as the reason; a
Kubernetes controller's own only when --finalizer names it and past the grace; what the
scan did not see stays. A pending verdict is waited for, within the deadline."""

from __future__ import annotations

from test_plugin_modes import group

from kubectl_unfinalize import dependent_verdicts
from kubectl_unfinalize.cli.output import outcome_line
from kubectl_unfinalize.model import Action, ObjectMeta, ObjectRef, Outcome, Resource
from kubectl_unfinalize.options import Options
from kubectl_unfinalize.scanning.model import State

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
DEAD, LIVE, PVC = "dead.example.com/cleanup", "live.example.com/cleanup", "kubernetes.io/pvc-protection"


def dependent(*finalizers: str) -> ObjectMeta:
    return ObjectMeta(ObjectRef(CONFIGMAPS, "child", "shop"), "u1", "1", finalizers, True)


def groups(**states: State) -> dict:
    by_key = {}
    for finalizer, state in ((DEAD, states.get("dead")), (LIVE, states.get("live")), (PVC, states.get("pvc"))):
        if state is not None:
            judged = group("configmaps", state=state, finalizer=finalizer, oldest_seconds=60.0)
            judged.verdict = f"{state.value}: as scan said"
            by_key[("configmaps", finalizer)] = judged
    return by_key


def test_a_dead_controllers_finalizer_goes_a_live_ones_stays_with_scans_verdict():
    verdict = dependent_verdicts._verdict(dependent(DEAD, LIVE), groups(dead=State.STUCK, live=State.ALIVE), Options())
    assert verdict.free == (DEAD,) and verdict.left == f"{LIVE}: alive: as scan said"


def test_a_builtin_finalizer_only_when_named_and_what_the_scan_did_not_see_stays():
    held = dependent(PVC, DEAD)
    unnamed = dependent_verdicts._verdict(held, groups(pvc=State.BUILTIN), Options())
    assert unnamed.free == () and unnamed.left == f"{PVC}: built-in: as scan said; {DEAD}: not seen by the scan"
    named = dependent_verdicts._verdict(held, groups(pvc=State.BUILTIN), Options(finalizers=(PVC,)))
    assert named.free == (PVC,)


def test_a_pending_verdict_is_scanned_again_until_it_comes(monkeypatch):
    answers = [groups(dead=State.PENDING), groups(dead=State.PENDING), groups(dead=State.STUCK)]
    scans = []

    class Report:
        def __init__(self, by_key):
            self.groups = list(by_key.values())

    def scan(cluster, options):
        scans.append(options.namespace)
        return Report(answers[len(scans) - 1])

    class Deadline:
        def remaining(self):
            return 100.0

    monkeypatch.setattr(dependent_verdicts, "scan", scan)
    slept = []
    found = dependent_verdicts._groups(None, [dependent(DEAD)], Deadline(), slept.append)
    assert found[("configmaps", DEAD)].state is State.STUCK and scans == ["shop"] * 3 and len(slept) == 2


def test_an_owner_the_collector_deleted_is_said_gone_with_how():
    said = Outcome("keeper.example.com", "owner", Action.GONE, "shop", [], "deleted by the garbage collector")
    assert outcome_line(said) == "keeper.example.com/owner gone (namespace shop): deleted by the garbage collector"
    plain = Outcome("keeper.example.com", "owner", Action.GONE, "shop", [], "already gone")
    assert outcome_line(plain) == "keeper.example.com/owner already gone (namespace shop)"
