"""Verdicts, owners and commands of scan, on plain data."""

from __future__ import annotations

from kubectl_unfinalize.scanning import commands as scan_commands
from kubectl_unfinalize.scanning import evidence
from kubectl_unfinalize.scanning.model import State
from kubectl_unfinalize.scanning.tally import NAMES, Tally, rfc3339, timestamp

NOW = 1_800_000_000.0
KOPF = "kopf.zalando.org/KopfFinalizerMarker"


def meta(name="o", namespace="ns", deleted=None, managers=(), finalizers=(KOPF,)):
    """managers: (manager, seconds ago, owns finalizers, subresource)."""
    entries = []
    for manager, ago, owns, subresource in managers:
        fields = {"f:metadata": {"f:finalizers": {}}} if owns else {"f:status": {}}
        entry = {"manager": manager, "time": rfc3339(NOW - ago), "fieldsV1": fields}
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    md = {"name": name, "namespace": namespace, "finalizers": list(finalizers), "managedFields": entries}
    if deleted is not None:
        md["deletionTimestamp"] = rfc3339(NOW - deleted)
    return md


def tally_of(*metas):
    tally = Tally()
    for md in metas:
        tally.add(md, timestamp(md.get("deletionTimestamp")))
    return tally


def test_a_write_after_the_deletion_is_a_controller_at_work():
    tally = tally_of(meta(deleted=60, managers=[("kopf", 300, True, ""), ("kopf", 4, False, "status")]))
    judged = evidence.judge(KOPF, tally, NOW, True, [], [])
    assert judged.state is State.WORKING and not judged.stuck
    assert judged.verdict == "working: last write 4s ago"
    assert "last write by kopf 4s ago, after the deletion" in judged.evidence


def test_no_write_since_long_before_the_deletion_is_stuck_for_as_long_as_nothing_was_seen():
    day = 86400
    tally = tally_of(meta(deleted=3 * day, managers=[("kopf", 4 * day, True, "")]))
    judged = evidence.judge(KOPF, tally, NOW, True, [], [])
    assert judged.state is State.STUCK and judged.stuck
    assert judged.verdict == "stuck: no controller seen for 3d"
    assert "last write by kopf 4d ago (before the deletion)" in judged.evidence


def test_an_old_write_after_the_deletion_is_not_work_in_progress():
    tally = tally_of(meta(deleted=3600, managers=[("op", 1800, True, "")]))
    judged = evidence.judge("x.example.com/f", tally, NOW, True, [], [])
    assert judged.stuck and judged.verdict == "stuck: no controller seen for 30m"


def test_just_deleted_without_evidence_is_pending_until_the_grace_ends():
    tally = tally_of(meta(deleted=5))
    assert evidence.judge("x.example.com/f", tally, NOW, True, [], []).state is State.PENDING
    tally = tally_of(meta(deleted=evidence.GRACE + 1))
    assert evidence.judge("x.example.com/f", tally, NOW, True, [], []).stuck
    assert not evidence.judge("x.example.com/f", tally, NOW, True, [], [], grace=60).stuck


def test_a_fresh_lease_means_alive_and_a_stale_one_is_named_as_evidence():
    tally = tally_of(meta(deleted=120, managers=[("widget-operator", 600, True, "")]))
    fresh = evidence.Lease("ops", "widget-operator-leader", "pod-1_abc", NOW - 3, 15)
    judged = evidence.judge("widgets.example.com/cleanup", tally, NOW, True, [fresh], [])
    assert judged.state is State.ALIVE and not judged.stuck
    assert judged.verdict.startswith("alive: Lease renewed 3s ago")
    assert "Lease ops/widget-operator-leader held by pod-1_abc, renewed 3s ago" in judged.evidence
    stale = evidence.Lease("ops", "widget-operator-leader", "pod-1_abc", NOW - 7200, 15)
    judged = evidence.judge("widgets.example.com/cleanup", tally, NOW, True, [stale], [])
    assert judged.stuck and judged.verdict == "stuck: no controller seen for 2m"  # its last write, 10m ago; deleted 2m


def test_alive_but_silent_for_too_long_is_held_and_still_alive_never_stuck():
    """The gate fails on it; scan --free never frees it (its state is not stuck)."""
    tally = tally_of(meta(deleted=evidence.ALIVE_PATIENCE + 60))
    lease = evidence.Lease("ops", "op", "me", NOW - 1, 15)
    judged = evidence.judge("a.example.com/f", tally, NOW, True, [lease], [])
    assert judged.state is State.ALIVE and judged.stuck
    assert judged.verdict == "alive: Lease renewed 1s ago, but silent here for 16m; time alone does not prove it dead"


def test_a_manager_writing_other_objects_of_the_type_after_the_deletion_is_alive():
    held = meta(deleted=300, managers=[("widget-operator", 900, True, "")])
    tally = tally_of(held)
    writers = {"widget-operator": rfc3339(NOW - 40), "kubectl-edit": rfc3339(NOW - 1)}
    elsewhere = evidence.written_elsewhere(writers, tally)
    assert elsewhere == ("widget-operator", NOW - 40)
    judged = evidence.judge("w.example.com/f", tally, NOW, True, [], [], elsewhere=elsewhere)
    assert judged.state is State.ALIVE and not judged.stuck
    assert (
        judged.verdict
        == "alive: widget-operator wrote an object of this type 40s ago; nothing written here since the deletion"
    )
    assert "widget-operator wrote an object of this type 40s ago" in judged.evidence
    # Before the deletion, or by a client (kubectl): no sign of life.
    assert evidence.written_elsewhere({"widget-operator": rfc3339(NOW - 400)}, tally) is None
    kubectl = tally_of(meta(deleted=300, managers=[("kubectl-patch", 900, True, "")]))
    assert evidence.written_elsewhere({"kubectl-patch": rfc3339(NOW - 1)}, kubectl) is None
    # Silent here past the patience, writing elsewhere within it: alive, held, never stuck.
    long_ago = tally_of(meta(deleted=evidence.ALIVE_PATIENCE + 600, managers=[("widget-operator", 7200, True, "")]))
    judged = evidence.judge("w.example.com/f", long_ago, NOW, True, [], [], elsewhere=("widget-operator", NOW - 60))
    assert judged.state is State.ALIVE and judged.stuck and "silent here for 25m" in judged.verdict
    # A write elsewhere older than the patience is no sign any more.
    old = ("widget-operator", NOW - evidence.ALIVE_PATIENCE - 1)
    assert evidence.judge("w.example.com/f", long_ago, NOW, True, [], [], elsewhere=old).state is State.STUCK


def test_kopf_peering_entries_are_liveness_evidence():
    obj = {
        "metadata": {"name": "default"},
        "status": {"host-1@42": {"priority": 0, "lifetime": 60, "lastseen": rfc3339(NOW - 5)[:-1]}},
    }
    peers = evidence.peers(obj)
    assert peers == [evidence.Peer("default", "", "host-1@42", NOW - 5, 60.0)]
    judged = evidence.judge(KOPF, tally_of(meta(deleted=100)), NOW, True, [], peers)
    assert judged.state is State.ALIVE
    assert "kopf peer host-1@42 in ClusterKopfPeering default, seen 5s ago" in judged.evidence


def test_builtin_finalizers_wait_and_are_stuck_only_after_their_patience():
    tally = tally_of(meta(deleted=60, finalizers=("kubernetes.io/pvc-protection",)))
    judged = evidence.judge("kubernetes.io/pvc-protection", tally, NOW, True, [], [])
    assert judged.state is State.BUILTIN and not judged.stuck
    assert judged.verdict.startswith("built-in: waits for no pod to use the claim")
    tally = tally_of(meta(deleted=evidence.BUILTIN_PATIENCE + 1, finalizers=("kubernetes.io/pvc-protection",)))
    assert evidence.judge("kubernetes.io/pvc-protection", tally, NOW, True, [], []).stuck


def test_a_storage_sidecars_finalizer_is_called_one_and_waits_like_a_built_in():
    attacher = "external-attacher/hostpath-csi-k8s-io"
    judged = evidence.judge(attacher, tally_of(meta(deleted=60, finalizers=(attacher,))), NOW, True, [], [])
    assert judged.state is State.BUILTIN and not judged.stuck
    assert judged.verdict == (
        "storage sidecar: waits for the volume to be detached from its node (the CSI driver's external-attacher)"
    )
    tally = tally_of(meta(deleted=evidence.BUILTIN_PATIENCE + 1, finalizers=(attacher,)))
    assert evidence.judge(attacher, tally, NOW, True, [], []).stuck


def test_objects_not_being_deleted_are_held_never_stuck():
    judged = evidence.judge(KOPF, tally_of(meta(deleted=None)), NOW, False, [], [])
    assert judged.state is State.HELD and not judged.stuck


def test_leases_match_by_manager_domain_or_crd_group():
    words = evidence.tokens("cleanup.widgets.example.com/f", ["widget-operator", "kubectl-patch"], "example.com")
    assert "widget-operator" in words and "kubectl-patch" not in words and "example.com" in words
    leases = [
        evidence.Lease("a", "widget-operator-lock", "", NOW, 15),
        evidence.Lease("b", "unrelated", "other", NOW, 15),
        evidence.Lease("kube-system", "kube-controller-manager", "kcm", NOW, 15),
    ]
    assert [lease.name for lease in evidence.matching_leases(leases, words, False)] == ["widget-operator-lock"]
    assert "kube-controller-manager" in [lease.name for lease in evidence.matching_leases(leases, set(), True)]


def test_owner_names_builtin_crd_group_apiservice_and_manager():
    tally = tally_of(meta(deleted=1, managers=[("op", 1, True, "")]))
    kind, words = evidence.owner("kubernetes.io/pvc-protection", tally, [], {})
    assert kind == "builtin" and "PVC protection controller" in words
    kind, words = evidence.owner("db.example.com/cleanup", tally, ["example.com", "other.io"], {})
    assert kind == "crd" and "CRD group example.com" in words and "field manager op" in words
    kind, words = evidence.owner("metrics.acme.io/f", tally, [], {"v1beta1.metrics.acme.io": "service a/b"})
    assert kind == "apiservice" and "APIService v1beta1.metrics.acme.io (service a/b)" in words
    kind, words = evidence.owner(KOPF, Tally(), [], {})
    assert kind == "unknown" and words == "a kopf operator"


def test_the_tally_stays_bounded():
    tally = Tally()
    for i in range(NAMES * 3):
        tally.add(meta(name=f"o{i}", namespace=f"ns{i}", deleted=10), NOW - 10)
    assert tally.count == NAMES * 3 and len(tally.names) == NAMES and len(tally.namespaces) == NAMES * 3


def test_commands():
    names = [("a", "x"), ("b", "y"), ("a", "z")]
    assert scan_commands.group_commands(KOPF, "stalls.g.io", "stalls.g.io", True, names, None) == [
        "kubectl unfinalize crd stalls.g.io --delete"
    ]
    assert scan_commands.group_commands(KOPF, "stalls.g.io", "stalls.g.io", False, names, "a") == [
        f"kubectl unfinalize crd stalls.g.io --only-terminating --finalizer {KOPF} -n a"
    ]
    assert scan_commands.group_commands("d.io/f", "configmaps", "", False, names, None) == [
        "kubectl unfinalize configmaps x z -n a --finalizer d.io/f",
        "kubectl unfinalize configmaps y -n b --finalizer d.io/f",
    ]
    builtin = scan_commands.group_commands("orphan", "stalls.g.io", "stalls.g.io", True, names, None)
    assert builtin == ["kubectl unfinalize crd stalls.g.io --delete --finalizer orphan"]
    assert scan_commands.namespace_commands("n", ["v1.x.io"]) == [
        "kubectl delete apiservice v1.x.io",
        "kubectl unfinalize ns n --delete",
    ]


def test_a_terminating_namespace_is_pending_then_stuck_with_its_reasons_or_working_with_its_contents():
    from kubectl_unfinalize.scanning import namespaces as scan_namespaces
    from kubectl_unfinalize.scanning.model import Group

    obj = {
        "metadata": {"name": "n"},
        "status": {"conditions": [{"type": "NamespaceContentRemaining", "status": "True", "message": "1 left"}]},
    }
    assert scan_namespaces.judge(obj, 5, [], [], 30).verdict == "pending: Terminating for 5s"
    stuck = scan_namespaces.judge(obj, 60, [], ["v1.x.io"], 30)
    assert stuck.stuck and stuck.verdict == (
        "stuck: Terminating for 1m; NamespaceContentRemaining; APIService v1.x.io unavailable"
    )
    assert stuck.commands == ["kubectl delete apiservice v1.x.io", "kubectl unfinalize ns n --delete"]
    working = Group(KOPF, "gadgets.g", "Gadget", "g/v1", True, 1, True, 50, "", ["n"], [], "", "unknown")
    working.verdict, working.state = "working: last write 1s ago", State.WORKING
    judged = scan_namespaces.judge(obj, 60, [working], [], 30)
    assert not judged.stuck and judged.verdict.startswith("working: Terminating for 1m; working: last write 1s ago")
    assert scan_namespaces.judge(obj, scan_namespaces.NAMESPACE_PATIENCE + 1, [working], [], 30).stuck


def test_the_python_api_refuses_bad_values_before_connecting():
    import pytest

    import kubectl_unfinalize.scanning.survey  # noqa: F401  a package named `scan` would shadow the function
    from kubectl_unfinalize import InputError, scan

    for kwargs in ({"older_than": -1}, {"grace": -1}, {"concurrency": 0}, {"kubeconfig": "x", "connection": object()}):
        with pytest.raises(InputError):
            scan(**kwargs)
