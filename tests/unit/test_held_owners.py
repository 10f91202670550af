"""A run that selects an owner held by foregroundDeletion (issue 40) never ends as if it
were done: at its end the owner is read again and, while it stands, its dependents with
blockOwnerDeletion are named with what holds each and the command that frees them."""

from __future__ import annotations

from fakecluster import CONFIGMAPS, FakeCluster, run_engine

from kubectl_unfinalize.engine import owners
from kubectl_unfinalize.model import Action, ObjectMeta, ObjectRef

FOREGROUND = "foregroundDeletion"
DEAD = "dead.example.com/x"


def _owner(cluster: FakeCluster) -> ObjectRef:
    ref = cluster.add("owner", [FOREGROUND])
    cluster.objects[ref].terminating = True
    return ref


def test_an_owner_held_by_its_dependent_is_named_with_the_dependent_and_the_command():
    cluster = FakeCluster()
    owner = _owner(cluster)
    child = cluster.add("child", [DEAD], resource=CONFIGMAPS)
    cluster.objects[child].terminating = True
    cluster.objects[child].blocks = (cluster.objects[owner].uid,)
    cluster.add("bystander", [DEAD], resource=CONFIGMAPS)  # no ownerReference to the owner
    report = run_engine(cluster)
    assert not report.ok
    [held] = [o for o in report.outcomes if o.action is Action.BLOCKING]
    assert held.name == "owner" and held.finalizers == [FOREGROUND]
    assert held.message == (
        "held by foregroundDeletion: the garbage collector (kube-controller-manager) deletes it once its 1"
        " dependent with blockOwnerDeletion is gone: configmaps ns/child (finalizers dead.example.com/x);"
        " free them: kubectl unfinalize configmaps child -n ns"
    )
    assert not [n for verb, n in cluster.calls if verb == "patch"]  # named, never written


def test_an_owner_the_collector_lets_go_during_the_run_is_not_named(monkeypatch):
    monkeypatch.setattr(owners, "SETTLE", 5.0)
    cluster = FakeCluster()
    owner = _owner(cluster)
    reads = []

    def collector(verb: str, ref: ObjectRef) -> None:
        if verb == "get" and ref == owner:
            reads.append(ref)
            if len(reads) == 2:  # the garbage collector removes the finalizer, and the owner goes
                del cluster.objects[owner]

    cluster.hooks.append(collector)
    report = run_engine(cluster)
    assert report.ok and not [o for o in report.outcomes if o.action is Action.BLOCKING]


def test_an_owner_with_no_dependent_left_that_stays_names_the_garbage_collector(monkeypatch):
    monkeypatch.setattr(owners, "SETTLE", 0.2)
    cluster = FakeCluster()
    _owner(cluster)
    report = run_engine(cluster)
    [held] = [o for o in report.outcomes if o.action is Action.BLOCKING]
    assert "no dependent left that blocks it" in held.message and "is the garbage collector running?" in held.message


def test_blocking_references_are_read_from_the_metadata():
    meta = ObjectMeta.from_dict(
        CONFIGMAPS,
        {
            "metadata": {
                "name": "c",
                "uid": "u",
                "ownerReferences": [
                    {"uid": "a", "blockOwnerDeletion": True},
                    {"uid": "b", "blockOwnerDeletion": False},
                    {"uid": "c"},
                ],
            }
        },
    )
    assert meta.blocks == ("a",)
    assert ObjectMeta.from_dict(CONFIGMAPS, {"metadata": {"name": "d"}}).blocks == ()


def test_an_owner_held_by_orphan_that_stays_names_the_garbage_collector_and_its_dependents_are_left(monkeypatch):
    monkeypatch.setattr(owners, "SETTLE", 0.2)
    cluster = FakeCluster()
    owner = cluster.add("owner", ["orphan"])
    cluster.objects[owner].terminating = True
    child = cluster.add("child", [DEAD], resource=CONFIGMAPS)
    cluster.objects[child].blocks = (cluster.objects[owner].uid,)
    report = run_engine(cluster)
    [held] = [o for o in report.outcomes if o.action is Action.BLOCKING]
    assert held.name == "owner" and held.finalizers == ["orphan"], held
    assert held.message.startswith("held by orphan (deleted with propagationPolicy=Orphan): the garbage collector")
    assert "is the garbage collector running" in held.message
    owner_meta = cluster.get_meta(owner)
    assert owners.dependents_of(cluster, [owner_meta]) == []  # an orphaned owner's dependents are kept, not freed
