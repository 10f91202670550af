"""Objects left in a namespace another tool removed through /finalize: the API server
answers every update of them with a 404 that names the namespace, not the object. The
run must not call them gone while they stand, and must not wait for them until its
deadline: nothing can change them until the namespace exists again."""

from __future__ import annotations

from fakecluster import WIDGET_CRD, FakeCluster, run_engine

from kubectl_unfinalize.model import Action, Targets


def _orphans(bulk: bool) -> FakeCluster:
    cluster = FakeCluster(bulk=bulk)
    cluster.add_crd()
    cluster.add("w1", ["example.com/dead"], namespace="orphans")
    cluster.add("b1", ["example.com/dead"], namespace="bystander")
    cluster.removed_namespaces.add("orphans")
    return cluster


def test_an_object_whose_namespace_is_gone_is_not_called_gone(bulk):
    cluster = _orphans(bulk)
    seen = []
    report = run_engine(cluster, outcomes=seen.append)
    by_name = {o.name: o for o in seen}
    assert by_name["b1"].action is Action.UNFINALIZED
    orphan = by_name["w1"]
    assert orphan.action is Action.FAILED, orphan
    assert "namespace orphans is gone" in orphan.message
    assert "kubectl create namespace orphans" in orphan.message
    assert report.count(Action.GONE) == 0 and not report.ok
    assert cluster.stored("w1").finalizers == ["example.com/dead"]  # it stands


def test_a_crd_whose_instance_is_in_a_gone_namespace_is_named_not_waited_on(bulk):
    cluster = _orphans(bulk)
    report = run_engine(cluster, delete=True, timeout=30)
    assert not report.timed_out  # the answer will not change: not waited on until the deadline
    assert [name for verb, name in cluster.calls if verb == "patch"].count("w1") <= 2
    crd = [
        o for o in report.outcomes if o.resource.startswith("customresourcedefinition") and o.name == WIDGET_CRD.name
    ]
    assert [o.action for o in crd] == [Action.BLOCKING], crd
    assert "in a namespace that is gone" in crd[0].message
    assert report.count(Action.DELETING) == 0
    assert not report.ok


def test_a_named_object_in_a_gone_namespace_is_not_waited_on_after_its_delete():
    cluster = _orphans(False)
    ref = next(r for r in cluster.objects if r.name == "w1")
    report = run_engine(cluster, Targets(objects=[ref]), delete=True, timeout=30)
    assert not report.timed_out
    assert [name for verb, name in cluster.calls if verb == "patch"].count("w1") <= 2
    outcomes = {(o.name, o.action) for o in report.outcomes}
    assert ("w1", Action.FAILED) in outcomes and ("w1", Action.GONE) not in outcomes
    assert cluster.stored("w1").terminating  # the DELETE went through: only updates are refused
    assert not report.ok


def test_the_object_is_freed_once_its_namespace_exists_again(bulk):
    """What the failure's message tells the user to do works."""
    cluster = _orphans(bulk)
    run_engine(cluster)
    cluster.removed_namespaces.clear()  # kubectl create namespace orphans
    report = run_engine(cluster)
    assert report.ok and {o.name for o in report.outcomes if o.action is Action.UNFINALIZED} == {"w1"}
