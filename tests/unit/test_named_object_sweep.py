"""Single objects (TYPE NAME, TYPE -l, -f documents) in the engine: --only-terminating
holds for them as it does for a CRD's instances."""

from __future__ import annotations

from fakecluster import CONFIGMAPS, FakeCluster, run_engine

from kubectl_unfinalize.model import Targets


def test_only_terminating_leaves_a_live_named_object_alone():
    cluster = FakeCluster()
    live = cluster.add("live", ["example.com/hold"], resource=CONFIGMAPS)
    going = cluster.add("going", ["example.com/hold"], resource=CONFIGMAPS)
    cluster.objects[going].terminating = True
    report = run_engine(cluster, Targets(objects=[live, going]), only_terminating=True)
    assert sorted((o.name, o.action.value) for o in report.outcomes) == [("going", "unfinalized")]
    assert cluster.objects[live].finalizers == ["example.com/hold"]
    assert ("patch", "live") not in cluster.calls


def test_only_terminating_with_delete_does_not_delete_a_live_named_object():
    cluster = FakeCluster()
    live = cluster.add("live", ["example.com/hold"], resource=CONFIGMAPS)
    report = run_engine(cluster, Targets(objects=[live]), only_terminating=True, delete=True, timeout=5)
    assert report.ok and not report.outcomes
    assert ("delete", "live") not in cluster.calls
    assert not cluster.objects[live].terminating
