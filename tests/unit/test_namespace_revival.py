"""Objects left in a namespace another tool removed through /finalize: the API server
answers every update of them with a 404 that names the namespace, not the object. The run
frees them the one way the API allows (the namespace created again, labelled as this
tool's, their finalizers removed, the namespace deleted again and seen gone); where it
cannot, it says why, never calls them gone, and does not wait for them until its deadline."""

from __future__ import annotations

from fakecluster import CONFIGMAPS, WIDGET_CRD, FakeCluster

from kubectl_unfinalize.deadline import Deadline
from kubectl_unfinalize.engine import Engine
from kubectl_unfinalize.errors import Forbidden
from kubectl_unfinalize.model import CRD_RESOURCE, NAMESPACE_RESOURCE, Action, ObjectRef, Report, Targets
from kubectl_unfinalize.options import Options

DEAD = "example.com/dead"
GONE_NS = ObjectRef(NAMESPACE_RESOURCE, "orphans")


def _orphans(bulk: bool = False) -> FakeCluster:
    cluster = FakeCluster(bulk=bulk)
    cluster.add_crd()
    cluster.add("w1", [DEAD], namespace="orphans")
    cluster.add("b1", [DEAD], namespace="bystander")
    cluster.removed_namespaces.add("orphans")
    return cluster


def _run(cluster: FakeCluster, targets: Targets | None = None, **options) -> tuple[Report, list[str]]:
    warnings: list[str] = []
    opts = Options(settle=0, poll=0.01, **options)
    engine = Engine(cluster, opts, Deadline(opts.deadline_seconds), on_warning=warnings.append)
    return engine.run(targets or Targets(crds=[WIDGET_CRD])), warnings


def _refuse_creates(cluster: FakeCluster) -> None:
    def refuse(verb, ref):
        if verb == "create":
            raise Forbidden(403, "Forbidden", 'namespaces is forbidden: cannot create resource "namespaces"')

    cluster.hooks.append(refuse)


def test_the_namespace_is_created_again_to_free_them_then_deleted_and_seen_gone(bulk):
    cluster = _orphans(bulk)
    report, warnings = _run(cluster)
    by_name = {o.name: o for o in report.outcomes}
    assert by_name["w1"].action is Action.UNFINALIZED and by_name["b1"].action is Action.UNFINALIZED
    [created] = cluster.created
    assert created["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kubectl-unfinalize"}
    assert created["metadata"]["annotations"]["kubectl-unfinalize/recreated"]
    assert by_name["orphans"].action is Action.DELETED and "gone" in by_name["orphans"].message
    assert GONE_NS not in cluster.objects and cluster.stored("w1") is None  # read: both gone
    assert cluster.stored("b1") is not None  # the bystander's namespace exists: left as it is
    assert report.ok and report.count(Action.GONE) == 0
    assert [w for w in warnings if "namespace orphans" in w and "created it again" in w]


def test_a_namespace_that_exists_is_never_created(bulk):
    cluster = _orphans(bulk)
    cluster.removed_namespaces.clear()
    report, _ = _run(cluster)
    assert report.ok and cluster.created == [] and ("create", "orphans") not in cluster.calls


def test_without_the_right_to_create_it_the_object_fails_saying_why_and_is_not_called_gone(bulk):
    cluster = _orphans(bulk)
    _refuse_creates(cluster)
    report, _ = _run(cluster)
    orphan = next(o for o in report.outcomes if o.name == "w1")
    assert orphan.action is Action.FAILED, orphan
    assert "namespace orphans is gone" in orphan.message and 'cannot create resource "namespaces"' in orphan.message
    assert report.count(Action.GONE) == 0 and not report.ok
    assert cluster.stored("w1").finalizers == [DEAD]  # it stands


def test_a_crd_held_by_an_instance_that_cannot_be_freed_so_is_named_not_waited_on(bulk):
    cluster = _orphans(bulk)
    _refuse_creates(cluster)
    report, _ = _run(cluster, delete=True, timeout=30)
    assert not report.timed_out  # the answer will not change: not waited on until the deadline
    assert [name for verb, name in cluster.calls if verb == "patch"].count("w1") <= 2
    crd = [o for o in report.outcomes if o.resource.startswith("customresourcedefinition")]
    assert [o.action for o in crd] == [Action.BLOCKING], crd
    assert "in a namespace that is gone" in crd[0].message
    assert report.count(Action.DELETING) == 0 and not report.ok


def test_crd_delete_ends_with_the_crd_and_the_namespace_gone(bulk):
    cluster = _orphans(bulk)
    report, _ = _run(cluster, delete=True, timeout=30)
    assert report.ok, [(o.name, o.action, o.message) for o in report.outcomes]
    assert cluster.stored(WIDGET_CRD.name, CRD_RESOURCE) is None  # the CRD is gone
    assert GONE_NS not in cluster.objects


def test_a_server_dry_run_creates_nothing_and_says_what_a_run_would_create():
    cluster = _orphans()
    report, warnings = _run(cluster, dry_run="server")
    assert cluster.created == [] and "orphans" in cluster.removed_namespaces
    orphan = next(o for o in report.outcomes if o.name == "w1")
    assert orphan.action is Action.UNFINALIZED and orphan.dry_run.value == "server"
    assert [w for w in warnings if "namespace orphans is gone" in w and "without --dry-run creates it again" in w]


def test_a_named_object_in_a_gone_namespace_is_freed_after_its_delete():
    cluster = _orphans()
    ref = next(r for r in cluster.objects if r.name == "w1")
    report, _ = _run(cluster, Targets(objects=[ref]), delete=True, timeout=30)
    assert report.ok and cluster.stored("w1") is None and GONE_NS not in cluster.objects


def test_the_run_counts_the_namespace_it_creates_against_max_objects():
    cluster = _orphans()
    ref = next(r for r in cluster.objects if r.name == "w1")
    report, _ = _run(cluster, Targets(objects=[ref]), max_objects=1)
    orphan = next(o for o in report.outcomes if o.name == "w1")
    assert orphan.action is Action.FAILED and "max-objects" in orphan.message, orphan
    assert cluster.created == []  # the cap stood before the create: nothing to delete again


def test_ns_names_a_gone_namespace_whose_objects_are_freed_and_the_namespace_seen_gone(bulk):
    cluster = _orphans(bulk)
    report, _ = _run(cluster, Targets(namespaces=["orphans"]), delete=True, timeout=30)
    assert report.ok, [(o.name, o.action, o.message) for o in report.outcomes]
    assert cluster.stored("w1") is None and GONE_NS not in cluster.objects
    assert cluster.stored("b1").finalizers == [DEAD]  # another namespace's: not selected
    assert report.count(Action.GONE) == 0


def test_with_delete_a_gone_namespace_holding_objects_without_finalizers_is_created_again_to_delete_them():
    cluster = FakeCluster()
    cluster.add("plain", [], namespace="orphans", resource=CONFIGMAPS)
    cluster.removed_namespaces.add("orphans")
    report, _ = _run(cluster, Targets(namespaces=["orphans"]), delete=True, timeout=30)
    assert report.ok and len(cluster.created) == 1
    assert cluster.stored("plain", CONFIGMAPS) is None and GONE_NS not in cluster.objects


def test_what_else_was_left_in_the_namespace_is_freed_so_that_it_goes(bulk):
    """The namespace this run created is its own to remove: what else holds it (outside the
    selection, left there when it was removed) is freed as ns NAME --delete frees it."""
    cluster = _orphans(bulk)
    cluster.add("beside", [DEAD], namespace="orphans", resource=CONFIGMAPS)
    report, _ = _run(cluster)
    assert report.ok, [(o.name, o.action, o.message) for o in report.outcomes]
    assert GONE_NS not in cluster.objects and cluster.stored("beside", CONFIGMAPS) is None


def test_with_a_finalizer_named_what_else_holds_the_namespace_is_left_and_named():
    cluster = _orphans()
    cluster.add("beside", ["other.example.com/keep"], namespace="orphans", resource=CONFIGMAPS)
    report, _ = _run(cluster, finalizers=(DEAD,), timeout=1)
    line = next(o for o in report.outcomes if o.name == "orphans")
    assert line.action is Action.BLOCKING and "kubectl unfinalize ns orphans --delete" in line.message, line
    assert cluster.stored("beside", CONFIGMAPS).finalizers == ["other.example.com/keep"]
